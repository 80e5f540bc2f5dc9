"""Retrieval metrics from judge verdicts, and the statistics around them.

- `ir`: the per-question metrics (small pure functions, formulas and edge cases in their
  docstrings), the metric registry `METRICS`, and aggregation over questions;
- `ids`: the `name@k` parser;
- `stats`: one bootstrap, paired differences, agreement (kappa, tau) and PPI.
"""

from harness.metrics.ids import OBJECTIVE_NAMES, direction, metric_key, parse_metric_id
from harness.metrics.ir import (
    COUNTS,
    GRADE_COMPLETE,
    GRADE_RELEVANT,
    METRIC_NAMES,
    METRICS,
    Metric,
    aggregate,
    context_chars,
    hit_rate,
    mrr,
    ndcg,
    precision,
    question_metrics,
    relevancy_mrr,
    soft_hit_rate,
    soft_mrr,
    soft_relevancy_mrr,
)
from harness.metrics.stats import (
    CI_METRICS,
    aggregate_ci,
    auc,
    bootstrap_ci,
    bootstrap_mean_ci,
    cohen_kappa,
    confusion,
    kendall_tau,
    paired_bootstrap,
    ppi_mean,
)

__all__ = [
    "CI_METRICS",
    "COUNTS",
    "GRADE_COMPLETE",
    "GRADE_RELEVANT",
    "METRICS",
    "METRIC_NAMES",
    "OBJECTIVE_NAMES",
    "Metric",
    "aggregate",
    "aggregate_ci",
    "auc",
    "bootstrap_ci",
    "bootstrap_mean_ci",
    "cohen_kappa",
    "confusion",
    "context_chars",
    "direction",
    "hit_rate",
    "kendall_tau",
    "metric_key",
    "mrr",
    "ndcg",
    "paired_bootstrap",
    "parse_metric_id",
    "ppi_mean",
    "precision",
    "question_metrics",
    "relevancy_mrr",
    "soft_hit_rate",
    "soft_mrr",
    "soft_relevancy_mrr",
]
