"""The documentation is tested: the site builds without a warning, every experiment key
has a reference entry, and every console command on the pages and in the README runs
and prints what the page says it prints.

Console blocks. A fenced block marked `console` holds commands, each on a line starting
with `$ ` (split as a shell would, `#` starting a comment), each followed by the lines it
prints (stdout, then any `harness: error:` line
of stderr; blank lines are ignored, runs of spaces count as one). The printed lines must
match in order and in full, except that:

- a line `...` stands for any number of lines (none included);
- a word in angle brackets, such as `<run-id>` or `<s>`, stands for any one word
  (no spaces): ids, times and other values that change from one run to the next;
- a line ending in ` ...` stands for any line that starts with the rest (a long error
  line, say);
- a command with no lines after it must print nothing.

A command whose lines include `harness: error:` must exit with status 2, any other with
0. Only `harness ...` commands run (in process, through `harness.cli.main`); a block
holding anything else (`make ...`, `sudo ...`, `export ...`) is not run and must say so:
an HTML comment `<!-- not-run: the reason -->` on the line before its fence, e.g.
`<!-- not-run: needs the local model -->`. Blocks marked `bash`, `toml`, `text` or
anything but `console` are never run; `make` targets are never run here.

Python blocks. A fenced block marked `pycon` is a doctest (`>>> ` lines and what they
print; `...` in printed text stands for anything), run with the same stand-in judge.

Each page runs in its own temporary copy of experiments/ and questions/, with its own
cache and results folders, its blocks in page order (a later command may read what an
earlier one wrote), and its judge is a stand-in endpoint on 127.0.0.1 (FakeOpenAI from
harness.testing with `word_overlap_judge` below) through HARNESS_JUDGE_BASE_URL and
HARNESS_JUDGE_MODEL, so the numbers on the pages are that stand-in's, not a model's.
"""

from __future__ import annotations

import dataclasses
import doctest
import importlib.util
import math
import os
import re
import shlex
import shutil
import subprocess
import sys
import typing
from dataclasses import dataclass
from pathlib import Path

import pytest

from harness.testing import Act, FakeOpenAI, answer_any

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
PAGES = DOCS / "pages"
README = ROOT / "README.md"
DOCUMENTS = [README, *sorted(PAGES.glob("*.md"))]
COPIED = ("experiments", "questions")
"""What a page's commands may read: copied into each page's working folder."""

FENCE = re.compile(r"^([ \t]*)```(\w*)[^\n]*\n(.*?)^[ \t]*```[ \t]*$", re.M | re.S)
"""A fenced block, also one indented under a list item: (indent, language, body)."""
NOT_RUN = re.compile(r"<!--\s*not-run:\s*(.+?)\s*-->\s*$")
PLACEHOLDER = re.compile(r"<[a-z][a-z0-9_-]*>")


def _words(text: str) -> set[str]:
    return {w for w in re.findall(r"[a-z0-9]+", text.lower()) if len(w) >= 4}


def word_overlap_judge(n: int, prompt: str) -> Act:
    """A stand-in judge: a passage is relevant when it holds at least 30% of the
    question's words of four letters or more, and complete at 60%; P(yes) (as logprobs)
    grows with that share and crosses 0.5 at the cut. Deterministic: it reads only the
    passage, the question and whether the criterion is the completeness one, so the
    pages' numbers do not move when a prompt is reworded. Prompts it cannot read (graded,
    listwise, ...) get `answer_any`'s answers."""
    from harness.config.schema import DEFAULT_COMPLETE

    passage = re.search(r"<passage>\n(.*?)\n</passage>", prompt, re.S)
    question = re.search(r"\nQuestion:\n(.+)(?:\n|$)", prompt)
    if not passage or not question or "yes" not in prompt:
        return answer_any(n, prompt)
    asked = _words(question.group(1))
    share = len(asked & _words(passage.group(1))) / max(1, len(asked))
    cut = 0.6 if DEFAULT_COMPLETE in prompt else 0.3
    p_yes = min(0.95, max(0.05, share / (2 * cut)))
    answer = "yes" if share >= cut else "no"
    return Act(
        text=answer,
        top_logprobs=(("yes", math.log(p_yes)), ("no", math.log(1 - p_yes))),
    )


@dataclass(frozen=True)
class Command:
    """One `$ ` line of a console block and the lines documented under it."""

    line: int
    argv: tuple[str, ...]
    expected: tuple[str, ...]


@dataclass(frozen=True)
class Block:
    """One console block: where it is, its commands, and why it is not run (if so)."""

    path: Path
    line: int
    commands: tuple[Command, ...]
    not_run: str


def console_blocks(path: Path) -> list[Block]:
    """The console blocks of a Markdown file, in order."""
    text = path.read_text(encoding="utf-8")
    blocks = []
    for m in FENCE.finditer(text):
        if m.group(2) != "console":
            continue
        first = text.count("\n", 0, m.start()) + 1
        before = text[: m.start()].rstrip("\n").rsplit("\n", 1)[-1]
        reason = NOT_RUN.search(before)
        commands: list[Command] = []
        body = [x.removeprefix(m.group(1)) for x in m.group(3).splitlines()]
        for i, raw in enumerate(body, start=first + 1):
            if raw.startswith("$ "):
                commands.append(Command(i, tuple(shlex.split(raw[2:], comments=True)), ()))
            elif raw.strip():
                if not commands:
                    raise AssertionError(f"{path.name}:{i}: output before any `$ ` command")
                last = commands[-1]
                commands[-1] = dataclasses.replace(last, expected=(*last.expected, raw))
        blocks.append(Block(path, first, tuple(commands), reason.group(1) if reason else ""))
    return blocks


def _line_pattern(line: str) -> str:
    line = " ".join(line.split())
    rest = line.endswith(" ...")
    parts = PLACEHOLDER.split(line.removesuffix(" ...") if rest else line)
    return r"\S+".join(re.escape(p) for p in parts) + (r" [^\n]*" if rest else "")


def output_matches(expected: typing.Sequence[str], printed: str) -> bool:
    """Whether the printed text is what the documented lines say (see the module doc)."""
    lines = [" ".join(x.split()) for x in printed.splitlines() if x.strip()]
    pattern = "".join(
        r"(?:[^\n]*\n)*?" if e.strip() == "..." else _line_pattern(e) + r"\n" for e in expected
    )
    return re.fullmatch(pattern, "".join(f"{x}\n" for x in lines)) is not None


# --- (a) the site builds with no warning ----------------------------------------------


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """The documentation site built with --strict, and the build's process."""
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "-f",
            str(DOCS / "mkdocs.yml"),
            "-d",
            str(out),
        ],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        timeout=300,
    )
    return out, proc


def test_site_builds_strict(site):
    out, proc = site
    assert proc.returncode == 0, proc.stderr
    assert "WARNING" not in proc.stderr, proc.stderr
    page = (out / "experiment-file" / "index.html").read_text(encoding="utf-8")
    for key in config_keys():
        assert f"<code>{key}</code>" in page, f"{key} has no entry in the built reference"
    assert (out / "screenshots" / "report-run.png").is_file()


def test_the_built_site_read_as_a_corpus_is_its_pages_content(site):
    """A user's saved documentation site is a corpus: each page reads as its article
    (its title first, no menu, search box or footer) with sentences whole."""
    from harness.corpus import load_documents

    out, proc = site
    assert proc.returncode == 0, proc.stderr
    docs = {d.doc_id: d for d in load_documents([str(out)])}
    pages = sorted((DOCS / "pages").glob("*.md"))
    for page in pages:
        html_id = "index.html" if page.stem == "index" else f"{page.stem}/index.html"
        heading = next(line for line in page.read_text().splitlines() if line.startswith("# "))
        text = docs[html_id].text
        assert text.splitlines()[0] == heading.replace("`", ""), html_id
        for chrome in ("Skip to content", "Initializing search", "Table of contents", "Made with"):
            assert chrome not in text, (html_id, chrome)
    runs = docs["runs/index.html"].text.splitlines()
    assert any(line.startswith("harness show results/<run_id> --failures prints") for line in runs)


# --- (b) every config key has a reference entry ---------------------------------------


def config_keys() -> list[str]:
    """Every dotted key of an experiment file, walked from the schema's dataclasses, and
    every registered component's own settings (`<table>.settings.<name>.<key>`)."""
    from harness.components import registry
    from harness.config.schema import ExperimentConfig, SettingsTables

    keys: list[str] = []

    def walk(cls: type, prefix: str) -> None:
        hints = typing.get_type_hints(cls)
        for f in dataclasses.fields(cls):
            if f.name == "path":
                continue
            dotted = f"{prefix}.{f.name}" if prefix else f.name
            tp = hints[f.name]
            args = [a for a in typing.get_args(tp) if a is not type(None)]
            inner = args[0] if len(args) == 1 and typing.get_origin(tp) is not tuple else tp
            if tp is SettingsTables:
                continue
            if dataclasses.is_dataclass(inner):
                walk(inner, dotted)  # type: ignore[arg-type]
            else:
                keys.append(dotted)

    walk(ExperimentConfig, "")
    for table, kind in (("retrieval", "reranker"), ("embedder", "embedder"), ("judge", "judge")):
        for name in registry.KINDS[kind]:
            settings = getattr(registry.load(kind, name), "Settings", None)
            for f in dataclasses.fields(settings) if settings else ():
                keys.append(f"{table}.settings.{name}.{f.name}")
    return keys


def _hooks():
    spec = importlib.util.spec_from_file_location("docs_hooks", DOCS / "hooks.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_every_config_key_has_a_documented_reference_entry():
    reference = _hooks().experiment_reference()
    rows = {
        m.group(1): m.group(2)
        for m in re.finditer(r"^\| (?:`[^`]+` \| )?`([a-z0-9_.]+)` \|(.*)$", reference, re.M)
    }
    keys = config_keys()
    assert len(keys) > 80  # the walk found the tables
    for key in keys:
        assert key in rows, f"{key} has no entry in the experiment file reference"
        described = rows[key].rsplit("|", 2)[-2].strip()
        assert described, f"{key}: its reference entry says nothing (add a docstring)"
    assert "`[retrieval.settings.<name>]`" in reference
    assert "`[embedder.settings.<name>]`" in reference
    assert "`[judge.settings.<name>]`" in reference


def test_a_component_setting_appears_in_the_reference(monkeypatch):
    """A reranker with a `Settings` of its own gets rows of its own (the one-file addition
    of tests/components shows such a module)."""
    from harness.components import registry

    module = type(sys)("docs_test_rotate")
    module.__file__ = __file__

    @dataclass(frozen=True)
    class Settings:
        keep: int = 1
        """How many of the first candidates move to the end."""

    module.Settings = Settings  # type: ignore[attr-defined]
    monkeypatch.setitem(sys.modules, "docs_test_rotate", module)
    monkeypatch.setitem(registry.RERANKERS, "rotate", "docs_test_rotate")
    reference = _hooks().experiment_reference()
    assert (
        "| `rotate` | `retrieval.settings.rotate.keep` | integer | `1` | How many of the first "
        "candidates move to the end. |" in reference
    )


# --- (c) every console command runs and prints what the page says ---------------------


def _ids(blocks: list[Block]) -> list[str]:
    return [f"{b.path.name}:{b.line}" for b in blocks]


def test_convention_is_kept():
    """Every console block is either runnable (only `harness` commands) or says why not;
    no page refers to files outside the repository."""
    for path in DOCUMENTS:
        text = path.read_text(encoding="utf-8")
        # nothing beside the repository, nor this checkout's own absolute path
        assert "../shared" not in text and str(ROOT.parent) not in text, path.name
        for block in console_blocks(path):
            assert block.commands, f"{path.name}:{block.line}: a console block with no `$ `"
            if not block.not_run:
                for c in block.commands:
                    assert c.argv[0] == "harness", (
                        f"{path.name}:{c.line}: only `harness` commands run; mark the block "
                        "<!-- not-run: why -->"
                    )


def test_readme_links_resolve():
    for target in re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", README.read_text(encoding="utf-8")):
        if not target.startswith(("http://", "https://")):
            assert (ROOT / target).exists(), f"README links to {target}, which does not exist"


def test_output_matching_rules():
    printed = "run q-20261122-1: done\n\nmetric  @1   @2\nhit_rate  0.5  1.0\nend\n"
    assert output_matches(["run <run-id>: done", "...", "end"], printed)
    assert output_matches(["run <run-id>: done", "metric @1 @2", "...", "end"], printed)
    assert not output_matches(["run <run-id>: done", "end"], printed)
    assert not output_matches(["metric @1 @2", "..."], printed)
    assert not output_matches(["...", "hit_rate 0.5 1.1", "..."], printed)
    assert output_matches(["...", "hit_rate <n> 1.0", "..."], printed)
    assert not output_matches([], printed) and output_matches([], "\n")
    assert output_matches(["run <run-id>: ...", "...", "end"], printed)
    assert not output_matches(["run <run-id>: don ...", "...", "end"], printed)


def _pages_with_commands() -> list[Path]:
    return [p for p in DOCUMENTS if any(not b.not_run for b in console_blocks(p))]


@pytest.mark.parametrize("path", _pages_with_commands(), ids=lambda p: p.name)
def test_console_commands_print_what_the_page_says(path, tmp_path, monkeypatch, capsys):
    from harness.cli import main

    work = tmp_path / "repo"
    for name in COPIED:
        shutil.copytree(ROOT / name, work / name)
    monkeypatch.chdir(work)
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    with FakeOpenAI(word_overlap_judge) as server:
        monkeypatch.setenv("HARNESS_JUDGE_BASE_URL", server.base_url)
        monkeypatch.setenv("HARNESS_JUDGE_MODEL", "stand-in")
        for block in console_blocks(path):
            if block.not_run:
                continue
            for command in block.commands:
                capsys.readouterr()
                status = main(list(command.argv[1:]))
                captured = capsys.readouterr()
                errors = [x for x in captured.err.splitlines() if x.startswith("harness: error:")]
                printed = captured.out + "".join(f"{x}\n" for x in errors)
                where = f"{path.name}:{command.line}: $ {shlex.join(command.argv)}"
                wants_error = any("harness: error:" in e for e in command.expected)
                assert status == (2 if wants_error else 0), f"{where}\n{captured.err}"
                assert output_matches(command.expected, printed), (
                    f"{where}\nthe page says:\n"
                    + "\n".join(command.expected)
                    + f"\nit printed:\n{printed}"
                )


def _pages_with_python() -> list[Path]:
    return [
        p for p in DOCUMENTS if any(m.group(2) == "pycon" for m in FENCE.finditer(p.read_text()))
    ]


@pytest.mark.parametrize("path", _pages_with_python(), ids=lambda p: p.name)
def test_python_examples_print_what_the_page_says(path, tmp_path, monkeypatch):
    """Every `pycon` block of a page, as doctests in one namespace, in page order."""
    work = tmp_path / "repo"
    for name in COPIED:
        shutil.copytree(ROOT / name, work / name)
    monkeypatch.chdir(work)
    monkeypatch.setenv("HARNESS_CACHE_DIR", str(tmp_path / "cache"))
    text = path.read_text(encoding="utf-8")
    parser = doctest.DocTestParser()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    namespace: dict[str, object] = {}
    blocks = [m for m in FENCE.finditer(text) if m.group(2) == "pycon"]
    with FakeOpenAI(word_overlap_judge) as server:
        monkeypatch.setenv("HARNESS_JUDGE_BASE_URL", server.base_url)
        monkeypatch.setenv("HARNESS_JUDGE_MODEL", "stand-in")
        for m in blocks:
            line = text.count("\n", 0, m.start()) + 1
            body = "\n".join(x.removeprefix(m.group(1)) for x in m.group(3).splitlines())
            test = parser.get_doctest(body, namespace, path.name, str(path), line)
            report: list[str] = []
            result = runner.run(test, out=report.append, clear_globs=False)
            assert result.attempted and result.failed == 0, "".join(report)
            namespace = test.globs  # the next block sees what this one defined
