// Draws Mermaid diagrams and follows a live run: the server pushes the run's position (server-sent events),
// and the page swaps in the freshly rendered run section when it moves.
// Mermaid is loaded only on pages that draw a diagram; the live stream is closed once the run rests, so tools that
// wait for "network idle" see the page settle.
(function () {
  const drawing = typeof mermaid !== "undefined";
  if (drawing) {
    mermaid.initialize({ startOnLoad: false, securityLevel: "strict", theme: "default", flowchart: { htmlLabels: false } });
  }

  async function draw() {
    document.body.dataset.diagrams = "drawing";
    const nodes = document.querySelectorAll("pre.mermaid:not([data-processed])");
    if (nodes.length && drawing) {
      await mermaid.run({ nodes: nodes });
    }
    document.body.dataset.diagrams = "drawn";
  }

  function follow() {
    const section = document.getElementById("run");
    if (!section || !section.dataset.liveUrl) return;
    const source = new EventSource(section.dataset.liveUrl);
    window.addEventListener("pagehide", function () { source.close(); });
    // The server ends the stream when the run rests: without this the browser would reconnect forever.
    source.onerror = function () { if (source.readyState !== EventSource.OPEN) source.close(); };
    source.onmessage = async function (message) {
      const state = JSON.parse(message.data);
      if (state.status !== "running" && state.status !== "waiting") source.close();
      const current = document.getElementById("run");
      if (String(state.tick) !== current.dataset.tick || String(state.updated) !== current.dataset.updated) {
        const html = await (await fetch(location.pathname + location.search, { headers: { Accept: "text/html" } })).text();
        const fresh = new DOMParser().parseFromString(html, "text/html").getElementById("run");
        if (fresh) {
          current.replaceWith(fresh);
          await draw();
        }
      }
    };
  }

  draw().then(follow);
})();
