// Draws Mermaid diagrams and follows a live run: the server pushes the run's position (server-sent events),
// and the page swaps in the freshly rendered run section when it moves.
(function () {
  mermaid.initialize({ startOnLoad: false, securityLevel: "strict", theme: "default", flowchart: { htmlLabels: false } });

  async function draw() {
    document.body.dataset.diagrams = "drawing";
    const nodes = document.querySelectorAll("pre.mermaid:not([data-processed])");
    if (nodes.length) {
      await mermaid.run({ nodes: nodes });
    }
    document.body.dataset.diagrams = "drawn";
  }

  function follow() {
    const section = document.getElementById("run");
    if (!section || !section.dataset.liveUrl) return;
    const source = new EventSource(section.dataset.liveUrl);
    source.onmessage = async function (message) {
      const state = JSON.parse(message.data);
      const current = document.getElementById("run");
      if (String(state.tick) !== current.dataset.tick || String(state.updated) !== current.dataset.updated) {
        const html = await (await fetch(location.pathname + location.search, { headers: { Accept: "text/html" } })).text();
        const fresh = new DOMParser().parseFromString(html, "text/html").getElementById("run");
        if (fresh) {
          current.replaceWith(fresh);
          await draw();
        }
      }
      if (state.status !== "running" && state.status !== "waiting") source.close();
    };
  }

  draw().then(follow);
})();
