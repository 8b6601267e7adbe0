// Draws Mermaid diagrams and follows a live run: the server pushes the run's position (server-sent events),
// and the page swaps in the freshly rendered run section when it moves.
// Mermaid is loaded only on pages that draw a diagram (a dynamic import of its module build); the live stream is closed once the run rests, so tools that
// wait for "network idle" see the page settle.
(function () {
  // The ES module build: its core and only the chunks a state diagram needs load (about a third of the 3.5 MB
  // single-file bundle), and each is cached for a week, shared by every diagram page.
  const MERMAID = "/static/vendor/mermaid/mermaid.esm.min.mjs";
  let mermaid = null;

  async function loadMermaid() {
    if (!mermaid) {
      mermaid = (await import(MERMAID)).default;
      mermaid.initialize({ startOnLoad: false, securityLevel: "strict", theme: "default", flowchart: { htmlLabels: false } });
    }
    return mermaid;
  }

  // Fitted to its box, a large diagram (a team of agents) shrank to a third, its labels about 5 px: it is never drawn
  // smaller than this, and the box scrolls instead; the buttons zoom.
  const READABLE = 0.75;

  function natural(svg) {
    const box = svg.viewBox && svg.viewBox.baseVal;
    return box && box.width ? box.width : svg.getBoundingClientRect().width;
  }

  function scale(svg, factor) {
    const width = natural(svg) * factor;
    svg.style.maxWidth = "none";
    svg.style.width = width + "px";
    svg.style.height = "auto";
    svg.dataset.scale = String(factor);
  }

  function readable(svg) {
    const box = svg.closest(".diagram-box");
    const room = box ? box.clientWidth - 16 : svg.getBoundingClientRect().width;
    const fit = Math.min(1, room / natural(svg));
    scale(svg, Math.max(fit, READABLE));
    if (!box || box.querySelector(".diagram-tools")) return;
    const tools = document.createElement("p");
    tools.className = "diagram-tools";
    [["−", 1 / 1.25], ["+", 1.25], ["fit", 0]].forEach(function (b) {
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = b[0];
      button.setAttribute("aria-label", b[0] === "fit" ? "fit the diagram to the box" : "zoom " + (b[1] > 1 ? "in" : "out"));
      button.addEventListener("click", function () {
        const now = Number(svg.dataset.scale) || 1;
        scale(svg, b[1] ? Math.min(3, Math.max(0.2, now * b[1])) : Math.min(1, (box.clientWidth - 16) / natural(svg)));
      });
      tools.appendChild(button);
    });
    box.insertBefore(tools, box.firstChild);
  }

  async function draw() {
    document.body.dataset.diagrams = "drawing";
    const nodes = document.querySelectorAll("pre.mermaid:not([data-processed])");
    if (nodes.length) {
      await (await loadMermaid()).run({ nodes: nodes });
      nodes.forEach(function (pre) { const svg = pre.querySelector("svg"); if (svg) readable(svg); });
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
