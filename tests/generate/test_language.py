"""Questions generated in their documents' language (`harness.corpus.language`): a
German handbook's questions are asked in German, an English corpus's prompts are left
exactly as they were."""

from __future__ import annotations

import pytest

from harness.corpus.language import (
    ENGLISH,
    OTHER,
    corpus_language,
    passage_language,
    write_in,
)
from harness.generate import prompts
from tests.generate.test_generate import _doc_text
from tests.generate.test_query_style import SOURCE_ANSWER_ASK, _run

GERMAN = (
    "Vollzeitbeschäftigte erhalten 27 Tage bezahlten Jahresurlaub pro Kalenderjahr, "
    "zuzüglich der gesetzlichen Feiertage des Landes, in dem ihr Vertrag geführt wird. "
    "Urlaub von drei oder mehr Tagen muss mindestens zwei Wochen im Voraus beantragt "
    "werden; die Führungskraft genehmigt oder lehnt innerhalb von fünf Arbeitstagen ab."
)


@pytest.mark.parametrize(
    ("text", "language"),
    [
        (GERMAN, "German"),
        (
            "Les AIRMET sont des bulletins météorologiques envoyés afin de modifier une "
            "prévision de zone pour l'aviation, et ils sont publiés par les centres de veille.",
            "French",
        ),
        (
            "El permiso anual es de 27 días para los empleados a tiempo completo, y se solicita "
            "con dos semanas de antelación en el portal de personal como se indica aquí.",
            "Spanish",
        ),
        (
            "Full-time employees receive 27 days of paid annual leave per calendar year, plus "
            "the public holidays of the country where their contract is held.",
            ENGLISH,
        ),
        # code, a table of numbers, and English naming a Frenchman: English, as before
        (
            "try:\n    devnull = os.open(os.devnull, os.O_WRONLY)\n    e = os.dup2(devnull, 1)\n"
            "except (OSError, ValueError):\n    il = e if e else None\n    return il, e, os",
            ENGLISH,
        ),
        (
            "CDG may refer to: Charles de Gaulle, French general; Charles de Gaulle airport, "
            "Paris; la Caisse de dépôt, a Moroccan pension fund.",
            ENGLISH,
        ),
        ("年假申请需要提前两周在人事系统中提交，经理会在五个工作日内审批。", "Chinese"),
        ("年次休暇の申請は、二週間前までに人事システムで行ってください。", "Japanese"),
        ("연차 휴가는 2주 전에 인사 시스템에서 신청해야 합니다.", "Korean"),
        ("Ежегодный отпуск составляет 28 дней и оформляется через отдел кадров.", OTHER),
        # a page of one of these scripts naming its tools in Latin letters
        (
            "使用 kubectl apply 在 Kubernetes 集群中部署 PostgreSQL 数据库，"
            "然后用 helm upgrade 更新 StatefulSet 的配置。",
            "Chinese",
        ),
        ("docker compose up -d で PostgreSQL と Redis のコンテナを起動します。", "Japanese"),
    ],
)
def test_a_passage_is_told_by_its_words_or_its_script(text, language):
    assert passage_language([text]) == language


def test_a_passage_too_short_to_tell_takes_the_corpus_language():
    short = "Übertragene Tage bis zum 31. März."
    assert passage_language([short]) == ENGLISH
    assert passage_language([short], corpus_language([GERMAN, GERMAN, "Hello"])) == "German"
    assert corpus_language([GERMAN, "Full-time employees receive paid leave " * 4]) == ENGLISH
    assert corpus_language([]) == ENGLISH
    # a glossary's or an FAQ's short entries have no say: they cannot tell
    entries = ["Urlaubsanträge stellen Sie im Personalportal.", "Passwörter laufen ab."]
    assert corpus_language([GERMAN, GERMAN, *entries * 3]) == "German"


def test_an_english_passage_prompt_is_unchanged_and_others_name_the_language():
    assert write_in(ENGLISH, "every field") == ""
    assert write_in("German", "every field") == " Write every field in German."
    assert write_in(OTHER, "every field", "the summary") == (
        " Write every field in the language of the summary."
    )
    english = prompts.summary_messages(["text"])
    assert english == prompts.summary_messages(["text"], ENGLISH)
    assert "Write" not in english[1]["content"]
    assert "Write the summary in German." in prompts.summary_messages(["t"], "German")[1]["content"]


def _asks(model, marker: str) -> list[str]:
    return [p for p in model.prompts if marker in p]


def test_a_german_corpus_is_asked_for_german_questions_and_an_english_one_as_before(tmp_path):
    german = {f"de-{c}": f"# Regel {c}\n\nurlaub-fact-{i} {GERMAN}\n" for i, c in enumerate("abcd")}
    _, kept, model = _run(tmp_path / "de", german, 4, types=("simple", "unanswerable"))
    assert kept
    summaries = _asks(model, "Summarise in one line")
    queries = _asks(model, "Write the terse search query") + _asks(model, 'In "missing"')
    answers = _asks(model, SOURCE_ANSWER_ASK)
    assert summaries and queries and answers
    assert all("Write the summary in German." in p for p in summaries)
    assert all("Write every field in German." in p for p in queries)
    assert all("Write the answer (NONE as it is) in German." in p for p in answers)

    english = {f"plain-{c}": _doc_text(f"plain-{c}", 2) for c in "abcd"}
    _, _, model = _run(tmp_path / "en", english, 4, types=("simple", "unanswerable"))
    assert model.prompts and not any(
        " in German." in p or "Write every" in p for p in model.prompts
    )


def test_a_spare_is_asked_in_its_first_passages_language():
    from harness.generate.pipeline import Candidate, as_spare
    from harness.generate.sampler import Passage
    from harness.types import SourceSpan

    english = "Full-time employees receive 27 days of paid annual leave per calendar year. " * 2
    both = (
        Passage(SourceSpan("de.md", 0, len(GERMAN)), GERMAN, "Regel"),
        Passage(SourceSpan("en.md", 0, len(english)), english, "Leave"),
    )
    planned = Candidate(index=0, qtype="multi-passage", passages=both, language="German")
    spare = as_spare(planned, "simple")
    assert spare.language == "German" and len(spare.passages) == 1
    flipped = as_spare(Candidate(0, "multi-passage", both[::-1], language="German"), "simple")
    assert flipped.language == ENGLISH


def test_documents_the_embedder_cannot_read_are_named_before_a_run(tmp_path):
    from harness.config import EmbedderConfig, load_experiment
    from harness.pipeline.prepare import language_warning, load_inputs
    from harness.types import Document

    text = "年假申请需要提前两周在人事系统中提交，经理会在五个工作日内审批。"
    chinese = [Document(f"d{i}.md", text, f"d{i}.md") for i in range(3)]
    said = language_warning(EmbedderConfig(), chinese)
    assert said is not None and "most documents are in Chinese" in said
    assert "'local-minilm' was trained on English text only" in said
    english = [Document("e.md", "Full-time employees receive 27 days of paid leave.", "e.md")]
    assert language_warning(EmbedderConfig(), english) is None
    # a model of the user's choosing, or a multilingual one: nothing to say
    assert language_warning(EmbedderConfig(name="openai"), chinese) is None
    # a run's inputs carry it to the header's warnings
    (tmp_path / "docs").mkdir()
    for i in range(3):
        (tmp_path / "docs" / f"d{i}.md").write_text(f"# 假期{i}\n\n{text}\n", encoding="utf-8")
    (tmp_path / "q.txt").write_text("年假怎么申请？\n", encoding="utf-8")
    (tmp_path / "e.toml").write_text(
        '[corpus]\nsources = ["docs"]\n[questions]\nfile = "q.txt"\n', encoding="utf-8"
    )
    inputs = load_inputs(load_experiment(tmp_path / "e.toml"))
    assert said in inputs.warnings


def test_a_reply_in_chinese_japanese_or_korean_gets_bounds_its_tokens_can_hold():
    from harness.judge.prompts import extract_max_tokens

    assert prompts.chars_per_token(ENGLISH) == prompts.CHARS_PER_TOKEN
    assert prompts.chars_per_token("German") == prompts.CHARS_PER_TOKEN
    summary = prompts.QUERY_SUMMARY_MAX_TOKENS
    assert prompts.field_chars(summary, 1) == 160  # English, as before
    wide = prompts.field_chars(summary, 1, prompts.chars_per_token("Chinese"))
    assert wide + prompts.FIELD_TOKENS <= summary  # a character a token still closes the JSON
    assert f"{{1,{wide}}}" in prompts.object_grammar(
        "summary", max_tokens=summary, per_token=prompts.chars_per_token("Japanese")
    )
    # an extractive copy of a Chinese sentence is given a token a character
    sentence = "请假三天及以上的，须至少提前两周在人事系统中提交申请。" * 3
    assert extract_max_tokens([sentence]) >= len(sentence)
    english = "Book leave in Fernhill at least two weeks ahead for absences of three days."
    assert extract_max_tokens([english]) == len(english) // 3 + 16  # as before


ZH = "年假申请需要提前两周在人事系统中提交，经理会在五个工作日内审批。"


def test_a_corpus_mostly_in_languages_the_embedder_cannot_read_warns_naming_the_most():
    from harness.config import EmbedderConfig
    from harness.pipeline.prepare import language_warning
    from harness.types import Document

    def docs(*texts):
        return [Document(f"d{i}.md", t, f"d{i}.md") for i, t in enumerate(texts)]

    ja = "年次休暇の申請は、二週間前までに人事システムで行ってください。"
    english = "Full-time employees receive 27 days of paid annual leave per calendar year."
    mixed = language_warning(EmbedderConfig(), docs(ZH, ZH, ja, GERMAN, GERMAN, english))
    assert mixed is not None
    assert "most documents are in languages other than English (Chinese the most)" in mixed
    assert language_warning(EmbedderConfig(), docs(ZH, english, english)) is None


def test_the_language_warning_is_logged_once_and_kept_by_every_run_and_the_report(
    tmp_path, warnings, monkeypatch
):
    import importlib

    from harness.config import load_experiment
    from harness.pipeline.prepare import load_inputs

    prepare = importlib.import_module("harness.pipeline.prepare")  # the module, not the function
    monkeypatch.setattr(prepare, "_said", set())  # what this process has said so far

    docs = {f"zh-{c}": f"# 假期{c}\n\nleave-fact-{i} {ZH}\n" for i, c in enumerate("abcd")}
    report, _, _ = _run(tmp_path, docs, 2, types=("simple",))
    said = [w for w in report.warnings if "most documents are in Chinese" in w]
    assert len(said) == 1
    (tmp_path / "questions.jsonl").write_text('{"id": "a", "text": "年假怎么申请？"}\n')
    config = load_experiment(tmp_path / "exp.toml")
    first, second = load_inputs(config), load_inputs(config)  # a sweep's trials, say
    assert said[0] in first.warnings and said[0] in second.warnings
    assert sum(said[0] in w for w in warnings) == 1  # logged by generate, then never again


def test_chinese_candidates_are_held_to_bounds_of_a_character_a_token(tmp_path):
    from harness.generate.llm import Generator
    from tests.generate import test_query_style as qs

    grammars: list[str] = []
    ask = Generator.ask

    def recording(self, messages, *, max_tokens, grammar=None, check=False):
        if grammar:
            grammars.append(grammar)
        return ask(self, messages, max_tokens=max_tokens, grammar=grammar, check=check)

    docs = {f"zh-{c}": f"# 假期{c}\n\nleave-fact-{i} {ZH}\n" for i, c in enumerate("abcd")}
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Generator, "ask", recording)
        qs._run(tmp_path, docs, 2, types=("simple",))
    summary = prompts.field_chars(prompts.QUERY_SUMMARY_MAX_TOKENS, 1, 1.0)
    assert grammars and any(f"{{1,{summary}}}" in g for g in grammars)
    english = prompts.field_chars(prompts.QUERY_SUMMARY_MAX_TOKENS, 1)
    assert not any(f"{{1,{english}}}" in g for g in grammars)
