"""Analyses of finished runs and sweeps: compare, validate against labels, judge-check,
labelling by hand, TREC export."""

from harness.analysis.calibrate import calibrate, fit_platt, labelled_pairs
from harness.analysis.compare import Comparison, compare_runs
from harness.analysis.export import export_trec
from harness.analysis.judge_check import injection_check, judge_check, length_bias
from harness.analysis.label import label_run
from harness.analysis.validate import read_qrels, validate_run, validate_sweep

__all__ = [
    "Comparison",
    "calibrate",
    "compare_runs",
    "export_trec",
    "fit_platt",
    "injection_check",
    "judge_check",
    "label_run",
    "labelled_pairs",
    "length_bias",
    "read_qrels",
    "validate_run",
    "validate_sweep",
]
