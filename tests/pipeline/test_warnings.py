"""A run's saturation warning advises only what was measured to help (#22): the soft
metrics where the judge gave probabilities, pointwise judging for a judge in a mode that
says yes more often, labels, a stronger judge; never the graded mode, which measured
more saturated than pointwise on every collection of bench_fidelity."""

from __future__ import annotations

import pytest

from harness.pipeline.run import VerdictTally


def _saturated(mode: str, with_p: int) -> str:
    tally = VerdictTally(mode=mode)
    tally.judged, tally.complete, tally.with_p = 20, 19, with_p
    (warning,) = tally.warnings()
    return warning


@pytest.mark.parametrize("mode", ["pointwise", "ensemble", "graded", "criteria", "both"])
def test_the_saturation_warning_never_advises_the_graded_mode(mode):
    warning = _saturated(mode, with_p=30)
    assert warning.startswith("the judge called 95% of 20 judged chunks complete")
    assert '"graded"' not in warning
    assert "compare settings by soft_mrr@k" in warning
    assert "harness label, harness calibrate" in warning
    advised = 'use judge.mode = "pointwise"' in warning
    assert advised == (mode in ("graded", "criteria"))


def test_without_probabilities_the_warning_leaves_the_soft_metrics_out():
    # without logprobs the soft metrics equal the hard ones: no use advising them
    warning = _saturated("pointwise", with_p=0)
    assert "soft_mrr" not in warning
    assert warning.endswith(
        "cannot separate settings; calibrate the judge on a few labels (harness label, "
        "harness calibrate), or use a stronger judge"
    )


def test_no_saturation_warning_below_the_share_or_on_few_chunks():
    below = VerdictTally(mode="graded")
    below.judged, below.complete, below.with_p = 20, 17, 30  # 85%: not above the share
    few = VerdictTally(mode="graded")
    few.judged, few.complete, few.with_p = 9, 9, 18  # fewer than 10 judged
    assert below.warnings() == [] and few.warnings() == []
