"""One self-contained HTML page from a page's data and figures.

Everything is inline: the style sheet, plotly.js (once), the page's script and its data.
The page makes no request: its Content-Security-Policy allows no source but its own
inline scripts (by hash), inline styles and data: images.

Escaping: every string from a log that goes into markup passes `html.escape`; the data
and figures go into `<script type="application/json">` blocks as JSON in which `<`, `>`,
`&`, U+2028 and U+2029 are written as `\\uXXXX`, so no text can close the block; the
script builds the dynamic parts with `textContent`. Every string is redacted
(`harness.secrets.redact_obj`) before any of this.
"""

from __future__ import annotations

import base64
import dataclasses
import hashlib
import html
import json
import os
from collections.abc import Container, Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

from harness.judge.calibration import is_trust_warning
from harness.report.html.assets import CSS, JS
from harness.report.html.data import (
    OUTCOMES,
    Agreement,
    BoardRow,
    ComparePage,
    Filters,
    Page,
    RunPage,
    RunTrust,
    SweepPage,
    TrialAgreement,
)
from harness.report.text import HARD_BESIDE, SOFT_NOT_A_RATE, stability_sentence
from harness.secrets import redact, redact_obj

_JSON_ESCAPES = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}


def script_json(obj: Any) -> str:
    """`obj` as JSON that is safe inside a `<script>` element: `<`, `>`, `&`, U+2028 and
    U+2029 written as \\u escapes (JSON.parse reads them back), so `</script>` or
    `<!--` in a string cannot end or alter the element."""
    text = json.dumps(obj, ensure_ascii=False, allow_nan=False, separators=(",", ":"))
    for ch, esc in _JSON_ESCAPES.items():
        text = text.replace(ch, esc)
    return text


def esc(value: Any) -> str:
    """A value as escaped HTML text (quotes too, so it is safe in attributes)."""
    return html.escape("" if value is None else str(value), quote=True)


def fmt(value: Any, digits: int = 3) -> str:
    """A number as the tables show it: "-" for None, integers and values >= 100 without
    decimals, others to `digits` places; anything else as text."""
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return f"{value:.0f}" if abs(value) >= 100 else f"{value:.{digits}f}"
    return str(value)


def digits(metric: str) -> int:
    """Decimals a metric is shown with: none for sizes and counts."""
    name = metric.split("@")[0]
    return 0 if name in ("context_chars", "errors") or name.startswith("failures") else 3


def signed(value: float, metric: str) -> str:
    """A difference with its sign, to the metric's decimals."""
    return f"{value:+.{digits(metric)}f}"


def _ci(ci: Sequence[float | None] | None) -> str:
    if not ci or ci[0] is None or ci[1] is None:
        return ""
    return f' <span class="ci">[{fmt(ci[0])}, {fmt(ci[1])}]</span>'


def table(
    head: Sequence[str] | None,
    rows: Iterable[Sequence[str]],
    *,
    num: Container[int] = range(1, 99),
    classes: Sequence[str] = (),
) -> str:
    """A table from already escaped cells, in a box that scrolls sideways when the table
    is wider than the page; the columns in `num` are right-aligned numbers. `head` None:
    no header row. `classes`: a class per row ("" for none)."""
    thead = ""
    if head is not None:
        th = "".join(
            f'<th class="{"num" if i in num else ""}">{h}</th>' for i, h in enumerate(head)
        )
        thead = f"<thead><tr>{th}</tr></thead>"
    body = []
    for n, row in enumerate(rows):
        cls = f' class="{classes[n]}"' if n < len(classes) and classes[n] else ""
        tds = "".join(
            f'<td class="{"num" if i in num else ""}">{c}</td>' for i, c in enumerate(row)
        )
        body.append(f"<tr{cls}>{tds}</tr>")
    # a table wider than the page (a sweep's many settings) scrolls in its own box
    return f'<div class="wide"><table>{thead}<tbody>{"".join(body)}</tbody></table></div>'


def kv_table(rows: Iterable[Sequence[Any]], pairs: int = 1) -> str:
    """A table of (name, value), both escaped, `pairs` of them side by side per row."""
    cells = [[esc(k), esc(fmt(v))] for k, v in rows]
    per = max(1, -(-len(cells) // pairs))
    columns = [cells[i * per : (i + 1) * per] for i in range(pairs)]
    out = []
    for n in range(per):
        row: list[str] = []
        for col in columns:
            row += col[n] if n < len(col) else ["", ""]
        out.append(row)
    return table(None, out, num=range(1, 2 * pairs, 2))


def plot(fig_id: str, figures: Mapping[str, Any]) -> str:
    """The placeholder a figure is drawn into (nothing when the page has no such figure)."""
    if fig_id not in figures:
        return ""
    return f'<div class="plot" data-figure="{esc(fig_id)}" id="plot-{esc(fig_id)}"></div>'


def section(sid: str, title: str, body: str) -> str:
    """A titled section (`title` is escaped here, `body` must already be)."""
    return f'<section id="{esc(sid)}"><h2>{esc(title)}</h2>{body}</section>'


def pretty(obj: Any) -> str:
    """A JSON value, indented, as escaped preformatted text."""
    return f"<pre>{esc(json.dumps(obj, indent=2, ensure_ascii=False, default=str))}</pre>"


# ---------------------------------------------------------------- runs


Sections = list[tuple[str, str, str]]
"""A page's sections: (id, title, escaped HTML body)."""


def _trust(trust: RunTrust, who: str = "") -> str:
    """The trust statement as the first thing a section says: a note when trusted, a
    warning otherwise."""
    cls = "note" if trust.verdict == "trusted" else "note warn"
    return f'<p class="{cls}" id="trust"><b>trust{esc(who)}:</b> {esc(trust.statement)}</p>'


def _headline(page: RunPage) -> str:
    if not page.headline:
        return ""
    cells = [
        f"{esc(h.key)} <b>{esc(fmt(h.value))}</b>{_ci(h.ci)}"
        if i == 0
        else f"{esc(h.key)} {esc(fmt(h.value))}{_ci(h.ci)}"
        for i, h in enumerate(page.headline)
    ]
    if page.headline[0].key.startswith("soft_"):
        cells[0] += f' <span class="muted">({esc(SOFT_NOT_A_RATE)})</span>'
    beside = f"; beside it {', '.join(cells[1:])}" if len(cells) > 1 else ""
    return f'<p id="headline">headline: {cells[0]}{beside}</p>'


def _run_summary(page: RunPage) -> str:
    r = page.run
    parts = [
        _trust(page.trust),
        _headline(page),
        f"<p>status <b>{esc(r.status)}</b>, {esc(r.n_questions)} questions, "
        f"{esc(r.n_chunks if r.n_chunks is not None else '?')} chunks, k = {esc(r.k)}; "
        f"started {esc(r.started_at)}, finished {esc(r.finished_at or '-')}</p>",
        f'<p class="muted">{esc(r.run_dir)}</p>',
    ]
    if r.error:
        parts.append(f'<p class="warn">error: {esc(r.error)}</p>')
    parts += [
        f'<p class="warn">warning: {esc(w)}</p>'
        for w in r.warnings
        if not is_trust_warning(w, {"statement": page.trust.statement})
    ]
    counts = page.failure_counts
    if counts:
        parts.append(
            f"<p>failures at k={esc(r.k)}: "
            + ", ".join(f"{esc(fmt(v, 0))} {esc(label)}" for label, v in counts.items())
            + "</p>"
        )
    return "".join(parts)


def _run_metrics(page: RunPage) -> str:
    rows = [
        [esc(row.name)]
        + [
            esc(fmt(v, digits(row.name))) + _ci(ci)
            for v, ci in zip(row.values, row.ci, strict=True)
        ]
        for row in page.metrics
    ]
    return (
        table(["metric", *(f"@{k}" for k in page.ks)], rows)
        + '<p class="muted">95% intervals: bootstrap over questions.</p>'
    )


def _options(values: Iterable[str]) -> str:
    return "".join(f'<option value="{esc(v)}">{esc(v)}</option>' for v in values)


def _question_filters(f: Filters) -> str:
    outcome = (
        '<option value="">all</option>'
        '<option value="failures">failures (not complete)</option>' + _options(f.outcome)
    )
    filters = [
        f'<label>outcome <select data-filter="outcome" id="filter-outcome">{outcome}</select></label>'
    ]
    for name, values in (("type", f.type), ("topic", f.topic)):
        if values:
            filters.append(
                f'<label>{name} <select data-filter="{name}" id="filter-{name}">'
                f'<option value="">all</option>{_options(values)}</select></label>'
            )
    filters.append(
        '<label>search <input data-filter="search" id="filter-search" type="search"></label>'
    )
    filters.append('<span id="question-count" class="muted"></span>')
    return (
        f'<div class="filters">{"".join(filters)}</div>'
        '<p class="muted">Open a question for its graded chunks; the question\'s words are marked.</p>'
        '<div id="question-list"></div>'
    )


def _run_config(page: RunPage) -> str:
    components = table(
        ["component", "name", "args"],
        (
            [esc(name), esc(spec.name), esc(json.dumps(spec.args, ensure_ascii=False))]
            for name, spec in page.components.items()
        ),
        num=(),
    )
    return (
        "<h3>components</h3>"
        + components
        + "<h3>experiment</h3>"
        + pretty(page.config)
        + "<h3>inputs</h3>"
        + pretty(page.data)
    )


def _run_sections(page: RunPage, figures: Mapping[str, Any]) -> Sections:
    curves = f'<div class="grid2">{plot("curves", figures)}{plot("outcomes", figures)}</div>'
    return [
        ("summary", "Summary", _run_summary(page)),
        ("metrics", "Metrics at every k", _run_metrics(page)),
        ("curves", "Curves", curves),
        ("questions", "Questions", _question_filters(page.filters)),
        ("judge", "Judge", kv_table(page.judge, pairs=3)),
        ("validation", "Judge against labels", _run_validation(page)),
        ("config", "Configuration", _run_config(page)),
    ]


def _no_labels(note: str | None) -> str:
    return f'<p class="muted">{esc(note or "no labels given (harness report --qrels FILE)")}</p>'


def _agreement_row(a: Agreement) -> list[str]:
    if a.confusion is None:
        return [esc(a.criterion), "0", "", "", "", "", "", "", "", ""]
    c = a.confusion
    return [
        esc(a.criterion),
        esc(a.n),
        esc(c.tp),
        esc(c.fp),
        esc(c.fn),
        esc(c.tn),
        esc(fmt(a.accuracy)),
        esc(fmt(a.kappa)) + _ci(a.kappa_ci95),
        esc(fmt(a.auc)),
        f"{esc(fmt(a.judge_yes_rate, 2))} / {esc(fmt(a.human_yes_rate, 2))}",
    ]


_AGREEMENT_HEAD = (
    "criterion",
    "n",
    "judge yes, label yes",
    "judge yes, label no",
    "judge no, label yes",
    "judge no, label no",
    "accuracy",
    "kappa [95%]",
    "AUC",
    "yes rate judge / labels",
)


def _run_validation(page: RunPage) -> str:
    v = page.validation
    if v is None:
        return _no_labels(page.validation_note)
    parts = [
        f"<p>{esc(v.questions_labelled)} of {esc(v.questions_in_run)} questions labelled; "
        f"k = {esc(v.k)}; labels: relevant from grade {esc(v.relevant_grade)}, complete "
        f"from grade {esc(v.complete_grade)}; {esc(v.unjudged)}</p>",
        "<h3>confusion matrices (judge vs labels)</h3>"
        + table(_AGREEMENT_HEAD, [_agreement_row(a) for a in v.agreement]),
        "<h3>metrics by the judge and by the labels</h3>"
        + table(
            ["metric", "judge", "labels"],
            ([esc(m.name), esc(fmt(m.judge)), esc(fmt(m.human))] for m in v.metrics),
        ),
    ]
    if v.corrected:
        rows = [
            [
                esc(p.metric),
                esc(fmt(p.judge_only)),
                esc(fmt(p.ppi)) + _ci(p.ci95),
                esc(p.n_labelled),
            ]
            for p in v.corrected
        ]
        parts.append(
            "<h3>label-corrected estimates (PPI)</h3>"
            + table(["metric", "judge only", "corrected [95%]", "labelled"], rows)
        )
    return "".join(parts)


# ---------------------------------------------------------------- sweeps


def _params(params: Mapping[str, Any]) -> str:
    return esc(" ".join(f"{k}={v}" for k, v in params.items()))


def _repeats(n: int) -> str:
    return f" ({n} proposals repeated a finished trial's settings and were not run)" if n else ""


def _sweep_summary(page: SweepPage) -> str:
    s = page.sweep
    c = s.counts
    parts = [
        f"<p>status <b>{esc(s.status)}</b>; objective {esc(' & '.join(s.objective))} "
        f"({esc(', '.join(s.directions))}); sampler {esc(s.sampler.name)} seed "
        f"{esc(s.sampler.seed)}, pruner {esc(s.pruner)}; {esc(c.complete)} complete, "
        f"{esc(c.pruned)} pruned, {esc(c.failed)} failed of {esc(s.trials_requested)} "
        f"requested{_repeats(c.repeats)}</p>",
        f'<p class="muted">{esc(s.sweep_dir)}; updated {esc(s.updated_at)}</p>',
    ]
    if s.sampler.reason:
        parts.insert(1, f'<p class="muted">{esc(s.sampler.name)}: {esc(s.sampler.reason)}</p>')
    if s.error:
        parts.append(f'<p class="warn">error: {esc(s.error)}</p>')
    parts += [f'<p class="warn">warning: {esc(w)}</p>' for w in s.warnings]
    rec = page.recommendation
    if rec:
        parts.append(
            f'<p class="note"><b>recommended: trial {esc(rec.trial)}</b> '
            f"{_params(rec.params)}<br>{esc(rec.reason)}<br>"
            + (f"{esc(stability_sentence(rec.stability))}<br>" if rec.stability else "")
            + f'<span class="muted">test: {esc(rec.test)}</span></p>'
        )
        if page.recommended_trust is not None:
            parts.append(_trust(page.recommended_trust, f" (trial {rec.trial})"))
    elif len(s.objective) > 1:
        parts.append(
            '<p class="note">Two objectives: the Pareto front has no single best; pick a trial '
            "of the front by the trade-off you accept.</p>"
        )
    else:
        parts.append('<p class="muted">no recommendation yet (no complete trial)</p>')
    return "".join(parts)


def _board_cells(r: BoardRow, varied: Sequence[str], multi: bool) -> list[str]:
    """A leaderboard row's escaped cells."""
    marks = [
        mark
        for mark, on in (
            ("best", r.best),
            ("recommended", r.recommended),
            ("tie", r.tie),
            ("Pareto front", r.pareto),
        )
        if on
    ]
    values = ", ".join(fmt(v) for v in r.values) if r.values else "-"
    diff = r.diff
    return [
        esc(r.rank or ""),
        esc(r.number),
        esc(r.state),
        # a pruned trial has no objective: no interval either (its questions were cut short)
        esc(values) + ("" if multi or not r.values else _ci(r.ci)),
        *(esc(fmt(r.hard.get(name))) for name in HARD_BESIDE),
        esc("" if diff is None else f"{diff.mean:+.3f}")
        + (_ci([diff.low, diff.high]) if diff else ""),
        esc(fmt(r.p_holm)),
        esc(fmt(r.context_chars)),
        *(esc(fmt(r.params.get(name))) for name in varied),
        f'<span class="marks">{esc(", ".join(marks))}</span>'
        + (f' <span class="muted">{esc(r.error)}</span>' if r.error else ""),
    ]


def _leaderboard(page: SweepPage, figures: Mapping[str, Any]) -> str:
    objective = page.sweep.objective
    varied = list(page.params)
    board = page.leaderboard
    rows = [_board_cells(r, varied, len(objective) > 1) for r in board]
    classes = ["best" if r.best else "tie" if r.tie or r.pareto else "" for r in board]
    fixed = {
        name: value
        for name, value in (board[0].params if board else {}).items()
        if name not in varied
    }
    head = [
        "rank",
        "trial",
        "state",
        f"{' & '.join(objective)} [95%]",
        *(f"{name}@k" for name in HARD_BESIDE),
        "minus best [95% paired]",
        "Holm p",
        "context chars",
        *(esc(name) for name in varied),
        "",
    ]
    return (
        table(head, rows, num=range(7 + len(HARD_BESIDE) + len(varied)), classes=classes)
        + f'<p class="muted">Every trial: {_params(fixed)}. Ranked by the objective; '
        f"{' and '.join(HARD_BESIDE)} at each trial's k (the yes/no counts) beside it. "
        "Intervals: bootstrap over questions (the objective), paired bootstrap over the questions both trials answered (the "
        "difference to the best). Shaded: the best and the ties, the trials its paired test "
        "(Holm p) cannot separate from it.</p>" + plot("forest", figures)
    )


def _search(page: SweepPage, figures: Mapping[str, Any]) -> str:
    parts = [plot(fig, figures) for fig in ("history", "slice", "parallel", "pareto")]
    if "importance" in figures:
        parts.append(plot("importance", figures))
    else:
        note = page.importances_note or "computed when the sweep ends"
        parts.append(f'<p class="muted">parameter importances: none ({esc(note)})</p>')
    if not any(key in figures for key in ("history", "slice")):
        parts.insert(0, '<p class="muted">no complete trial to plot</p>')
    return "".join(parts)


def _heatmap(figures: Mapping[str, Any]) -> str:
    legend = " ".join(
        f'<span class="badge o-{esc(o.replace(" ", "-"))}">{esc(o)}</span>' for o in OUTCOMES
    )
    return (
        f"<p>{legend}</p>{plot('heatmap', figures)}"
        '<p class="muted">Click a cell to see the chunks that trial retrieved for that question.</p>'
        '<div id="cell-panel"></div>'
    )


def _cost(page: SweepPage) -> str:
    c = page.cost
    rows = [(f.name, getattr(c, f.name)) for f in dataclasses.fields(c)]
    return kv_table(rows) + (
        '<p class="muted">distinct_verdicts: the floor (one call per distinct question, chunk text '
        "and criterion); naive_calls: what a tool without a cache would make.</p>"
    )


def _sweep_validation(page: SweepPage, figures: Mapping[str, Any]) -> str:
    v = page.validation
    if v is None:
        return _no_labels(page.validation_note)

    def trial(t: TrialAgreement) -> str:
        return esc(f"#{t.number} judge {fmt(t.judge)} labels {fmt(t.human)}")

    top = table(
        ["rank", "by judge", "by labels"],
        ([esc(i), trial(a), trial(b)] for i, (a, b) in enumerate(v.top, 1)),
    )
    return (
        f"<p>Kendall tau between the judge's and the labels' ranking of {esc(v.trials)} "
        f"trials by {esc(v.metric)}@k: <b>{esc(fmt(v.kendall_tau))}</b></p>"
        + top
        + plot("validation", figures)
    )


def _sweep_sections(page: SweepPage, figures: Mapping[str, Any]) -> Sections:
    config = "<h3>space</h3>" + pretty(page.space) + "<h3>experiment</h3>" + pretty(page.config)
    return [
        ("summary", "Summary", _sweep_summary(page)),
        ("leaderboard", "Leaderboard", _leaderboard(page, figures)),
        ("heatmap", "Questions x trials", _heatmap(figures)),
        ("search", "Search", _search(page, figures)),
        ("cost", "Cost", _cost(page)),
        ("validation", "Judge against labels", _sweep_validation(page, figures)),
        ("config", "Configuration", config),
    ]


# ---------------------------------------------------------------- comparisons


def _compared_runs(page: ComparePage) -> str:
    runs = page.runs
    rows = [
        [
            esc(r.label),
            esc(r.name),
            esc(r.status),
            esc(r.n_questions),
            esc(fmt(r.judge_calls)),
            esc(r.run_dir),
        ]
        for r in runs
    ]
    out = "".join(f'<p class="note warn">{esc(n)}</p>' for n in page.notes)
    out += table(["", "run", "status", "questions", "judge calls", "folder"], rows, num=(3, 4))
    if page.settings:
        out += "<h3>settings that differ</h3>" + table(
            ["setting", *(esc(r.label) for r in runs)],
            ([esc(s.setting), *(esc(fmt(v)) for v in s.values)] for s in page.settings),
        )
    return out


def _compared_metrics(page: ComparePage, figures: Mapping[str, Any]) -> str:
    metrics = table(
        ["metric", *(esc(r.label) for r in page.runs)],
        ([esc(m.metric), *(esc(fmt(v, digits(m.metric))) for v in m.values)] for m in page.metrics),
    )
    return f'<div class="side">{metrics}{plot("compare-bars", figures)}</div>'


def _differences(page: ComparePage, figures: Mapping[str, Any]) -> str:
    rows = (
        [
            esc(f"[{d.run}]-[0]"),
            esc(d.metric),
            esc(signed(d.mean, d.metric)) + (" *" if d.significant else ""),
            esc(f"[{signed(d.low, d.metric)}, {signed(d.high, d.metric)}]"),
            esc(d.n),
        ]
        for d in page.differences
    )
    diffs = (
        table(["", "metric", "mean difference", "95% interval", "questions"], rows, num=(2, 3, 4))
        + '<p class="muted">* the interval excludes 0. Paired bootstrap over the questions every run answered.</p>'
    )
    return f'<div class="side"><div>{diffs}</div>{plot("compare-forest", figures)}</div>'


def _compare_sections(page: ComparePage, figures: Mapping[str, Any]) -> Sections:
    changes = (
        f"<p>{esc(len(page.changes))} questions whose {esc(page.change_metric)}@"
        f"{esc(page.k)} changed; open one for the graded chunks before and after.</p>"
        '<div id="change-list"></div>'
    )
    return [
        ("runs", "Runs", _compared_runs(page)),
        (
            "metrics",
            f"Metrics at k={page.k} over {page.shared_questions} shared questions",
            _compared_metrics(page, figures),
        ),
        ("differences", "Paired differences to [0]", _differences(page, figures)),
        ("changes", "Questions that changed", changes),
    ]


# ---------------------------------------------------------------- the page


def _sha256(text: str) -> str:
    return base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()


def _sections(page: Page, figures: Mapping[str, Any]) -> Sections:
    if isinstance(page, RunPage):
        return _run_sections(page, figures)
    if isinstance(page, SweepPage):
        return _sweep_sections(page, figures)
    return _compare_sections(page, figures)


NAV_LABELS = {"validation": "Labels"}
"""A section's link in the page's top bar where its title's first word would repeat
another's ("Judge" and "Judge against labels")."""


def nav_label(sid: str, title: str) -> str:
    """The top bar's one-word link to a section: NAV_LABELS, else its title's first word."""
    return NAV_LABELS.get(sid, title.split(" ")[0])


def render_page(page: Page, figures: Mapping[str, Any], plotly_js: str) -> str:
    """The whole HTML document. `page` and `figures` are redacted here; `plotly_js` (the
    library, inlined once) is not a log's text and goes in as it is."""
    page = redact_obj(page)
    figures = redact_obj(figures)
    sections = _sections(page, figures)
    nav = "".join(
        f'<a href="#{esc(sid)}">{esc(nav_label(sid, title))}</a>' for sid, title, _ in sections
    )
    body = "".join(section(sid, title, html_) for sid, title, html_ in sections)
    if "</script" in plotly_js.lower():  # never true of plotly.js; a guard, not a fix
        raise ValueError("plotly.js holds a closing script tag")
    scripts = [plotly_js, JS]
    csp = (
        "default-src 'none'; img-src data: blob:; style-src 'unsafe-inline'; font-src data:; "
        "script-src " + " ".join(f"'sha256-{_sha256(s)}'" for s in scripts)
    )
    # The markup around the scripts is redacted too; the scripts are not log text.
    markup = redact(
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{esc(csp)}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(page.title)} - harness report</title><style>{CSS}</style></head><body>"
        f'<header class="top"><h1>{esc(page.title)}</h1><nav>{nav}</nav></header>'
        f"<main>{body}</main>"
        f'<script type="application/json" id="page-data">{script_json(page.to_json())}</script>'
        f'<script type="application/json" id="figure-data">{script_json(figures)}</script>'
    )
    return markup + "".join(f"<script>{s}</script>" for s in scripts) + "</body></html>\n"


def write_page(path: Path, document: str) -> int:
    """Write the page through a temporary file beside it, then rename: a reader never sees
    half a page. Returns its size in bytes."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    data = document.encode("utf-8")
    try:
        tmp.write_bytes(data)
        os.replace(tmp, path)
    finally:
        if tmp.exists():
            tmp.unlink()
    return len(data)
