// vprof HTML report: draws the page from the JSON in #vprof-data (embedded by
// render_html.cpp). No network, no libraries: DOM and inline SVG only.
(function () {
  "use strict";
  var data = JSON.parse(document.getElementById("vprof-data").textContent);
  var SVGNS = "http://www.w3.org/2000/svg";
  var ROW = 18; // flame-graph row height, px

  function el(tag, attrs, children) {
    var e = document.createElement(tag);
    for (var k in attrs || {}) {
      if (k === "text") e.textContent = attrs[k];
      else if (k === "class") e.className = attrs[k];
      else e.setAttribute(k, attrs[k]);
    }
    (children || []).forEach(function (c) { if (c) e.appendChild(c); });
    return e;
  }
  function svg(tag, attrs) {
    var e = document.createElementNS(SVGNS, tag);
    for (var k in attrs || {}) e.setAttribute(k, attrs[k]);
    return e;
  }
  function pct(x) { return (100 * x).toFixed(1) + "%"; }
  function ns(x) {
    var a = Math.abs(x);
    if (a < 1e3) return x.toFixed(0) + "ns";
    if (a < 1e6) return (x / 1e3).toFixed(2) + "us";
    if (a < 1e9) return (x / 1e6).toFixed(2) + "ms";
    return (x / 1e9).toFixed(3) + "s";
  }

  // ---- tables: click a header to sort by its column (numbers by value) ----
  function table(columns, rows) {
    var t = el("table");
    var head = el("tr");
    columns.forEach(function (c, i) {
      var th = el("th", { text: c.title, class: c.name ? "name" : "", title: c.help || "" });
      th.addEventListener("click", function () { sortBy(t, i, th); });
      head.appendChild(th);
    });
    t.appendChild(el("thead", {}, [head]));
    var body = el("tbody");
    rows.forEach(function (r) {
      var tr = el("tr");
      columns.forEach(function (c) {
        var v = c.value(r);
        var td = el("td", { class: (c.name ? "name" : "") + (typeof v === "number" && v < 0 ? " neg" : "") });
        td.setAttribute("data-v", typeof v === "number" ? v : String(v));
        if (c.render) c.render(td, r); else td.textContent = c.format ? c.format(v) : v;
        tr.appendChild(td);
      });
      body.appendChild(tr);
    });
    t.appendChild(body);
    return t;
  }
  // Rows below the noise floor (after the first three) are hidden behind one row that
  // expands them on click: the table reads as the few places that matter.
  function foldNoise(t, rows, floor) {
    var hidden = [];
    Array.prototype.forEach.call(t.tBodies[0].rows, function (tr, i) {
      if (i >= 3 && rows[i] && rows[i].noise) { tr.style.display = "none"; hidden.push(tr); }
    });
    if (!hidden.length) return;
    var more = el("tr", { class: "fold" }, [el("td", { colspan: String(t.tHead.rows[0].cells.length),
      text: "\u25b8 " + hidden.length + " more below the noise floor (" + pct(floor) + " of Var(L)): click to show" })]);
    var foot = el("tfoot", {}, [more]);
    more.addEventListener("click", function () {
      hidden.forEach(function (tr) { tr.style.display = ""; });
      foot.remove();
    });
    t.appendChild(foot);
  }
  function sortBy(t, col, th) {
    var desc = !th.classList.contains("sorted-desc");
    Array.prototype.forEach.call(t.querySelectorAll("th"), function (h) { h.classList.remove("sorted-desc", "sorted-asc"); });
    th.classList.add(desc ? "sorted-desc" : "sorted-asc");
    var body = t.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    rows.sort(function (a, b) {
      var x = a.cells[col].getAttribute("data-v"), y = b.cells[col].getAttribute("data-v");
      var nx = parseFloat(x), ny = parseFloat(y);
      var c = (!isNaN(nx) && !isNaN(ny)) ? nx - ny : x.localeCompare(y);
      return desc ? -c : c;
    });
    rows.forEach(function (r) { body.appendChild(r); });
  }

  // ---- latency histogram: log-scale bins, p50/p95/p99 marked ----
  function histogram(g) {
    var h = g.histogram, W = 640, H = 150, pad = 28;
    var box = svg("svg", { viewBox: "0 0 " + W + " " + (H + pad), width: W, height: H + pad, class: "hist" });
    if (!h.counts || !h.counts.length) return box;
    var max = Math.max.apply(null, h.counts), n = h.counts.length, bw = (W - 2 * pad) / n;
    var span = Math.log(h.hi_ns / h.lo_ns);
    function x(v) { return pad + (W - 2 * pad) * Math.log(Math.max(v, h.lo_ns) / h.lo_ns) / span; }
    h.counts.forEach(function (c, i) {
      var bh = max ? (H - 20) * c / max : 0;
      var r = svg("rect", { x: pad + i * bw, y: H - bh, width: Math.max(bw - 1, 1), height: bh, class: "bar" });
      var lo = h.lo_ns * Math.exp(span * i / n), hi = h.lo_ns * Math.exp(span * (i + 1) / n);
      var tip = svg("title"); tip.textContent = ns(lo) + " to " + ns(hi) + ": " + c + " intervals";
      r.appendChild(tip); box.appendChild(r);
    });
    [["p50", g.latency.p50_ns], ["p95", g.latency.p95_ns], ["p99", g.latency.p99_ns]].forEach(function (m, i) {
      var px = x(m[1]);
      box.appendChild(svg("line", { x1: px, x2: px, y1: 8, y2: H, class: "mark" }));
      var t = svg("text", { x: px + 3, y: 16 + 12 * i }); t.textContent = m[0] + " " + ns(m[1]);
      box.appendChild(t);
    });
    for (var i = 0; i <= 4; ++i) {
      var v = h.lo_ns * Math.exp(span * i / 4);
      var t = svg("text", { x: x(v) - 12, y: H + 16 }); t.textContent = ns(v);
      box.appendChild(t);
    }
    return box;
  }

  // ---- the variance flame graph ----
  // Rows of g.flame: [id, parent, name, kind, contribution, body contribution, share, mean, waker].
  // A frame's width is |Cov(T_n, L)| / Var(L) of the zoomed frame's width; children share their
  // parent's width in proportion (scaled down when they exceed it: siblings that cancel out);
  // negative contributions are hatched. Wait frames are violet, the waker's work below them blue.
  function flame(g, container, tip) {
    var rows = g.flame.map(function (r, i) {
      return { i: i, id: r[0], parent: r[1], name: r[2], kind: r[3], c: r[4], body: r[5],
               share: r[6], mean: r[7], waker: r[8] === 1, kids: [] };
    });
    rows.forEach(function (r) { if (r.parent >= 0) rows[r.parent].kids.push(r); });
    rows.forEach(function (r) { r.kids.sort(function (a, b) { return b.c - a.c; }); });
    var root = rows[0], zoom = root, query = "";
    var tools = el("div", { class: "flame-tools" });
    var search = el("input", { type: "search", placeholder: "search frames (regular expression)" });
    var reset = el("button", { text: "reset zoom" });
    var matched = el("span", { class: "matched-total" });
    tools.appendChild(search); tools.appendChild(reset); tools.appendChild(matched);
    var legend = el("div", { class: "legend" });
    legend.innerHTML = "width = contribution to Var(latency), Cov(T, L)/Var(L); colour = share of Var(L)" +
      "<span style='background:#e8793a'></span>interval's own path" +
      "<span style='background:#9b6bd3'></span>wait" +
      "<span style='background:#4f8fd6'></span>waker's work (what the wait stands for)" +
      "<span style='background:repeating-linear-gradient(45deg,#888 0 2px,#fff 2px 4px)'></span>negative contribution";
    var box = el("div", { class: "flame" });
    container.appendChild(tools); container.appendChild(legend); container.appendChild(box);

    function colour(r) {
      var s = Math.min(1, Math.max(0, r.share)), l = 78 - 30 * Math.sqrt(s);
      if (r.kind === "wait") return "hsl(270,50%," + l + "%)";
      if (r.waker) return "hsl(212,62%," + l + "%)";
      if (r.kind === "untracked") return "hsl(0,0%,80%)";
      return "hsl(" + (40 - 30 * Math.sqrt(s)) + ",85%," + l + "%)";
    }
    function ancestors(r) { var a = []; while (r.parent >= 0) { r = rows[r.parent]; a.unshift(r); } return a; }
    function draw() {
      box.innerHTML = "";
      var W = box.clientWidth || 1200, frames = [], re = null;
      try { re = query ? new RegExp(query, "i") : null; } catch (e) { re = null; }
      var anc = ancestors(zoom);
      anc.forEach(function (a, d) { frames.push({ r: a, x: 0, w: 1, d: d, ancestor: true }); });
      (function place(r, x, w, d) {
        frames.push({ r: r, x: x, w: w, d: d });
        var total = 0;
        r.kids.forEach(function (k) { total += Math.abs(k.c); });
        var base = Math.abs(r === zoom ? (r.c || 1) : r.c) || total;
        var scale = total > base ? w / total : w / (base || 1);
        var cx = x;
        r.kids.forEach(function (k) {
          var kw = Math.abs(k.c) * scale;
          if (kw * W >= 0.5) place(k, cx, kw, d + 1);
          cx += kw;
        });
      })(zoom, 0, 1, anc.length);
      var depth = 0;
      frames.forEach(function (f) { depth = Math.max(depth, f.d); });
      var s = svg("svg", { width: W, height: (depth + 1) * ROW, viewBox: "0 0 " + W + " " + (depth + 1) * ROW });
      var defs = svg("defs");
      defs.innerHTML = "<pattern id='hatch' width='6' height='6' patternUnits='userSpaceOnUse' patternTransform='rotate(45)'>" +
        "<rect width='6' height='6' fill='#fff'/><rect width='3' height='6' fill='#8a8a8a'/></pattern>";
      s.appendChild(defs);
      var hit = 0;
      frames.forEach(function (f) {
        var gEl = svg("g", { class: "frame" + (f.ancestor ? " ancestor" : "") });
        var r = f.r, x = f.x * W, w = Math.max(f.w * W, 0.5);
        var rect = svg("rect", { x: x, y: f.d * ROW, width: w, height: ROW - 1,
                                 fill: r.c < 0 ? "url(#hatch)" : colour(r) });
        rect.setAttribute("data-name", r.name);
        rect.setAttribute("data-row", r.i);
        if (re && re.test(r.name)) {
          rect.classList.add("matched");
          if (!f.ancestor && !hasMatchedAncestor(r, re)) hit += r.c;
        }
        gEl.appendChild(rect);
        if (w > 40) {
          var t = svg("text", { x: x + 3, y: f.d * ROW + 13 });
          var chars = Math.floor((w - 6) / 6.6);
          t.textContent = r.name.length > chars ? r.name.slice(0, Math.max(chars - 1, 1)) + "\u2026" : r.name;
          gEl.appendChild(t);
        }
        rect.addEventListener("mousemove", function (ev) { showTip(ev, r); });
        rect.addEventListener("mouseleave", function () { tip.style.display = "none"; });
        rect.addEventListener("click", function () { zoom = r; draw(); });
        s.appendChild(gEl);
      });
      box.appendChild(s);
      box.setAttribute("data-zoom", zoom.name);
      matched.textContent = re ? "matched: " + pct(hit) + " of Var(latency)" : "";
    }
    function hasMatchedAncestor(r, re) {
      while (r.parent >= 0) { r = rows[r.parent]; if (r === zoom) return false; if (re.test(r.name)) return true; }
      return false;
    }
    function showTip(ev, r) {
      var lines = [r.name,
        "contribution " + pct(r.c) + " of Var(latency) (own part " + pct(r.body) + ")",
        "variance share " + pct(r.share) + ", mean " + ns(r.mean) + " per interval"];
      if (r.kind === "wait") lines.push("a wait: the frames below are the waker's work it stands for");
      else if (r.waker) lines.push("the waker's work of a wait above");
      if (r.c < 0) lines.push("negative: it shortens the intervals the others lengthen");
      tip.textContent = "";
      lines.forEach(function (l, i) { tip.appendChild(el(i ? "div" : "b", { text: l })); });
      tip.style.display = "block";
      tip.style.left = Math.min(ev.clientX + 14, window.innerWidth - 540) + "px";
      tip.style.top = (ev.clientY + 14) + "px";
    }
    search.addEventListener("input", function () { query = search.value; draw(); });
    reset.addEventListener("click", function () { zoom = root; draw(); });
    return draw;
  }

  // ---- the page ----
  var app = document.getElementById("app");
  var tip = el("div", { class: "tooltip" });
  document.body.appendChild(tip);
  var r = data.run;
  app.appendChild(el("header", {}, [
    el("h1", { text: data.title }),
    el("div", { class: "meta", text: data.trace_dir + " \u2014 " + r.intervals + " intervals, " + r.records +
      " records, " + r.streams + " streams, " + r.processes + " processes, " + r.wake_edges + " wake-up edges, " +
      r.dropped + " dropped" })]));
  var main = el("main");
  app.appendChild(main);
  data.warnings.forEach(function (w) { main.appendChild(el("div", { class: "warning", text: "warning: " + w })); });
  if (data.notes && data.notes.length) {
    // informational: folded, never a red banner
    var notes = el("details", { class: "notes" }, [el("summary", { text: data.notes.length + (data.notes.length === 1 ? " note" : " notes") })]);
    data.notes.forEach(function (n) { notes.appendChild(el("div", { text: n })); });
    main.appendChild(notes);
  }
  if (data.hosts.length) {
    // several trace directories on one time line: each host's clock correction
    main.appendChild(el("h2", { text: "Hosts" }));
    main.appendChild(table([
      { title: "host", help: "trace directory (the first is the reference clock)", name: true, value: function (h) { return h.dir; } },
      { title: "name", help: "the host name its processes recorded", name: true, value: function (h) { return h.hostname; } },
      { title: "clock offset", help: "its wall clock ran ahead of the reference's by this much (estimated from the message edges)", value: function (h) { return h === data.hosts[0] ? "reference" : h.offset_ns; }, format: function (v) { return typeof v === "number" ? (v / 1e6).toFixed(6) + " ms" : v; } },
      { title: "skew bound", help: "the true offset lies within the offset +- this (unknown without edges both ways)", value: function (h) { return h === data.hosts[0] ? "" : h.skew_bound_ns; }, format: function (v) { return typeof v !== "number" ? v : v < 0 ? "unknown" : "\u00b1" + ns(v); } },
      { title: "clock samples", value: function (h) { return h.clock_samples; } },
      { title: "edges out", value: function (h) { return h.edges_out; } },
      { title: "edges in", value: function (h) { return h.edges_in; } },
      { title: "violations", help: "message edges received before they were sent on the merged time line", value: function (h) { return h.violations; } }
    ], data.hosts));
  }

  var tabs = el("div", { class: "tabs" }), sections = [], drawers = [];
  main.appendChild(tabs);
  data.groups.forEach(function (g, gi) {
    var name = g.label === "" ? "all intervals" : g.label;
    var b = el("button", { text: name + " (" + g.latency.count + ")" });
    tabs.appendChild(b);
    var sec = el("section", { class: "group", "data-label": g.label });
    sec.appendChild(el("div", { class: "answer", text: g.answer }));
    if (g.answer_chain && g.answer_chain.length)
      sec.appendChild(el("div", { class: "chain", text: "chain: " + g.answer_chain.join(" \u203a ") }));
    var l = g.latency;
    var stats = el("div", { class: "stats" });
    [["intervals", l.count], ["mean", ns(l.mean_ns)], ["sd", ns(l.sd_ns)], ["CV", l.cv.toFixed(2)],
     ["p50", ns(l.p50_ns)], ["p95", ns(l.p95_ns)], ["p99", ns(l.p99_ns)], ["max", ns(l.max_ns)]].forEach(function (s) {
      stats.appendChild(el("div", { text: s[0] }, [el("b", { text: String(s[1]) })]));
    });
    sec.appendChild(el("h2", { text: "Latency" }));
    sec.appendChild(stats);
    sec.appendChild(histogram(g));
    sec.appendChild(el("h2", { text: "Variance flame graph" }));
    var fl = el("div", { class: "flame-host" });
    sec.appendChild(fl);
    drawers[gi] = flame(g, fl, tip);
    sec.appendChild(el("h2", { text: "Where the variance comes from, by place" }));
    var viaCell = function (td, p) {
      td.appendChild(document.createTextNode(p.name));
      var ways = p.via.filter(function (v) { return v[0] !== "" && Math.abs(v[1]) >= 0.01; });
      if (ways.length) td.appendChild(el("div", { class: "via", text: ways.slice(0, 3).map(function (v) {
        return "waker of " + v[0] + " " + pct(v[1]); }).join(", ") }));
    };
    sec.appendChild(table([
      { title: "contrib", help: "Cov(X, L)/Var(L): the places add up to 100%", value: function (p) { return p.contribution; }, format: pct },
      { title: "share", help: "Var(X)/Var(L); above 100% when other parts move against it and cancel some of it (contrib adds up to 100%)", value: function (p) { return p.share; }, format: pct },
      { title: "score", help: data.ranking === "vprofiler" ? "the rank: VProfiler's specificity x share" : "the rank: specificity x contrib", value: function (p) { return p.score; }, format: function (v) { return v.toFixed(3); } },
      { title: "VProfiler's", help: "VProfiler's score: specificity x share", value: function (p) { return p.vprofiler_score; }, format: function (v) { return v.toFixed(3); } },
      { title: "mean", value: function (p) { return p.mean_ns; }, format: ns },
      { title: "spec", value: function (p) { return p.specificity; }, format: function (v) { return v.toFixed(0); } },
      { title: "place", name: true, value: function (p) { return p.name; }, render: viaCell }], g.places));
    foldNoise(sec.lastChild, g.places, g.noise_floor);
    sec.appendChild(el("h2", { text: "Waits on the intervals' own path (each with the waker's work it stands for)" }));
    sec.appendChild(table([
      { title: "contrib", value: function (p) { return p.contribution; }, format: pct },
      { title: "share", value: function (p) { return p.share; }, format: pct },
      { title: "mean", value: function (p) { return p.mean_ns; }, format: ns },
      { title: "contexts", value: function (p) { return p.contexts; } },
      { title: "wait", name: true, value: function (p) { return p.name; } }], g.waits));
    var t = g.tail;
    sec.appendChild(el("h2", { text: "The tail: what the slowest intervals spend longer in" }));
    sec.appendChild(el("div", { class: "meta", text: t.intervals + " intervals at or above p" + t.percentile + " = " +
      ns(t.threshold_ns) + " take " + ns(t.excess_ns) + " longer than the mean: E[T | L \u2265 p" + t.percentile +
      "] \u2212 E[T] by place (the excesses add up to it)" }));
    sec.appendChild(table([
      { title: "excess", help: "E[T | L >= p] - E[T]: how much longer the place takes in the slowest intervals", value: function (p) { return p.excess_ns; }, format: ns },
      { title: "95% interval", value: function (p) { return p.ci ? p.ci[0] : p.excess_ns; },
        format: function () { return ""; }, render: function (td, p) { td.textContent = p.ci ? ns(p.ci[0]) + " \u2013 " + ns(p.ci[1]) : ""; } },
      { title: "of the tail", help: "its excess / the latency's excess", value: function (p) { return p.fraction; }, format: pct },
      { title: "place", name: true, value: function (p) { return p.name; } }], t.places.slice(0, 10)));
    var sg = g.slow_group;
    if (sg) {
      sec.appendChild(el("h2", { text: "The slow group: a few intervals far slower than all the others" }));
      sec.appendChild(el("div", { class: "meta", text: sg.intervals + " intervals with L \u2265 " + ns(sg.threshold_ns) +
        ", mean " + ns(sg.mean_ns) + " against " + ns(sg.rest_mean_ns) + " for the others; removing them would remove " +
        pct(sg.removed) + " of Var(L) (the split alone explains " + pct(sg.between) + "); their extra time by place" }));
      sec.appendChild(table([
        { title: "excess", help: "E[T | slow] - E[T]: how much longer the place takes in the slow group", value: function (p) { return p.excess_ns; }, format: ns },
        { title: "of it", help: "its excess / the group's", value: function (p) { return p.fraction; }, format: pct },
        { title: "place", name: true, value: function (p) { return p.name; } }], sg.places.slice(0, 10)));
    }
    sec.appendChild(el("h2", { text: "Factors (terms of the variance trees) and what-if" }));
    sec.appendChild(table([
      { title: "share", value: function (f) { return f.share; }, format: pct },
      { title: "95% interval", value: function (f) { return f.ci ? f.ci[0] : f.share; },
        format: function () { return ""; }, render: function (td, f) { td.textContent = f.ci ? pct(f.ci[0]) + " \u2013 " + pct(f.ci[1]) : ""; } },
      { title: "net", help: "min(share, Cov(X, parent)/Var(L)): the variance less what its siblings cancel", value: function (f) { return f.net_share; }, format: pct },
      { title: "score", help: data.ranking === "vprofiler" ? "the rank: VProfiler's specificity x share" : "the rank: specificity x net", value: function (f) { return f.score; }, format: function (v) { return v.toFixed(3); } },
      { title: "VProfiler's", help: "VProfiler's score: specificity x share", value: function (p) { return p.vprofiler_score; }, format: function (v) { return v.toFixed(3); } },
      { title: "Var(L) if constant", value: function (f) { return f.whatif ? -f.whatif[0] : 0; },
        render: function (td, f) { td.textContent = f.whatif ? "\u2212" + pct(f.whatif[0]) : ""; } },
      { title: "p99 if constant", value: function (f) { return f.whatif ? -f.whatif[1] : 0; },
        render: function (td, f) { td.textContent = f.whatif ? "\u2212" + pct(f.whatif[1]) : ""; } },
      { title: "factor", name: true, value: function (f) { return f.name; } }], g.factors));
    sections.push(sec);
    main.appendChild(sec);
    b.addEventListener("click", function () { show(gi); });
  });
  if (data.history.length) {
    main.appendChild(el("h2", { text: "Iterations of the loop (how the plan drilled down)" }));
    main.appendChild(table([
      { title: "iteration", value: function (h) { return h.iteration; }, format: function (v) { return v; } },
      { title: "plan", help: "instrumented functions", value: function (h) { return h.plan; }, render: function (td, h) { td.textContent = h.plan + (h.final ? " (final)" : ""); } },
      { title: "records/interval", value: function (h) { return h.intervals ? h.records / h.intervals : 0; }, format: function (v) { return v.toFixed(0); } },
      { title: "dropped", value: function (h) { return h.dropped; } },
      { title: "top contrib", value: function (h) { return h.contribution; }, format: pct },
      { title: "top place", name: true, value: function (h) { return h.top; } }], data.history));
  }
  function show(i) {
    sections.forEach(function (s, j) { s.style.display = i === j ? "" : "none"; });
    Array.prototype.forEach.call(tabs.children, function (b, j) { b.classList.toggle("active", i === j); });
    drawers[i]();
  }
  show(0);
  window.addEventListener("resize", function () {
    sections.forEach(function (s, j) { if (s.style.display === "") drawers[j](); });
  });
})();
