// Sizes the diagrams the server drew (inline SVG) and follows a live run: the server pushes the run's position
// (server-sent events), and the page swaps in the freshly rendered run section when it moves.
// The live stream is closed once the run rests, so tools that wait for "network idle" see the page settle.
(function () {
  // A large diagram (a team of agents) fitted to its box would shrink its 12 px labels out of reading: it is never
  // drawn smaller than this (labels stay at 11 px or more), and the box scrolls instead; the buttons zoom.
  const READABLE = 0.92;

  function natural(svg) {
    const box = svg.viewBox && svg.viewBox.baseVal;
    return box && box.width ? box.width : svg.getBoundingClientRect().width;
  }

  function scale(svg, factor) {
    svg.style.maxWidth = "none";
    svg.style.width = natural(svg) * factor + "px";
    svg.style.height = "auto";
    svg.dataset.scale = String(factor);
  }

  function readable(svg, kept) {
    const box = svg.closest(".diagram-box");
    const room = box ? box.clientWidth - 16 : svg.getBoundingClientRect().width;
    const fit = Math.min(1, room / natural(svg));
    scale(svg, kept || Math.max(fit, READABLE));
    if (!box || box.querySelector(".diagram-tools")) return;
    const tools = document.createElement("p");
    tools.className = "diagram-tools";
    [["−", 1 / 1.25], ["+", 1.25], ["fit", 0]].forEach(function (b) {
      const button = document.createElement("button");
      button.type = "button";
      button.textContent = b[0];
      button.setAttribute("aria-label", b[0] === "fit" ? "fit the diagram to the box" : "zoom " + (b[1] > 1 ? "in" : "out"));
      button.addEventListener("click", function () {
        const drawn = box.querySelector("svg.statechart");
        const now = Number(drawn.dataset.scale) || 1;
        scale(drawn, b[1] ? Math.min(3, Math.max(0.2, now * b[1])) : Math.min(1, (box.clientWidth - 16) / natural(drawn)));
        drawn.dataset.zoomed = "1";
      });
      tools.appendChild(button);
    });
    box.insertBefore(tools, box.firstChild);
  }

  // The mark pages and tests wait for: every diagram on the page sized to be read.
  function draw(kept) {
    document.querySelectorAll(".diagram-box svg.statechart").forEach(function (svg) { readable(svg, kept); });
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
          const drawn = current.querySelector("svg.statechart[data-zoomed]");
          current.replaceWith(fresh);
          if (focusKey) {
            const again = find(fresh, focusKey);
            if (again) again.focus({ preventScroll: true });
          }
          draw(drawn ? Number(drawn.dataset.scale) : 0);  // a zoom the reader chose is kept
          const box = fresh.querySelector(".diagram-box");
          if (box && scroll) { box.scrollLeft = scroll[0]; box.scrollTop = scroll[1]; }
        }
      }
    };
  }

  draw(0);
  follow();
})();
