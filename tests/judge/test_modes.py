"""The judging methods beyond pointwise yes/no: graded, extractive and ensemble."""

from __future__ import annotations

import math

import pytest

from harness.config import CriteriaConfig
from harness.judge import JudgeStats, judge_pairs
from harness.judge.chat import ChatJudge
from harness.judge.markdown import strip_markdown
from harness.judge.parsing import (
    MalformedOutput,
    grade_distribution,
    p_none,
    parse_extract,
    parse_grade,
    split_sentences,
)
from harness.judge.prompts import grammar_extract
from harness.testing import Act, FakeOpenAI

PASSAGE = (
    "The allotment opens at 7 am. The hive inspection is every Saturday at 9 am! "
    "Bring a veil.\nCompost is turned every two weeks."
)
Q = "When is the hive inspection?"
CRITERIA = CriteriaConfig()


def test_parse_grade():
    assert parse_grade("2") == 2
    assert parse_grade(" 3.") == 3
    assert parse_grade("Grade: 1") == 1
    with pytest.raises(MalformedOutput):
        parse_grade("very relevant")


def test_grade_distribution_from_hand_made_logprobs():
    top = [
        ("2", math.log(0.5)),
        ("3", math.log(0.2)),
        ("1", math.log(0.2)),
        (" 0", math.log(0.05)),
        ("x", math.log(0.05)),
    ]
    dist = grade_distribution(top)
    assert dist is not None
    # renormalised over the four digits: 0.05, 0.2, 0.5, 0.2 over 0.95
    assert dist == pytest.approx([0.05 / 0.95, 0.2 / 0.95, 0.5 / 0.95, 0.2 / 0.95])
    expected_grade = sum(g * p for g, p in enumerate(dist))
    assert expected_grade == pytest.approx((0.2 + 1.0 + 0.6) / 0.95)
    assert sum(dist[1:]) == pytest.approx(0.9 / 0.95)  # P(relevant) = P(grade >= 1)
    assert sum(dist[2:]) == pytest.approx(0.7 / 0.95)  # P(complete) = P(grade >= 2)
    assert grade_distribution([("yes", 0.0)]) is None
    assert grade_distribution(None) is None


def test_split_sentences():
    assert split_sentences(PASSAGE) == [
        "The allotment opens at 7 am.",
        "The hive inspection is every Saturday at 9 am!",
        "Bring a veil.",
        "Compost is turned every two weeks.",
    ]


def test_parse_extract_accepts_only_verbatim_copies():
    assert parse_extract("NONE", PASSAGE) == (False, "")
    assert parse_extract("none", PASSAGE) == (False, "")
    ok = parse_extract("the hive inspection is every  Saturday at 9 am", PASSAGE)
    assert ok == (True, "the hive inspection is every  Saturday at 9 am")
    # a sentence that is not in the passage is no answer, whatever it says
    invented = parse_extract("The hive inspection is every Sunday at 10 am.", PASSAGE)
    assert invented == (False, "The hive inspection is every Sunday at 10 am.")
    with pytest.raises(MalformedOutput):
        parse_extract("  ", PASSAGE)


def test_p_none_and_the_grammar():
    sentences = split_sentences(PASSAGE)
    top = [("NONE", math.log(0.3)), ("The", math.log(0.6)), ("Br", math.log(0.1))]
    assert p_none(top, sentences) == pytest.approx(0.3)
    # a token that could begin NONE and a sentence alike is left out
    both = ["Nine hives.", "The bees."]
    assert p_none([("N", math.log(0.5)), ("The", math.log(0.5))], both) == 0.0
    g = grammar_extract(['He said "hi".', "NONE"])
    assert g.startswith('root ::= "NONE" | ') and '\\"hi\\"' in g


def _judge(server: FakeOpenAI, mode: str, **kw) -> ChatJudge:
    return ChatJudge(
        base_url=server.base_url, model="fake", api_key="sk-test-not-a-key", mode=mode, **kw
    )


def test_graded_mode_reads_the_grade_distribution():
    top = (("2", math.log(0.6)), ("3", math.log(0.1)), ("1", math.log(0.2)), ("0", math.log(0.1)))
    with FakeOpenAI(lambda n, p: Act(text="2", top_logprobs=top)) as server:
        rel, comp = _judge(server, "graded").grade_both(Q, PASSAGE, CRITERIA)
        assert server.requests == 1  # one call for both criteria
    assert rel.value is True and rel.p_yes == pytest.approx(0.9)
    assert comp.value is True and comp.p_yes == pytest.approx(0.7)
    assert rel.distribution == pytest.approx((0.1, 0.2, 0.6, 0.1))
    assert rel.calls == 1 and comp.calls == 0 and rel.reason == "grade 2"
    with FakeOpenAI(lambda n, p: Act(text="1")) as server:  # no logprobs: the grade decides
        rel, comp = _judge(server, "graded", complete_grade=1).grade_both(Q, PASSAGE, CRITERIA)
    assert (rel.value, comp.value, rel.p_yes) == (True, True, None)


def test_extractive_mode_needs_a_verbatim_sentence():
    answers = iter(
        ["yes", "The hive inspection is every Saturday at 9 am!", "yes", "It is on Sunday."]
    )
    with FakeOpenAI(lambda n, p: Act(text=next(answers))) as server:
        judge = _judge(server, "extractive")
        pairs = [(Q, PASSAGE), ("When is the shed open?", PASSAGE)]
        first, second = judge_pairs(
            pairs, judge, criteria=CRITERIA, cache=None, stats=JudgeStats(), concurrency=1
        )
    assert first.complete.value is True and first.grade == 2
    assert first.complete.evidence == "The hive inspection is every Saturday at 9 am!"
    assert second.complete.value is False and second.grade == 1
    assert "not in the passage" in second.complete.reason


def test_ensemble_averages_two_wordings():
    def behave(n, prompt):
        main = "Does the passage meet the criterion" in prompt
        return Act(
            text="yes" if main else "no",
            top_logprobs=(
                ("yes", math.log(0.8 if main else 0.3)),
                ("no", math.log(0.2 if main else 0.7)),
            ),
        )

    with FakeOpenAI(behave) as server:
        v = _judge(server, "ensemble").grade(Q, PASSAGE, "relevant", CRITERIA.relevant)
        assert server.requests == 2
    assert v.p_yes == pytest.approx((0.8 + 0.3) / 2) and v.value is True
    assert v.calls == 2 and "main: yes" in v.raw and "reworded: no" in v.raw


MARKDOWN = (
    "## Expenses\n\n"
    "Claims go through the portal.\n\n"
    "- **Receipts are kept for seven years.**\n"
    "1. File the claim within *30 days* of the purchase.\n"
    "See [the `expenses` policy](https://example.org/policy) for details."
)


def test_strip_markdown_keeps_the_way_back_to_the_passage():
    s = strip_markdown(MARKDOWN)
    assert s.text == (
        "Expenses\n\n"
        "Claims go through the portal.\n\n"
        "Receipts are kept for seven years.\n"
        "File the claim within 30 days of the purchase.\n"
        "See the expenses policy for details."
    )
    assert len(s.where) == len(s.text)
    assert all(MARKDOWN[i] == c for i, c in zip(s.where, s.text, strict=True))
    at = s.text.index("Receipts")
    a, b = s.original_span(at, at + len("Receipts are kept for seven years."))
    assert MARKDOWN[a:b] == "Receipts are kept for seven years."
    plain = "snake_case_name stays, and so does 2 * 3 * 4. Plain text."
    assert strip_markdown(plain).text == plain
    assert strip_markdown(PASSAGE).text == PASSAGE


RST = (
    "Installing\n==========\n\n.. _install:\n\n.. note:: Run it in a virtual environment.\n\n"
    "See :ref:`the upgrade guide <upgrading>` and `PyPI <https://pypi.org>`_ for **details**.\n"
    "Use ``pip install tool``. For example::\n\n    pip install tool\n\n"
    "A :func:`run` call returns 2.\n"
)


def test_strip_markdown_takes_restructuredtext_markup_out_too():
    s = strip_markdown(RST)
    assert s.text == (
        "Installing\n\n\nRun it in a virtual environment.\n\n"
        "See the upgrade guide and PyPI for details.\nUse pip install tool. For example:\n\n"
        "    pip install tool\n\nA run call returns 2.\n"
    )
    assert all(RST[i] == c for i, c in zip(s.where, s.text, strict=True))
    assert "See the upgrade guide and PyPI for details." in split_sentences(s.text)
    ok, evidence = parse_extract("See the upgrade guide and PyPI for details.", RST)
    assert ok and evidence.startswith("See :ref:`the upgrade guide <upgrading>`")
    # markdown's own double-backtick code and a table's rule are not read as rst links
    table = "| a | b |\n|---|---|\n| ``x`` | 1 |"
    assert strip_markdown(table).text == "| a | b |\n|---|---|\n| x | 1 |"
    # nor markdown's emphasis around code, a fence, a docstring's quotes, a ratio
    assert strip_markdown("_see the `config.toml`_ file").text == "see the config.toml file"
    fenced = '```python\n"""Doc."""\nx = 1\n```\n~~~\ny\n~~~'
    assert strip_markdown(fenced).text == fenced
    assert strip_markdown("Ratio 1:2:`x`, :math:`a < b`").text == "Ratio 1:2:x, a < b"


def test_parse_extract_finds_a_copy_of_the_stripped_text_in_the_markdown():
    ok = parse_extract("File the claim within 30 days of the purchase.", MARKDOWN)
    assert ok == (True, "File the claim within *30 days* of the purchase.")
    assert parse_extract("See the expenses policy for details.", MARKDOWN)[0] is True
    assert parse_extract("Receipts are kept for ten years.", MARKDOWN)[0] is False


def test_extractive_mode_on_markdown_bold_and_list_text_finds_the_sentence():
    """The judge is shown the passage without markup and answers a sentence of it (as a
    grammar over the stripped sentences would make it): the verdict is complete, with the
    passage's own text as evidence."""
    prompts: list[str] = []
    answers = iter(
        [
            "yes",
            "Receipts are kept for seven years.",
            "yes",
            "File the claim within 30 days of the purchase.",
        ]
    )

    def behave(n, prompt):
        prompts.append(prompt)
        return Act(text=next(answers))

    with FakeOpenAI(behave) as server:
        judge = _judge(server, "extractive")
        pairs = [
            ("How long are receipts kept?", MARKDOWN),
            ("When must a claim be filed?", MARKDOWN),
        ]
        bold, listed = judge_pairs(
            pairs, judge, criteria=CRITERIA, cache=None, stats=JudgeStats(), concurrency=1
        )
    assert bold.complete.value is True and bold.grade == 2
    assert listed.complete.value is True and listed.grade == 2
    assert bold.complete.evidence == "Receipts are kept for seven years."
    assert listed.complete.evidence == "File the claim within *30 days* of the purchase."
    extract_prompts = [p for p in prompts if "Copy, word for word" in p]
    assert len(extract_prompts) == 2
    assert all("**" not in p and "- " not in p and "](" not in p for p in extract_prompts)
    sentences = split_sentences(strip_markdown(MARKDOWN).text)
    assert "Receipts are kept for seven years." in sentences
    assert "Receipts are kept for seven years." in grammar_extract(sentences)


def test_graded_scale_is_listed_from_the_highest_grade_and_its_version_is_bumped():
    from harness.judge.prompts import GRADE_SCALE, PROMPT_VERSION, prompt_version

    firsts = [line.split(" = ")[0] for line in GRADE_SCALE.splitlines()]
    assert firsts == ["3", "2", "1", "0"]
    assert prompt_version("graded") not in (PROMPT_VERSION, "v2")
    assert prompt_version("extractive") not in (PROMPT_VERSION, "v2")
    assert prompt_version("pointwise") == PROMPT_VERSION  # its cached verdicts stay valid
    with FakeOpenAI(lambda n, p: Act(text="2")) as server:
        graded = _judge(server, "graded")
    assert graded.spec.args["prompt_version"] == prompt_version("graded")
    assert f'"prompt_version": "{prompt_version("graded")}"' in graded.identity()
