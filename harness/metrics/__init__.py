"""Retrieval metrics from judge verdicts, and the statistics around them.

- `ir`: the per-question metrics (small pure functions, formulas and edge cases in their
  docstrings), the metric registry `METRICS`, and aggregation over questions;
- `ids`: the `name@k` parser;
- `overlap`: a question's word overlap with a passage, and a ranking's regret;
- `stats`: one bootstrap, paired differences, agreement (kappa, tau) and PPI.
"""

from harness.metrics.ids import (
    OBJECTIVE_NAMES,
    direction,
    hard_twin,
    metric_key,
    parse_metric_id,
)
from harness.metrics.ir import (
    COUNTS,
    GRADE_COMPLETE,
    GRADE_RELEVANT,
    METRIC_NAMES,
    METRICS,
    Metric,
    aggregate,
    average_precision,
    context_chars,
    failure_count_name,
    hit_rate,
    mrr,
    ndcg,
    precision,
    question_metrics,
    relevancy_mrr,
    relevancy_mrr_found,
    relevant_share,
    soft_hit_rate,
    soft_mrr,
    soft_relevancy_mrr,
)
from harness.metrics.overlap import content_words, regret, word_overlap
from harness.metrics.stats import (
    CI_METRICS,
    aggregate_ci,
    auc,
    bootstrap_ci,
    bootstrap_mean_ci,
    cohen_kappa,
    confusion,
    holm,
    kendall_tau,
    paired_bootstrap,
    paired_permutation_p,
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
    "average_precision",
    "bootstrap_ci",
    "bootstrap_mean_ci",
    "cohen_kappa",
    "confusion",
    "content_words",
    "context_chars",
    "direction",
    "failure_count_name",
    "hard_twin",
    "hit_rate",
    "holm",
    "kendall_tau",
    "metric_key",
    "mrr",
    "ndcg",
    "paired_bootstrap",
    "paired_permutation_p",
    "parse_metric_id",
    "ppi_mean",
    "precision",
    "question_metrics",
    "regret",
    "relevancy_mrr",
    "relevancy_mrr_found",
    "relevant_share",
    "soft_hit_rate",
    "soft_mrr",
    "soft_relevancy_mrr",
    "word_overlap",
]
