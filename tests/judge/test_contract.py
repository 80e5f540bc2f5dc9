"""One contract every judge passes: the scripted judge, the chat judge against a fake
OpenAI-compatible endpoint, and the chat judge against a real llama.cpp server.

The contract is the `Judge` protocol as its callers use it: a spec and an identity that
change with the mode, one criterion, both criteria, a list of passages, other options,
and `judge_pairs` in every mode, with failed verdicts never read as "no".
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from harness.config import JUDGE_MODES, CriteriaConfig
from harness.judge import Judge, JudgeStats, judge_pairs
from harness.judge.chat import ChatJudge
from harness.testing import FakeOpenAI, answer_any
from harness.types import ComponentSpec, CriterionVerdict
from tests.conftest import ScriptedJudge

QUESTION = "When is the hive inspection?"
PASSAGES = [
    "The hive inspection is every Saturday at 9 am; bring a veil.",
    "Compost must be turned every two weeks.",
    "The tool shed key is kept with the treasurer.",
]
CRITERIA = CriteriaConfig()


class AwaitingScripted(ScriptedJudge):
    """The scripted judge as a backend written the preferred way: an `async agrade`."""

    async def agrade(self, question, chunk_text, criterion, criterion_text):
        return ScriptedJudge.grade(self, question, chunk_text, criterion, criterion_text)


@pytest.fixture(
    params=[
        "scripted",
        "scripted-async",
        "fake-endpoint",
        pytest.param("llama-server", marks=pytest.mark.llama),
    ]
)
def judge(request: pytest.FixtureRequest) -> Iterator[Judge]:
    if request.param == "scripted":
        yield ScriptedJudge()
    elif request.param == "scripted-async":
        yield AwaitingScripted()
    elif request.param == "fake-endpoint":
        with FakeOpenAI(answer_any) as server:
            yield ChatJudge(base_url=server.base_url, model="fake", api_key="sk-test-not-a-key")
    else:
        server = request.getfixturevalue("llama_server")
        yield ChatJudge(base_url=server.base_url, model="smollm2-135m", api_key="", grammar=True)


def _well_formed(v: CriterionVerdict, criterion: str) -> None:
    assert v.criterion == criterion
    # a failed verdict is never "no": value None exactly when there is an error
    assert (v.value is None) == (v.error is not None)
    assert v.p_yes is None or 0.0 <= v.p_yes <= 1.0


def test_declares_the_whole_surface(judge):
    assert isinstance(judge, Judge)
    assert isinstance(judge.spec, ComponentSpec) and judge.spec.name
    assert judge.mode in JUDGE_MODES
    assert judge.concurrency >= 1
    assert isinstance(judge.identity(), str) and judge.identity() == judge.identity()


def test_grades_one_criterion(judge):
    for criterion, text in (("relevant", CRITERIA.relevant), ("complete", CRITERIA.complete)):
        v = judge.grade(QUESTION, PASSAGES[0], criterion, text)
        _well_formed(v, criterion)
        assert v.error is None


def test_grades_both_criteria(judge):
    rel, comp = judge.grade_both(QUESTION, PASSAGES[0], CRITERIA)
    _well_formed(rel, "relevant")
    _well_formed(comp, "complete")
    assert rel.error is None


def test_grades_a_list_in_order(judge):
    out = judge.grade_list(QUESTION, PASSAGES, CRITERIA)
    assert len(out) == len(PASSAGES)
    for rel, comp in out:
        _well_formed(rel, "relevant")
        _well_formed(comp, "complete")


def test_other_options_are_another_judge(judge):
    before = (judge.mode, judge.identity())
    both = judge.with_options(mode="both")
    reworded = judge.with_options(variant="reworded")
    assert both.mode == "both" and both.spec.args.get("mode") == "both"
    assert reworded.mode == judge.mode
    # answers may differ, so the cache must keep them apart
    assert both.identity() != judge.identity()
    assert (judge.mode, judge.identity()) == before  # the original is unchanged


@pytest.mark.parametrize("mode", JUDGE_MODES)
def test_judge_pairs_in_every_mode(judge, mode):
    pairs = [(QUESTION, p) for p in PASSAGES] + [("Who keeps the shed key?", PASSAGES[2])]
    stats = JudgeStats()
    seen: list[int] = []
    verdicts = judge_pairs(
        pairs,
        judge.with_options(mode=mode),
        criteria=CRITERIA,
        cache=None,
        stats=stats,
        on_done=lambda i, v: seen.append(i),
    )
    assert len(verdicts) == len(pairs) and sorted(seen) == list(range(len(pairs)))
    for v in verdicts:
        _well_formed(v.relevant, "relevant")
        _well_formed(v.complete, "complete")
    assert stats.calls >= 1
