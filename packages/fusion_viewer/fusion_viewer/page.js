// The fusion report page's script (inlined into the page by html.py).
//
// * Filters and search: the kernel rows (class kernel-row) and boundary rows
//   (class boundary) carry data-reasons / data-reason, data-categories /
//   data-category, data-kinds and data-search (lower-case op names, kernel
//   names, targets and source locations).  The state lives in the URL's
//   hash, so a filtered view can be linked and opened headless:
//     page.html#filter=reason:extern_kernel,kind:cpp&q=relu_3
//     page.html#reason=extern_kernel&q=resnet.py:268
//   A query ending in ":<line>" matches source locations that end with it;
//   any other query matches names that contain it.
// * Other keys of the hash: pictures=open opens the graph pictures,
//   expand=all opens every folded block; a plain "#id" opens the blocks that
//   hold that element and scrolls to it.
// * The page records its own width on <html> (data-scroll-width,
//   data-client-width) after every change, so tests can check that nothing
//   overflows the window.
(function () {
  "use strict";
  var root = document.documentElement;
  var FIELDS = ["reason", "category", "kind", "q"];
  var state = {reason: "", category: "", kind: "", q: ""};

  function parseParams(text) {
    var out = {};
    text.split("&").forEach(function (kv) {
      var i = kv.indexOf("=");
      if (i <= 0) { return; }
      var key = decodeURIComponent(kv.slice(0, i));
      var value = decodeURIComponent(kv.slice(i + 1).replace(/\+/g, " "));
      if (key === "filter") {
        value.split(",").forEach(function (fv) {
          var j = fv.indexOf(":");
          if (j > 0) { out[fv.slice(0, j)] = fv.slice(j + 1); }
        });
      } else {
        out[key === "search" ? "q" : key] = value;
      }
    });
    return out;
  }

  function hashText() {
    try { return decodeURIComponent(location.hash.slice(1)); }
    catch (e) { return location.hash.slice(1); }
  }

  function isParams(text) { return /^[a-z]+=/.test(text); }

  function words(el, name) {
    var v = el.getAttribute(name);
    return v ? v.split(" ") : [];
  }

  function matches(el, q, byLine) {
    if (state.reason && words(el, "data-reasons").concat(words(el, "data-reason"))
        .indexOf(state.reason) < 0) { return false; }
    if (state.category && words(el, "data-categories")
        .concat(words(el, "data-category")).indexOf(state.category) < 0) {
      return false;
    }
    if (state.kind && words(el, "data-kinds").indexOf(state.kind) < 0) { return false; }
    if (!q) { return true; }
    return words(el, "data-search").some(function (t) {
      if (!byLine) { return t.indexOf(q) >= 0; }
      // "resnet.py:268" matches ".../resnet.py:268", not "myresnet.py:268"
      // nor "resnet.py:2680".
      if (t.length < q.length || t.slice(t.length - q.length) !== q) { return false; }
      return t.length === q.length || t.charAt(t.length - q.length - 1) === "/";
    });
  }

  function apply() {
    var q = (state.q || "").trim().toLowerCase();
    var byLine = /:\d+$/.test(q);
    var active = !!(state.reason || state.category || state.kind || q);
    var total = {kernels: 0, kernelsShown: 0, boundaries: 0, boundariesShown: 0};
    document.querySelectorAll("tr.kernel-row, tr.boundary").forEach(function (row) {
      var ok = matches(row, q, byLine);
      row.hidden = !ok;
      var kernel = row.classList.contains("kernel-row");
      total[kernel ? "kernels" : "boundaries"] += 1;
      if (ok) { total[kernel ? "kernelsShown" : "boundariesShown"] += 1; }
    });
    document.querySelectorAll("table.kernels, table.boundaries").forEach(function (t) {
      var rows = t.querySelectorAll("tbody > tr.kernel-row, tbody > tr.boundary");
      var shown = 0;
      rows.forEach(function (r) { shown += r.hidden ? 0 : 1; });
      var status = t.parentElement.querySelector(".table-status");
      if (status) {
        status.textContent = active ? shown + " of " + rows.length + " shown" : "";
      }
      // A filter opens the boundary lists it leaves rows in.
      var box = t.closest("details.boundary-list");
      if (box && active && shown) { box.open = true; }
    });
    document.body.setAttribute("data-filter", active ? FIELDS.map(function (f) {
      return f + ":" + (state[f] || "");
    }).join(",") : "");
    document.body.setAttribute("data-kernels-shown", total.kernelsShown);
    document.body.setAttribute("data-boundaries-shown", total.boundariesShown);
    var status = document.getElementById("filter-status");
    if (status) {
      status.textContent = active
        ? "showing " + total.kernelsShown + " of " + total.kernels + " kernels, " +
          total.boundariesShown + " of " + total.boundaries + " boundaries"
        : total.kernels + " kernels, " + total.boundaries + " boundaries";
    }
    FIELDS.forEach(function (f) {
      var input = document.getElementById("filter-" + f);
      if (input && input.value !== state[f]) { input.value = state[f]; }
    });
    measure();
  }

  function measure() {
    root.setAttribute("data-scroll-width", root.scrollWidth);
    root.setAttribute("data-client-width", root.clientWidth);
    root.setAttribute("data-scroll-y", Math.round(window.scrollY));
  }

  function stateHash() {
    var filters = ["reason", "category", "kind"].filter(function (f) {
      return state[f];
    }).map(function (f) { return f + ":" + state[f]; });
    var parts = [];
    if (filters.length) { parts.push("filter=" + filters.join(",")); }
    if (state.q) { parts.push("q=" + encodeURIComponent(state.q)); }
    return parts.join("&");
  }

  function openTarget(id) {
    var el = id && document.getElementById(id);
    if (!el) { return; }
    if (el.closest("[hidden]")) {
      // The target is filtered out: show everything again.
      FIELDS.forEach(function (f) { state[f] = ""; });
      apply();
    }
    for (var p = el; p; p = p.parentElement) {
      if (p.tagName === "DETAILS") { p.open = true; }
    }
    el.scrollIntoView({block: el.offsetHeight > innerHeight / 2 ? "start" : "center"});
    measure();
  }

  function fromUrl() {
    var text = hashText();
    var params = parseParams(location.search.slice(1));
    if (isParams(text)) {
      var more = parseParams(text);
      for (var k in more) { params[k] = more[k]; }
    }
    var filtered = FIELDS.some(function (f) { return f in params; });
    if (filtered) {
      FIELDS.forEach(function (f) { state[f] = params[f] || ""; });
    }
    if (params.pictures === "open" || params.expand === "all") {
      var sel = params.expand === "all" ? "details" : "details.picture-box";
      document.querySelectorAll(sel).forEach(function (d) { d.open = true; });
    }
    apply();
    if (text && !isParams(text)) { openTarget(text); }
  }

  FIELDS.forEach(function (f) {
    var input = document.getElementById("filter-" + f);
    if (!input) { return; }
    input.addEventListener("input", function () {
      state[f] = input.value;
      apply();
      history.replaceState(null, "", "#" + stateHash());
    });
  });
  var clear = document.getElementById("filter-clear");
  if (clear) {
    clear.addEventListener("click", function () {
      FIELDS.forEach(function (f) { state[f] = ""; });
      apply();
      history.replaceState(null, "", location.pathname + location.search);
    });
  }
  window.addEventListener("hashchange", fromUrl);
  document.querySelectorAll("details").forEach(function (d) {
    d.addEventListener("toggle", measure);
  });

  // dot may put a wide picture's first ops anywhere along the top: when no
  // node is in view, scroll to the topmost one rather than show the empty
  // top-left corner.  Done when the picture is first opened.
  function centre(pic) {
    if (pic.scrollWidth <= pic.clientWidth) { return; }
    var top = null, seen = false, box = pic.getBoundingClientRect();
    pic.querySelectorAll("g.node").forEach(function (node) {
      var r = node.getBoundingClientRect();
      seen = seen || (r.left < box.right && r.right > box.left &&
                      r.top < box.bottom && r.bottom > box.top);
      if (top === null || r.top < top.top - 1) { top = r; }
    });
    if (!seen && top !== null) {
      pic.scrollLeft += top.left - box.left - (pic.clientWidth - top.width) / 2;
    }
  }
  document.querySelectorAll(".picture").forEach(function (pic) {
    pic.addEventListener("dblclick", function () { pic.classList.toggle("fit"); });
    var box = pic.closest("details");
    if (box) {
      box.addEventListener("toggle", function () { if (box.open) { centre(pic); } });
    }
    centre(pic);
  });
  fromUrl();
})();
