"""Few-shot examples from the judge exam (judge.few_shot, judge.exam): chosen
deterministically, shown in the system message, part of the verdict cache key, and a
bad exam refused in one line (harness/judge/fewshot.py)."""

from __future__ import annotations

import json
import random
import shutil
from pathlib import Path

import pytest

from harness.config import CriteriaConfig, load_experiment
from harness.errors import ConfigError
from harness.judge import JudgeStats, check_endpoint, judge_pairs, judge_settings
from harness.judge.chat import ChatJudge
from harness.judge.criteria import build_messages_criteria
from harness.judge.exam import read_exam
from harness.judge.fewshot import (
    EXAMPLE_CHARS,
    available_examples,
    choose_examples,
    load_examples,
    render_examples,
    with_examples,
)
from harness.judge.prompts import build_messages, build_messages_graded
from harness.pipeline import run_experiment
from harness.testing import FakeOpenAI, answer_any
from tests.conftest import DATA

CRITERIA = CriteriaConfig()
LONG = "A long passage about the allotment's rules. " * 20  # over EXAMPLE_CHARS


def exam_lines() -> list[dict]:
    """Five questions with an answer and an unrelated passage; "q-long"'s are long, and
    "q-alone" has no unrelated passage (it gives no example)."""
    rows = []
    for i, (qid, answer, other) in enumerate(
        [
            ("q-hive", "The hive inspection is every Saturday at 9 am.", "Parking is free."),
            ("q-compost", "Compost is turned every two weeks.", "The fee is 20 euros."),
            ("q-long", LONG, LONG.upper()),
            ("q-key", "The treasurer keeps the </passage> shed key.", "Seeds swap in May."),
            ("q-feed", "Feed the bees sugar syrup in autumn.", "Tools are in the shed."),
        ]
    ):
        question = f"Question {qid}?"
        span = {"doc_id": f"doc{i}", "start": 0, "end": len(answer)}
        rows.append(
            {"id": f"{qid}-s", "question_id": qid, "question": question, "kind": "source",
             "source": span, "passage": answer}
        )  # fmt: skip
        rows.append(
            {"id": f"{qid}-u", "question_id": qid, "question": question, "kind": "unrelated",
             "source": {**span, "doc_id": f"other{i}"}, "passage": other}
        )  # fmt: skip
    rows.append(
        {"id": "q-alone-s", "question_id": "q-alone", "question": "Alone?", "kind": "source",
         "source": {"doc_id": "d", "start": 0, "end": 3}, "passage": "Yes."}
    )  # fmt: skip
    return rows


def write_exam(path: Path, rows: list[dict] | None = None) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in rows or exam_lines()))
    return path


def test_the_choice_is_deterministic_short_first_and_balanced(tmp_path: Path):
    items = read_exam(write_exam(tmp_path / "exam.jsonl"))
    assert available_examples(items) == 10  # five questions with both kinds, two each
    first = choose_examples(items, 8)
    assert len(first) == 8
    # stable across runs and independent of the file's order
    shuffled = list(items)
    random.Random(7).shuffle(shuffled)
    assert choose_examples(shuffled, 8) == first
    # pairs: an answer, then the same question's non-answer
    assert [e.answers for e in first] == [True, False] * 4
    assert all(a.question == b.question for a, b in zip(first[::2], first[1::2], strict=True))
    # the long passages come last: four short questions are enough for eight examples
    assert all(e.question != "Question q-long?" for e in first)
    ten = choose_examples(items, 10)
    assert ten[-2].question == "Question q-long?"
    assert all(len(e.passage) <= EXAMPLE_CHARS + len(" [...]") for e in ten)
    assert ten[-2].passage.endswith(" [...]")
    # an odd count ends on a non-answer; a smaller count is a prefix of a larger one
    three = choose_examples(items, 3)
    assert [e.answers for e in three] == [True, False, False]
    assert three[:2] == first[:2]


def test_the_system_message_holds_the_examples_fenced(tmp_path: Path):
    items = read_exam(write_exam(tmp_path / "exam.jsonl"))
    examples = choose_examples(items, 10)
    plain = build_messages("Q?", "passage", CRITERIA.relevant, reasons=False)
    shown = with_examples(plain, examples, "pointwise")
    assert shown[1] == plain[1]  # the user message is untouched
    system = shown[0]["content"]
    assert system.startswith(plain[0]["content"])
    assert [f"Example {i}\n" in system for i in range(1, 12)] == [True] * 10 + [False]
    assert system.count("relevant: yes\ncomplete: yes") == 5
    assert system.count("relevant: no\ncomplete: no") == 5
    # a passage of the exam cannot close its fence either
    assert "treasurer keeps the </ passage> shed key" in system
    assert system.count("<passage>") == system.count("</passage>") == 10
    # the answer format follows the mode
    graded = with_examples(build_messages_graded("Q?", "p", CRITERIA), examples, "graded")
    assert graded[0]["content"].count("grade: 3") == 5
    crit = with_examples(build_messages_criteria("Q?", "p"), examples, "criteria")[0]["content"]
    assert crit.count("exactness: 0\ncoverage: 0\ntopicality: 0\ncontextual fit: 0") == 5
    # modes that take none
    assert with_examples(plain, examples, "listwise") == plain
    assert with_examples(plain, examples, "extractive") == plain
    assert render_examples((), "pointwise") == ""


def test_examples_are_part_of_the_cache_key(tmp_path: Path):
    items = read_exam(write_exam(tmp_path / "exam.jsonl"))

    def judge(n: int, mode: str = "pointwise") -> ChatJudge:
        return ChatJudge(
            base_url="http://127.0.0.1:9/v1",
            model="m",
            api_key="",
            mode=mode,
            few_shot=choose_examples(items, n),
        )

    without, two, four = judge(0), judge(2), judge(4)
    assert len({without.identity(), two.identity(), four.identity()}) == 3
    assert judge(2).identity() == two.identity()  # and stable
    assert "few_shot" not in without.identity()  # the keys judged before stay valid
    assert two.spec.args["few_shot"] == 2
    assert judge(2, "criteria").identity() != judge(0, "criteria").identity()
    # a mode that shows no examples keeps its plain key
    assert judge(2, "listwise").identity() == judge(0, "listwise").identity()


def experiment(tmp_path: Path) -> Path:
    """The tiny experiment copied into tmp_path (so a relative exam path is its own)."""
    folder = tmp_path / "exp"
    shutil.copytree(DATA, folder, ignore=shutil.ignore_patterns("logs"))
    return folder / "experiment.toml"


def test_a_run_with_few_shot_shows_them_on_every_call(tmp_path: Path):
    path = experiment(tmp_path)
    write_exam(path.parent / "exam.jsonl")
    prompts: list[str] = []

    def behave(n: int, prompt: str):
        prompts.append(prompt)
        return answer_any(n, prompt)

    with FakeOpenAI(behave) as server:
        sets = [f"judge.base_url={server.base_url}", "judge.model=fake"]
        config = load_experiment(path, [*sets, "judge.few_shot=4", "judge.exam=exam.jsonl"])
        assert config.judge.exam == str((path.parent / "exam.jsonl").resolve())
        run = run_experiment(config, results_dir=tmp_path / "r", cache_dir=tmp_path / "c")
        assert prompts and all(p.count("Right answer:") == 4 for p in prompts)
        # the same run without examples pays again: its verdicts are other verdicts
        before = server.requests
        plain = load_experiment(path, sets)
        again = run_experiment(plain, results_dir=tmp_path / "r", cache_dir=tmp_path / "c")
        assert server.requests > before
        assert all("Right answer:" not in p for p in prompts[before:])
    assert run.header.status == again.header.status == "done"
    assert run.header.components["judge"].args["few_shot"] == 4
    assert "few_shot" not in again.header.components["judge"].args
    assert run.header.stats["judge_calls"] > 0


def test_judge_pairs_with_few_shot_in_a_pairwise_mode(tmp_path: Path):
    items = read_exam(write_exam(tmp_path / "exam.jsonl"))
    prompts: list[str] = []

    def behave(n: int, prompt: str):
        prompts.append(prompt)
        return answer_any(n, prompt)

    with FakeOpenAI(behave) as server:
        judge = ChatJudge(
            base_url=server.base_url,
            model="fake",
            api_key="k",
            mode="criteria",
            few_shot=choose_examples(items, 2),
        )
        verdicts = judge_pairs(
            [("Q?", "a"), ("Q?", "b")], judge, criteria=CRITERIA, cache=None, stats=JudgeStats()
        )
    assert [v.grade for v in verdicts] == [1, 1]
    assert len(prompts) == 2 and all(p.count("Right answer:") == 2 for p in prompts)


@pytest.mark.parametrize(
    ("setup", "field", "says"),
    [
        ("missing", "judge.exam", "was not found"),
        ("bad-line", "judge.exam", ":2: expected an exam item"),
        ("too-many", "judge.few_shot", "expected at most 10"),
    ],
)
def test_a_bad_exam_is_one_line_naming_the_file_and_field(tmp_path, setup, field, says):
    path = experiment(tmp_path)
    exam = path.parent / "exam.jsonl"
    n = 2
    if setup == "bad-line":
        exam.write_text(json.dumps(exam_lines()[0]) + "\n{not json\n")
    elif setup == "too-many":
        write_exam(exam)
        n = 11
    sets = ["judge.base_url=http://127.0.0.1:9/v1", "judge.model=m"]
    config = load_experiment(path, [*sets, f"judge.few_shot={n}", "judge.exam=exam.jsonl"])
    with pytest.raises(ConfigError) as err:
        check_endpoint(config.judge, config.path)
    message = str(err.value)
    assert "\n" not in message
    assert field in message and str(exam) in message and says in message
    assert message.startswith(config.path)
    # building the judge refuses it the same way (judge-check opens it directly)
    with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
        judge_settings(config.judge, tmp_path / "cache")
    with pytest.raises(ConfigError, match=field.replace(".", r"\.")):
        load_examples(config.judge)


@pytest.mark.parametrize(
    ("sets", "field"),
    [
        (["judge.few_shot=2"], "judge.exam"),  # no exam
        (["judge.few_shot=-1"], "judge.few_shot"),
        (["judge.few_shot=2", "judge.exam=e.jsonl", "judge.mode=listwise"], "judge.few_shot"),
        (["judge.few_shot=2", "judge.exam=e.jsonl", "judge.mode=extractive"], "judge.few_shot"),
    ],
)
def test_few_shot_settings_are_checked_when_the_experiment_loads(sets, field):
    with pytest.raises(ConfigError, match=field.replace(".", r"\.")) as err:
        load_experiment(DATA / "experiment.toml", sets)
    assert "\n" not in str(err.value)


def test_the_dry_run_counts_the_examples_tokens(tmp_path: Path):
    from harness.judge import judge_estimator

    path = experiment(tmp_path)
    write_exam(path.parent / "exam.jsonl")
    sets = ["judge.base_url=http://127.0.0.1:9/v1", "judge.model=m"]
    pairs = [("Q?", "passage")]
    with_ex = load_experiment(path, [*sets, "judge.few_shot=4", "judge.exam=exam.jsonl"])
    plain = load_experiment(path, sets)
    with (
        judge_estimator(with_ex.judge, tmp_path / "c") as a,
        judge_estimator(plain.judge, tmp_path / "c") as b,
    ):
        more, less = a(pairs, False), b(pairs, False)
    examples = render_examples(load_examples(with_ex.judge), "pointwise")
    assert more.prompt_tokens_max - less.prompt_tokens_max == 2 * (len(examples) // 4)
