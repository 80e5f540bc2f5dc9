"""Analyses of finished runs and sweeps: compare, validate against labels, judge-check,
labelling by hand, TREC export."""

from harness.analysis.compare import Comparison, compare_runs
from harness.analysis.export import export_trec
from harness.analysis.judge_check import judge_check, length_bias
from harness.analysis.label import label_run
from harness.analysis.validate import read_qrels, validate_run, validate_sweep

__all__ = [
    "Comparison",
    "compare_runs",
    "export_trec",
    "judge_check",
    "label_run",
    "length_bias",
    "read_qrels",
    "validate_run",
    "validate_sweep",
]
