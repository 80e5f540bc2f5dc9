"""Generation replies from a hostile or broken model (#26 items 14 and 15): reading a reply
is linear in its length, deep nesting is a malformed reply (never a RecursionError), and
an over-long question is dropped, not kept."""

from __future__ import annotations

import json
import time

from harness.generate import prompts
from harness.generate.critique import CUT_OFF, MAX_QUESTION_CHARS, parse_critique, parse_draft
from harness.testing import Act, FakeOpenAI
from tests.generate.test_generate import MARKED, _doc_text, _generate, scripted_model, write_corpus

MB = 1_000_000


def test_question_extraction_is_linear_in_the_reply():
    """12,000 `{` took about 5 s when every brace rescanned the rest of the reply; a
    megabyte of each hostile shape now reads in well under a second or two."""
    shapes = [
        "{" * 12_000,
        "{" * MB,
        '{"a":' * (MB // 5),
        "[" * MB + "{",
        '{"q": "' + "}" * MB,
        "x {" * (MB // 3),
    ]
    started = time.perf_counter()
    for text in shapes:
        assert parse_draft(text) in ("the reply is not a JSON object", CUT_OFF)
        assert parse_critique(text) == "the critique is not a JSON object"
    assert time.perf_counter() - started < 30


def test_deep_nesting_is_malformed_not_a_recursion_error():
    deep = '{"question": "Q?", "answer": "A", "x": ' + "[" * 100_000 + "]" * 100_000 + "}"
    assert parse_draft(deep) == "the reply is not a JSON object"
    # an answer after deep garbage is still found, and shallow nesting is read as before
    found = parse_draft("[" * 50_000 + ' {"question": "Q?", "answer": "A"}')
    assert not isinstance(found, str) and found.question == "Q?"
    nested = parse_draft('{"question": "Q?", "answer": "A", "meta": {"a": [1, {"b": 2}]}}')
    assert not isinstance(nested, str) and nested.answer == "A"


def test_a_reply_cut_off_at_its_token_limit_says_so():
    """A grammar fixes a reply's shape, not its length: a reply that opens its object and
    runs out of tokens is told apart from a reply of another shape."""
    assert parse_draft('{"question": "How many days of leave do I get wh') == CUT_OFF
    assert parse_draft('Sure! {"question": "Q?", "answer": [1, {"a": 2') == CUT_OFF
    assert parse_draft("no JSON here") == "the reply is not a JSON object"
    assert parse_draft('{"question": "Q?"] trailing') == "the reply is not a JSON object"
    deep = "{" + "[" * 100 + "]" * 100 + "}"
    assert parse_draft(deep) == "the reply is not a JSON object"
    # a grammar cut a question at its bound: mid-word, so not kept
    cut = json.dumps(
        {"question": "harrogate test and roll-out plan with field tria", "answer": "a"}
    )
    assert parse_draft(cut, bound=48).startswith("the question filled its 48-character bound")
    assert parse_draft(cut, bound=49).startswith("the question filled")  # one short of it
    assert not isinstance(parse_draft(cut, bound=48 + 9), str)
    assert not isinstance(parse_draft(cut), str)  # no grammar, no bound
    # just short of the bound, on a word that cannot end a query: the next word's token
    # did not fit (seen with the local model on the handbook, 99 characters of 100)
    short = (
        "software installation and sick leave and parental leave and backup and "
        "peripherals requirements for"
    )
    reply = json.dumps({"question": short, "answer": "a"})
    assert parse_draft(reply, bound=100).startswith("the question filled its 100-character")
    assert not isinstance(parse_draft(reply, bound=100 + 16), str)  # far enough from it
    ends_on_a_noun = json.dumps({"question": short + " staff", "answer": "a"})
    assert not isinstance(parse_draft(ends_on_a_noun, bound=105 + 9), str)
    # a word cut within a few characters of the bound (the local model on technical
    # documentation, 99 characters of 100): not kept, unless the query ends a sentence
    mid_word = "what is the measure of time spent working, excluding time spent on retries or "
    mid_word += "waiting on shared res"
    reply = json.dumps({"question": mid_word, "answer": "working_limit"})
    assert parse_draft(reply, bound=100).startswith("the question filled its 100-character")
    assert parse_draft(reply, bound=99 + 8).startswith("the question filled its")
    assert not isinstance(parse_draft(reply, bound=99 + 9), str)
    full_width = json.dumps({"question": "x" * 95 + "\uff1f", "answer": "a"})
    assert not isinstance(parse_draft(full_width, bound=100), str)  # ends with ？
    finished = json.dumps({"question": mid_word[:-4] + " resources?", "answer": "a"})
    assert not isinstance(parse_draft(finished, bound=len(mid_word) + 7 + 1), str)
    assert not isinstance(parse_draft(reply), str)


def test_grammar_bounds_fit_each_calls_token_budget():
    """Each grammar's strings are bounded so that the whole object fits in the call's
    max_tokens at CHARS_PER_TOKEN: a bound past the budget made the tiny local model run
    out of tokens mid-string (a summary of up to 200 characters in 60 tokens)."""
    for budget, fields in ((72, 1), (72, 2), (40, 1), (160, 2), (160, 3), (1000, 2)):
        chars = prompts.field_chars(budget, fields)
        assert chars <= prompts.MAX_FIELD_CHARS
        assert fields * (chars / prompts.CHARS_PER_TOKEN + prompts.FIELD_TOKENS) <= budget
    assert prompts.field_chars(160, 2) == 180 and prompts.field_chars(1000, 2) == 200
    assert "{1,160}" in prompts.object_grammar(
        "summary", max_tokens=prompts.QUERY_SUMMARY_MAX_TOKENS
    )
    assert "{1,180}" in prompts.generation_grammar(1, 160)
    assert "{1,113}" in prompts.generation_grammar(2, 160)


def test_an_over_long_question_or_paraphrase_is_malformed():
    long_q = "What " + "x" * MAX_QUESTION_CHARS + "?"
    assert parse_draft(json.dumps({"question": long_q, "answer": "a"})) == (
        f"the question has {len(long_q)} characters (limit {MAX_QUESTION_CHARS})"
    )
    reply = json.dumps({"question": "Q?", "answer": "a", "paraphrase": "y" * MB})
    assert parse_draft(reply) == f"the paraphrase has {MB} characters (limit {MAX_QUESTION_CHARS})"
    ok = parse_draft(json.dumps({"question": "q" * MAX_QUESTION_CHARS, "answer": "a"}))
    assert not isinstance(ok, str)


def _hostile_model(n: int, prompt: str) -> Act:
    """The scripted model, except for passages marked DEEP, HUGE and BRACES."""
    if "Rate the question" not in prompt:
        if "MARK-DEEP" in prompt:
            return Act(text='{"question": ' + "[" * 200_000 + "]" * 200_000 + "}")
        if "MARK-HUGE" in prompt:
            return Act(text=json.dumps({"question": "W" * MB + "?", "answer": "a"}))
        if "MARK-BRACES" in prompt:
            return Act(text="{" * 200_000)
    return scripted_model(n, prompt)


def test_generate_drops_hostile_replies_and_keeps_the_rest(tmp_path):
    docs = {
        "plain-one": MARKED["plain-one"],
        "plain-two": MARKED["plain-two"],
        "deep": _doc_text("deep", 1, "MARK-DEEP"),
        "huge": _doc_text("huge", 1, "MARK-HUGE"),
        "braces": _doc_text("braces", 1, "MARK-BRACES"),
    }
    write_corpus(tmp_path, docs)
    with FakeOpenAI(_hostile_model) as fake:
        report = _generate(tmp_path, fake, 8, types=("simple",))
    # The chat client refuses a reply longer than max_tokens allows before it is parsed
    # (an error); what reaches the parser and is hostile is malformed. Either way dropped.
    assert report.counts["malformed"] + report.counts["errors"] >= 3
    kept = (tmp_path / "q" / "generated.jsonl").read_text(encoding="utf-8")
    assert "WWWW" not in kept and len(kept) < 100_000
    for line in kept.splitlines():
        assert len(json.loads(line)["text"]) <= MAX_QUESTION_CHARS
    report_file = (tmp_path / "q" / "generated.report.json").read_text(encoding="utf-8")
    assert len(report_file) < 200_000  # a dropped reply is quoted, cut at 200 characters
