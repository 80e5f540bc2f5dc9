"""The report's plots, as plotly figures built from a page's data (`data.py`).

A sweep's optimisation history, slice plots, parallel coordinates and Pareto front come
from Optuna's own visualization module, run on an in-memory study rebuilt from
trials.jsonl (the log, not the study storage: it may be a PostgreSQL server out of reach,
and the log is what the rest of the page reads). Parameter importances are drawn from
sweep.json's PED-ANOVA shares, not recomputed. Everything else is plain plotly.

Each function returns plain JSON (`{"data": [...], "layout": {...}}`), ready to embed.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any, cast

import plotly.graph_objects as go
import plotly.io as pio

from harness.metrics.ir import Direction
from harness.report.html.data import (
    OUTCOMES,
    VALIDATED_METRICS,
    ComparePage,
    Page,
    RunPage,
    SweepPage,
)

Figure = dict[str, Any]
"""A plotly figure as JSON: data and layout."""

ZERO_LINE: dict[str, Any] = {
    "type": "line",
    "x0": 0,
    "x1": 0,
    "yref": "paper",
    "y0": 0,
    "y1": 1,
    "line": {"dash": "dot", "color": "#333"},
}
"""A dotted vertical line at x = 0: where a difference plot's "no difference" lies."""

OUTCOME_COLOURS = {
    "complete": "#1a9850",
    "relevant": "#fdae61",
    "miss": "#d73027",
    "error": "#7b3294",
    "not run": "#e0e0e0",
}
"""Heatmap colour of each outcome (data.OUTCOMES)."""

_LAYOUT = {"margin": {"l": 60, "r": 20, "t": 40, "b": 50}, "template": "plotly_white"}


def to_json(fig: go.Figure) -> Figure:
    """A figure as plain JSON (NaN becomes null, numpy arrays lists)."""
    return dict(json.loads(pio.to_json(fig, validate=False, pretty=False)))


def _fig(data: Sequence[Any], title: str, height: int = 340, **layout: Any) -> Figure:
    fig = go.Figure(data=list(data))
    fig.update_layout(title={"text": title, "x": 0}, height=height, **_LAYOUT, **layout)
    return to_json(fig)


# ---------------------------------------------------------------- runs


def metric_curves(page: RunPage) -> Figure:
    """The headline against k (soft MRR, MRR, hit rate), each with its 95% bootstrap
    interval as error bars."""
    traces = []
    for name, curve in page.curves.items():
        lows = [c[0] for c in curve.ci]
        highs = [c[1] for c in curve.ci]
        means = list(curve.mean)
        traces.append(
            go.Scatter(
                x=list(curve.k),
                y=means,
                name=name,
                mode="lines+markers",
                error_y={
                    "type": "data",
                    "symmetric": False,
                    "array": [
                        None if h is None or m is None else h - m
                        for h, m in zip(highs, means, strict=True)
                    ],
                    "arrayminus": [
                        None if lo is None or m is None else m - lo
                        for lo, m in zip(lows, means, strict=True)
                    ],
                },
            )
        )
    return _fig(
        traces,
        "soft MRR, MRR and hit rate against k",
        xaxis={"title": {"text": "k"}, "dtick": 1},
        yaxis={"title": {"text": "mean, 95% bootstrap interval"}, "range": [0, 1.05]},
    )


def outcome_bars(page: RunPage) -> Figure:
    """Questions by outcome at the run's k."""
    counts = {o: 0 for o in OUTCOMES}
    for q in page.questions:
        counts[q.outcome] += 1
    shown = [o for o in OUTCOMES if counts[o]]
    bar = go.Bar(
        x=shown,
        y=[counts[o] for o in shown],
        marker={"color": [OUTCOME_COLOURS[o] for o in shown]},
    )
    return _fig([bar], f"questions by outcome at k={page.run.k}", height=300)


# ---------------------------------------------------------------- sweeps


def forest_plot(page: SweepPage) -> Figure:
    """Each trial's paired difference to the best with its 95% bootstrap interval; ties
    (cannot be told apart from the best) in blue, the rest in grey."""
    rows = page.forest
    ties = {r.number for r in page.leaderboard if r.tie}
    labels = [f"trial {r.trial}" for r in rows]
    trace = go.Scatter(
        x=[r.mean for r in rows],
        y=labels,
        mode="markers",
        marker={"color": ["#2c7bb6" if r.trial in ties else "#888" for r in rows], "size": 9},
        error_x={
            "type": "data",
            "symmetric": False,
            "array": [r.high - r.mean for r in rows],
            "arrayminus": [r.mean - r.low for r in rows],
        },
        hovertemplate="%{y}: %{x:.3f}<extra></extra>",
    )
    objective = page.sweep.objective[0] if page.sweep.objective else ""
    return _fig(
        [trace],
        f"{objective}: trial minus the best (trial {page.best})",
        height=max(260, 28 * len(rows) + 100),
        xaxis={"title": {"text": "trial - best (95% paired bootstrap)"}, "zeroline": True},
        yaxis={"autorange": "reversed"},
        shapes=[ZERO_LINE],
    )


def importance_bars(page: SweepPage) -> Figure:
    """sweep.json's parameter importances (PED-ANOVA shares of the first objective)."""
    items = sorted(page.importances.items(), key=lambda kv: kv[1])
    bar = go.Bar(x=[v for _, v in items], y=[k for k, _ in items], orientation="h")
    objective = page.sweep.objective[0] if page.sweep.objective else ""
    return _fig(
        [bar],
        f"parameter importance (PED-ANOVA, {objective})",
        height=max(220, 40 * len(items) + 100),
        xaxis={"title": {"text": "share of the objective's variation"}, "range": [0, 1]},
    )


def heatmap(page: SweepPage) -> Figure:
    """Question x trial outcomes: one row per trial, one column per question; clicking a
    cell opens the chunks that trial retrieved for that question (page script)."""
    h = page.heatmap
    n = len(OUTCOMES)
    scale = []
    for i, o in enumerate(OUTCOMES):
        scale += [[i / n, OUTCOME_COLOURS[o]], [(i + 1) / n, OUTCOME_COLOURS[o]]]
    text = [[OUTCOMES[v] for v in row] for row in h.outcome]
    trace = go.Heatmap(
        z=[list(row) for row in h.outcome],
        x=list(h.questions),
        y=[f"trial {t}" for t in h.trials],
        zmin=-0.5,
        zmax=n - 0.5,
        colorscale=scale,
        text=text,
        xgap=1,
        ygap=1,
        hovertemplate="%{y}, question %{x}: %{text}<extra></extra>",
        colorbar={
            "tickvals": list(range(n)),
            "ticktext": list(OUTCOMES),
            "title": {"text": "outcome"},
        },
    )
    return _fig(
        [trace],
        "outcome at each trial's k",
        height=max(300, 22 * len(h.trials) + 160),
        xaxis={"tickangle": -45, "type": "category"},
        yaxis={"autorange": "reversed", "type": "category"},
    )


def _study(page: SweepPage) -> Any:
    """An in-memory Optuna study holding the sweep's complete trials (from trials.jsonl),
    with distributions inferred from the values seen: numbers as ranges, others as
    categories."""
    import optuna

    trials = [t for t in page.trials if t.state == "complete" and t.values]
    seen: dict[str, list[Any]] = {}
    for t in trials:
        for name, value in t.params.items():
            seen.setdefault(name, []).append(value)
    dists: dict[str, Any] = {}
    for name, values in seen.items():
        if all(isinstance(v, int) and not isinstance(v, bool) for v in values):
            dists[name] = optuna.distributions.IntDistribution(min(values), max(values))
        elif all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in values):
            dists[name] = optuna.distributions.FloatDistribution(min(values), max(values))
        else:
            choices = sorted({json.dumps(v) for v in values})
            dists[name] = optuna.distributions.CategoricalDistribution(
                [json.loads(c) for c in choices]
            )
    verbosity = optuna.logging.get_verbosity()
    optuna.logging.set_verbosity(optuna.logging.ERROR)  # no "A new study created" line
    try:
        study = optuna.create_study(
            directions=[cast(Direction, d) for d in page.sweep.directions]  # as recorded
        )
    finally:
        optuna.logging.set_verbosity(verbosity)
    for t in trials:
        study.add_trial(
            optuna.trial.create_trial(
                params=t.params,
                distributions={n: dists[n] for n in t.params},
                values=t.values,
            )
        )
    return study


def optuna_figures(page: SweepPage) -> dict[str, Figure]:
    """Optuna's optimisation history, slice plots and parallel coordinates of the first
    objective, and the Pareto front when there are two; {} with no complete trial."""
    import optuna.visualization as vis

    study = _study(page)
    if not study.trials:
        return {}
    objective = page.sweep.objective
    multi = len(objective) > 1
    target: Callable[[Any], float] | None = (lambda t: t.values[0]) if multi else None
    name = objective[0]
    figs: dict[str, Any] = {
        "history": vis.plot_optimization_history(study, target=target, target_name=name),
        "slice": vis.plot_slice(study, target=target, target_name=name),
    }
    if len(page.params) >= 2:
        figs["parallel"] = vis.plot_parallel_coordinate(
            study, params=list(page.params), target=target, target_name=name
        )
    if multi:
        figs["pareto"] = vis.plot_pareto_front(study, target_names=list(objective))
    out = {}
    for key, fig in figs.items():
        fig.layout.width = None  # Optuna's slice plot is 300 px a parameter: fit the page
        fig.update_layout(height=420 if key != "slice" else 380, **_LAYOUT)
        out[key] = to_json(fig)
    return out


def validation_sweep_scatter(page: SweepPage) -> Figure:
    """Each trial's metric by the judge against by the labels (validate_sweep's rows)."""
    v = page.validation
    assert v is not None
    rows = v.rows
    trace = go.Scatter(
        x=[r.judge for r in rows],
        y=[r.human for r in rows],
        text=[f"trial {r.number}" for r in rows],
        mode="markers+text",
        textposition="top center",
    )
    return _fig(
        [trace],
        f"{v.metric}@k by the judge and by the labels (Kendall tau {v.kendall_tau:.3f})",
        xaxis={"title": {"text": "judge"}},
        yaxis={"title": {"text": "labels"}},
    )


# ---------------------------------------------------------------- comparisons


def compare_bars(page: ComparePage) -> Figure:
    """The headline metrics at the shared k, one group of bars per run."""
    shown = [m for m in page.metrics if m.metric.split("@")[0] in VALIDATED_METRICS]
    traces = [
        go.Bar(
            name=run.label,
            hovertext=run.name,
            x=[m.metric for m in shown],
            y=[m.values[i] for m in shown],
        )
        for i, run in enumerate(page.runs)
    ]
    return _fig(traces, f"metrics at k={page.k}", barmode="group", yaxis={"range": [0, 1.05]})


def compare_forest(page: ComparePage) -> Figure:
    """Every run's paired difference to the first run per metric, with 95% intervals."""
    rows = [d for d in page.differences if not d.metric.startswith("context_chars")]
    traces = []
    for i, run in enumerate(page.runs[1:], 1):
        mine = [d for d in rows if d.run == i]
        traces.append(
            go.Scatter(
                name=f"{run.label} - [0]",
                x=[d.mean for d in mine],
                y=[d.metric for d in mine],
                mode="markers",
                error_x={
                    "type": "data",
                    "symmetric": False,
                    "array": [d.high - d.mean for d in mine],
                    "arrayminus": [d.mean - d.low for d in mine],
                },
            )
        )
    return _fig(
        traces,
        "difference to [0], 95% paired bootstrap",
        height=max(300, 26 * len({d.metric for d in rows}) + 120),
        yaxis={"autorange": "reversed", "type": "category"},
        shapes=[ZERO_LINE],
    )


def page_figures(page: Page) -> dict[str, Figure]:
    """Every figure of a page, by the id its placeholder carries."""
    if isinstance(page, RunPage):
        return {"curves": metric_curves(page), "outcomes": outcome_bars(page)}
    if isinstance(page, ComparePage):
        return {"compare-bars": compare_bars(page), "compare-forest": compare_forest(page)}
    figs: dict[str, Figure] = {}
    if page.forest:
        figs["forest"] = forest_plot(page)
    figs.update(optuna_figures(page))
    if page.importances:
        figs["importance"] = importance_bars(page)
    if page.heatmap.trials and page.heatmap.questions:
        figs["heatmap"] = heatmap(page)
    if page.validation is not None and page.validation.rows:
        figs["validation"] = validation_sweep_scatter(page)
    return figs
