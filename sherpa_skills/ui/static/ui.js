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

  // What a person has open, typed or focused in the run section: carried over to the fresh copy, so a live update
  // never closes the log entry being read or drops the keyboard focus.
  function keyOf(el) {
    if (el.dataset && el.dataset.key) return "[data-key=\"" + CSS.escape(el.dataset.key) + "\"]";
    if (el.id) return "#" + CSS.escape(el.id);
    const form = el.closest("form");
    if (el.name && form) return "form[action=\"" + CSS.escape(form.getAttribute("action")) + "\"] [name=\"" + CSS.escape(el.name) + "\"]";
    if (el.tagName === "A" && el.getAttribute("href")) {
      const same = el.closest("section").querySelectorAll("a[href=\"" + CSS.escape(el.getAttribute("href")) + "\"]");
      return "a[href=\"" + CSS.escape(el.getAttribute("href")) + "\"]@" + Array.prototype.indexOf.call(same, el);
    }
    return null;
  }

  function find(root, key) {
    const at = key.lastIndexOf("@");
    if (key.startsWith("a[href=") && at > 0) return root.querySelectorAll(key.slice(0, at))[Number(key.slice(at + 1))] || null;
    return root.querySelector(key);
  }

  function carryOver(current, fresh) {
    current.querySelectorAll("details[open][data-key]").forEach(function (d) {
      const twin = find(fresh, keyOf(d));
      if (twin) twin.open = true;
    });
    current.querySelectorAll("textarea[name], input[name]:not([type=hidden]), select[name]").forEach(function (field) {
      const key = keyOf(field);
      const twin = key && find(fresh, key);
      if (twin && twin.value !== field.value) twin.value = field.value;
    });
    const focused = document.activeElement;
    const focusKey = focused && current.contains(focused) ? keyOf(focused) : null;
    return focusKey;
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
          const focusKey = carryOver(current, fresh);
          const diagram = current.querySelector(".diagram-box");
          const scroll = diagram ? [diagram.scrollLeft, diagram.scrollTop] : null;
          current.replaceWith(fresh);
          if (focusKey) {
            const again = find(fresh, focusKey);
            if (again) again.focus({ preventScroll: true });
          }
          await draw();
          const box = fresh.querySelector(".diagram-box");
          if (box && scroll) { box.scrollLeft = scroll[0]; box.scrollTop = scroll[1]; }
        }
      }
    };
  }

  draw().then(follow);
})();
