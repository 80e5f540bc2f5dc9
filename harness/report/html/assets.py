"""The page's own style sheet and script, inlined into every report.

The script builds the question lists, the chunk panels and the heatmap's cell panel from
the page's JSON with `createElement` and `textContent` only: no string from a log is ever
parsed as HTML, so a chunk holding markup shows as text.
"""

CSS = """
:root { --fg:#222; --muted:#666; --line:#ddd; --bg:#fafafa; }
* { box-sizing: border-box; }
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg);
  margin: 0; background: #fff; }
header.top { padding: 14px 24px; border-bottom: 1px solid var(--line); background: var(--bg); }
header.top h1 { margin: 0 0 4px; font-size: 20px; word-break: break-all; }
nav a { margin-right: 12px; color: #2c5aa0; text-decoration: none; }
main { padding: 8px 24px 40px; max-width: 1400px; }
section { margin-top: 22px; }
h2 { font-size: 17px; border-bottom: 1px solid var(--line); padding-bottom: 4px; }
h3 { font-size: 15px; margin: 14px 0 6px; }
table { border-collapse: collapse; margin: 6px 0; }
.wide { max-width: 100%; overflow-x: auto; }
.marks { display: inline-block; min-width: 9em; }
th, td { border: 1px solid var(--line); padding: 3px 8px; text-align: left; vertical-align: top; }
th { background: var(--bg); font-weight: 600; }
td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; white-space: nowrap; }
.muted, .ci { color: var(--muted); }
.ci { font-size: 12px; }
.warn { color: #a33; }
.note { background: #fff8e1; border-left: 3px solid #f0c040; padding: 6px 10px; margin: 8px 0; }
.plot { width: 100%; min-height: 220px; }
.grid2 { display: grid; grid-template-columns: repeat(auto-fit, minmax(460px, 1fr)); gap: 12px; }
pre { background: var(--bg); border: 1px solid var(--line); padding: 8px; overflow: auto;
  max-height: 420px; white-space: pre-wrap; word-break: break-word; }
.badge { display: inline-block; padding: 0 6px; border-radius: 8px; font-size: 12px; color: #fff; }
.o-complete { background: #1a9850; } .o-relevant { background: #e08a2b; }
.o-miss { background: #d73027; } .o-error { background: #7b3294; } .o-not-run { background: #999; }
tr.tie td { background: #eef5fc; } tr.best td { background: #dff0d8; }
.filters { display: flex; flex-wrap: wrap; gap: 10px; align-items: center; margin: 8px 0; }
.filters label { color: var(--muted); }
details.q { border: 1px solid var(--line); border-radius: 4px; margin: 4px 0; }
details.q > summary { cursor: pointer; padding: 5px 8px; list-style-position: inside; }
details.q[open] > summary { background: var(--bg); border-bottom: 1px solid var(--line); }
.qbody { padding: 6px 10px; }
.qid { font-family: ui-monospace, monospace; color: var(--muted); margin-right: 6px; }
.qm { color: var(--muted); font-size: 12px; margin-left: 8px; }
.hit { border-top: 1px dashed var(--line); padding: 6px 0; }
.hit:first-child { border-top: 0; }
.hitmeta { font-size: 12px; color: var(--muted); }
.verdict { font-size: 12px; margin: 2px 0; }
.yes { color: #1a7f37; font-weight: 600; } .no { color: #a33; font-weight: 600; }
.err { color: #7b3294; font-weight: 600; }
.chunk { white-space: pre-wrap; word-break: break-word; background: var(--bg); padding: 6px 8px;
  border-left: 3px solid var(--line); margin: 4px 0; font-size: 13px; max-height: 260px; overflow: auto; }
.g2 .chunk { border-left-color: #1a9850; } .g1 .chunk { border-left-color: #e08a2b; }
mark { background: #fff3a0; padding: 0; }
.side { display: flex; flex-wrap: wrap; gap: 16px; align-items: flex-start; }
.side > .plot { flex: 1; min-width: 420px; }
.twocol { display: grid; grid-template-columns: 1fr 1fr; gap: 12px; }
#cell-panel:empty { display: none; }
#cell-panel { border: 1px solid var(--line); padding: 8px 12px; margin-top: 8px; }
"""

JS = r"""
(function () {
  "use strict";
  var page = JSON.parse(document.getElementById("page-data").textContent);
  var figures = JSON.parse(document.getElementById("figure-data").textContent);
  var texts = page.texts || [];

  function el(tag, cls) {
    var e = document.createElement(tag);
    if (cls) { e.className = cls; }
    for (var i = 2; i < arguments.length; i++) {
      var c = arguments[i];
      if (c === null || c === undefined) { continue; }
      e.appendChild(c instanceof Node ? c : document.createTextNode(String(c)));
    }
    return e;
  }
  function num(v, digits) {
    if (v === null || v === undefined) { return "-"; }
    if (typeof v !== "number") { return String(v); }
    if (Math.abs(v) >= 100 || Number.isInteger(v)) { return String(Math.round(v)); }
    return v.toFixed(digits === undefined ? 3 : digits);
  }
  function badge(outcome) {
    return el("span", "badge o-" + String(outcome).replace(/ /g, "-"), outcome);
  }
  function marked(text, marks) {
    var box = el("div", "chunk");
    var at = 0;
    (marks || []).forEach(function (m) {
      if (m[0] > at) { box.appendChild(document.createTextNode(text.slice(at, m[0]))); }
      box.appendChild(el("mark", null, text.slice(m[0], m[1])));
      at = m[1];
    });
    box.appendChild(document.createTextNode(text.slice(at)));
    return box;
  }
  function verdictLine(name, c) {
    var line = el("div", "verdict", name + ": ");
    if (c.error) {
      line.appendChild(el("span", "err", "ERR"));
      line.appendChild(document.createTextNode(" " + c.error));
      return line;
    }
    line.appendChild(el("span", c.value ? "yes" : "no", c.value ? "yes" : "no"));
    if (c.p !== null && c.p !== undefined) { line.appendChild(document.createTextNode(" P(yes)=" + num(c.p, 2))); }
    if (c.reason) { line.appendChild(document.createTextNode(" \u2014 " + c.reason)); }
    if (c.evidence) { line.appendChild(document.createTextNode(" evidence: " + c.evidence)); }
    return line;
  }
  function hitsBox(hits, k) {
    var box = el("div", "hits");
    if (!hits.length) { box.appendChild(el("div", "muted", "no chunks retrieved")); }
    hits.forEach(function (h) {
      var meta = "#" + h.rank + "  similarity " + num(h.score) +
        (h.rerank_score !== null && h.rerank_score !== undefined ? "  rerank " + num(h.rerank_score) : "") +
        "  grade " + (h.grade === null ? "ERR" : h.grade) + "  " + h.chunk_id +
        (k && h.rank > k ? "  (below k)" : "");
      var div = el("div", "hit g" + (h.grade === null ? "x" : h.grade), el("div", "hitmeta", meta));
      div.appendChild(verdictLine("relevant", h.relevant));
      div.appendChild(verdictLine("complete", h.complete));
      div.appendChild(marked(texts[h.text], h.marks));
      (h.flags || []).forEach(function (f) { div.appendChild(el("div", "warn", "! " + f)); });
      box.appendChild(div);
    });
    return box;
  }
  function questionDetails(q, k) {
    var d = el("details", "q");
    d.dataset.outcome = q.outcome;
    d.dataset.type = q.type || "";
    d.dataset.topics = JSON.stringify(q.topics || []);
    d.dataset.qid = q.id;
    var s = el("summary", null, el("span", "qid", q.id), badge(q.outcome), " ", q.text);
    var m = q.metrics || {};
    var soft = m.soft_mrr === null || m.soft_mrr === undefined ? "" : "soft_mrr " + num(m.soft_mrr) + "  ";
    s.appendChild(el("span", "qm", soft + "mrr " + num(m.mrr) + "  hit " + num(m.hit_rate) +
      (q.type ? "  type " + q.type : "") + (q.topics && q.topics.length ? "  topic " + q.topics.join(", ") : "")));
    d.appendChild(s);
    var body = el("div", "qbody");
    if (q.error) { body.appendChild(el("div", "err", "error: " + q.error)); }
    if (q.failure) {
      body.appendChild(el("div", "note", "failure: " + q.failure.label +
        (q.failure.rank ? " (rank " + q.failure.rank + ")" : "") + " \u2014 " + (q.failure.reason || "")));
    }
    body.appendChild(hitsBox(q.hits, k));
    d.appendChild(body);
    return d;
  }

  function runQuestions() {
    var list = document.getElementById("question-list");
    if (!list) { return; }
    var k = page.run.k;
    page.questions.forEach(function (q) { list.appendChild(questionDetails(q, k)); });
    var controls = document.querySelectorAll("[data-filter]");
    function apply() {
      var want = {};
      controls.forEach(function (c) { want[c.dataset.filter] = c.value; });
      var shown = 0;
      list.querySelectorAll("details.q").forEach(function (d) {
        var ok = true;
        if (want.outcome === "failures") { ok = d.dataset.outcome !== "complete"; }
        else if (want.outcome) { ok = d.dataset.outcome === want.outcome; }
        if (ok && want.type) { ok = d.dataset.type === want.type; }
        if (ok && want.topic) { ok = JSON.parse(d.dataset.topics).indexOf(want.topic) >= 0; }
        if (ok && want.search) {
          ok = d.textContent.toLowerCase().indexOf(want.search.toLowerCase()) >= 0;
        }
        d.hidden = !ok;
        if (ok) { shown++; }
      });
      document.getElementById("question-count").textContent = shown + " of " + page.questions.length + " questions";
    }
    controls.forEach(function (c) { c.addEventListener("input", apply); c.addEventListener("change", apply); });
    apply();
  }

  function showCell(trial, qid) {
    var panel = document.getElementById("cell-panel");
    if (!panel) { return false; }
    var cell = (page.cells[String(trial)] || {})[qid];
    while (panel.firstChild) { panel.removeChild(panel.firstChild); }
    var qi = page.heatmap.questions.indexOf(qid);
    panel.appendChild(el("h3", null, "trial " + trial + ", question " + qid + ": " +
      (qi >= 0 ? page.heatmap.question_text[qi] : "")));
    if (!cell) { panel.appendChild(el("div", "muted", "this trial did not judge this question")); return true; }
    var m = cell.metrics || {};
    panel.appendChild(el("div", null, badge(cell.outcome), "  at k=" + cell.k + ": hit " + num(m.hit_rate) +
      "  mrr " + num(m.mrr) + (cell.error ? "  error: " + cell.error : "")));
    panel.appendChild(hitsBox(cell.hits, cell.k));
    return true;
  }

  function compareChanges() {
    var list = document.getElementById("change-list");
    if (!list) { return; }
    page.changes.forEach(function (c) {
      var d = el("details", "q");
      d.dataset.qid = c.question_id;
      var run = page.runs[c.run];
      d.appendChild(el("summary", null, el("span", "qid", c.question_id),
        el("span", c.better ? "yes" : "no", c.better ? "better" : "worse"),
        " [" + c.run + "] " + num(c.before) + " \u2192 " + num(c.after) + "  ", c.text));
      var body = el("div", "qbody twocol");
      body.appendChild(el("div", null, el("h3", null, "before: [0] " + page.runs[0].name + " "), badge(c.outcome_before), hitsBox(c.hits_before, page.k)));
      body.appendChild(el("div", null, el("h3", null, "after: " + run.label + " " + run.name + " "), badge(c.outcome_after), hitsBox(c.hits_after, page.k)));
      d.appendChild(body);
      list.appendChild(d);
    });
  }

  function plots() {
    if (typeof Plotly === "undefined") { return; }
    document.querySelectorAll("[data-figure]").forEach(function (div) {
      var f = figures[div.dataset.figure];
      if (!f) { return; }
      Plotly.newPlot(div, f.data, f.layout, { displaylogo: false, responsive: true });
      if (div.dataset.figure === "heatmap") {
        div.on("plotly_click", function (ev) {
          var p = ev.points[0];
          var trial = page.heatmap.trials[p.pointIndex[0]];
          var qid = page.heatmap.questions[p.pointIndex[1]];
          showCell(trial, qid);
        });
      }
    });
  }

  window.harnessReport = { showCell: showCell, page: page };
  runQuestions();
  compareChanges();
  plots();
  document.body.dataset.ready = "1";
})();
"""
