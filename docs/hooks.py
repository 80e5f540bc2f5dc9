"""MkDocs hooks: the experiment file reference, generated from the config schema at build
time, and the report screenshots served from tests/screenshots.

The reference is made from `harness.config.schema` (every table's dataclass: key, type,
default and the field's docstring) and from the `Settings` dataclass of every component
module registered in `harness.components.registry`, so it cannot drift from what the
parser accepts. It replaces the marker `<!-- experiment-reference -->` on its page.

The screenshots stay where `make screenshots` writes them (tests/screenshots/, one copy
in the repository); pages link to them by their repository path, which works on GitHub,
and this hook adds them to the site and rewrites those links for it.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import json
import sys
import textwrap
import types
import typing
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # `mkdocs serve` from a shell where harness is not installed
    sys.path.insert(0, str(ROOT))

MARKER = "<!-- experiment-reference -->"
SCREENSHOTS = ROOT / "tests" / "screenshots"
SCREENSHOTS_LINK = "../../tests/screenshots/"
"""How pages (in docs/pages/) link to a screenshot: the repository path, for GitHub."""

SETTINGS_TABLES = (
    ("retrieval", "reranker", "RERANKERS", "retrieval.reranker"),
    ("embedder", "embedder", "EMBEDDERS", "embedder.name"),
    ("judge", "judge", "JUDGES", "judge.backend"),
)
"""(table, component kind, registry name, the key that chooses the component)."""


def field_docs(cls: type) -> dict[str, str]:
    """The docstring under each field of a dataclass (the string right after it)."""
    tree = ast.parse(textwrap.dedent(inspect.getsource(cls)))
    body = tree.body[0].body  # type: ignore[attr-defined]
    docs: dict[str, str] = {}
    for node, after in zip(body, [*body[1:], None], strict=True):
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and isinstance(after, ast.Expr)
            and isinstance(after.value, ast.Constant)
            and isinstance(after.value.value, str)
        ):
            docs[node.target.id] = inspect.cleandoc(after.value.value)
    return docs


def _type_name(tp: Any) -> str:
    """A TOML reader's name for a field's type."""
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        return _type_name(args[0]) if len(args) == 1 else " or ".join(map(_type_name, args))
    if origin is tuple:
        return f"list of {_type_name(typing.get_args(tp)[0])}s"
    return {bool: "boolean", int: "integer", float: "number", str: "string"}.get(
        tp, getattr(tp, "__name__", str(tp))
    )


def _toml_value(value: Any) -> str:
    """A default as it would be written in the experiment file."""
    if value is None:
        return "(unset)"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (tuple, list)):
        return "[" + ", ".join(_toml_value(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{}" if not value else json.dumps(value)
    if isinstance(value, str):
        return json.dumps(value)
    return repr(value)


def _default(f: dataclasses.Field[Any]) -> Any:
    if f.default is not dataclasses.MISSING:
        return f.default
    if f.default_factory is not dataclasses.MISSING:
        return f.default_factory()
    return dataclasses.MISSING


def _cell(text: str) -> str:
    """Text for one Markdown table cell: one line, pipes escaped, and `<` outside code
    spans escaped (a docstring's `openai:<model>` is text, not an HTML tag)."""
    parts = " ".join(text.split()).replace("|", "\\|").split("`")
    return "`".join(p if i % 2 else p.replace("<", "&lt;") for i, p in enumerate(parts))


def _rows(cls: type, prefix: str) -> tuple[list[str], list[tuple[str, type]]]:
    """Table rows for the plain keys of `cls`, and the (dotted name, dataclass) of its
    sub-tables, which get tables of their own."""
    from harness.config.schema import SettingsTables

    hints = typing.get_type_hints(cls)
    docs = field_docs(cls)
    rows: list[str] = []
    subtables: list[tuple[str, type]] = []
    for f in dataclasses.fields(cls):
        if f.name == "path":  # where the file was read from; not a key
            continue
        dotted = f"{prefix}.{f.name}" if prefix else f.name
        tp = hints[f.name]
        inner = (
            typing.get_args(tp)[0]
            if typing.get_origin(tp) in (typing.Union, types.UnionType)
            else tp
        )
        if tp is SettingsTables:
            continue  # the components' own tables follow the schema's
        if isinstance(inner, type) and dataclasses.is_dataclass(inner):
            if f.name == "chunk_overlap":  # an inline table of the sweep space
                doc = docs.get(f.name) or (inspect.getdoc(inner) or "")
                rows.append(f"| `{dotted}` | table | (unset) | {_cell(doc)} |")
                for g in dataclasses.fields(inner):
                    gdoc = field_docs(inner).get(g.name, "")
                    rows.append(
                        f"| `{dotted}.{g.name}` | {_type_name(typing.get_type_hints(inner)[g.name])}"
                        f" | `{_toml_value(_default(g))}` | {_cell(gdoc)} |"
                    )
            else:
                subtables.append((dotted, inner))
            continue
        default = _default(f)
        shown = (
            "(the file's name)" if f.name == "name" and not prefix else f"`{_toml_value(default)}`"
        )
        rows.append(f"| `{dotted}` | {_type_name(tp)} | {shown} | {_cell(docs.get(f.name, ''))} |")
    return rows, subtables


def _table(title: str, doc: str, rows: list[str]) -> list[str]:
    return [
        f"## `{title}`",
        "",
        doc,
        "",
        "| key | type | default | what it does |",
        "| --- | --- | --- | --- |",
        *rows,
        "",
    ]


def _settings_section() -> list[str]:
    """Every registered component's own settings table."""
    from harness.components import registry

    out = [
        "## Components' own settings",
        "",
        "A reranker, an embedder or a judge backend may declare settings of its own (a "
        "frozen dataclass `Settings` in its module); they are read from "
        "`[retrieval.settings.<reranker>]`, `[embedder.settings.<name>]` and "
        "`[judge.settings.<backend>]`, or set with "
        "`--set retrieval.settings.<reranker>.<key>=<value>`. A table for a component "
        "that takes no settings is refused with one line naming it.",
        "",
    ]
    for table, kind, registry_name, chooser in SETTINGS_TABLES:
        names = getattr(registry, registry_name)
        out += [f"### `[{table}.settings.<name>]`", "", f"`<name>` is a value of `{chooser}`.", ""]
        rows: list[str] = []
        for name in names:
            cls = getattr(registry.load(kind, name), "Settings", None)
            if cls is None:
                rows.append(f"| `{name}` | (takes no settings) | | | |")
                continue
            docs = field_docs(cls)
            hints = typing.get_type_hints(cls)
            for f in dataclasses.fields(cls):
                rows.append(
                    f"| `{name}` | `{table}.settings.{name}.{f.name}` | {_type_name(hints[f.name])}"
                    f" | `{_toml_value(_default(f))}` | {_cell(docs.get(f.name, ''))} |"
                )
        out += [
            f"| {kind} | key | type | default | what it does |",
            "| --- | --- | --- | --- | --- |",
            *rows,
            "",
        ]
    return out


def experiment_reference() -> str:
    """The reference of every key of an experiment file, as Markdown."""
    from harness.config.schema import ExperimentConfig

    top, subtables = _rows(ExperimentConfig, "")
    out = _table("top level", "Keys outside any table.", top)
    queue = list(subtables)
    while queue:
        dotted, cls = queue.pop(0)
        rows, more = _rows(cls, dotted)
        queue[0:0] = more  # a sub-table right after its parent ([sweep] then [sweep.space])
        out += _table(f"[{dotted}]", _cell(inspect.getdoc(cls) or ""), rows)
    out += _settings_section()
    return "\n".join(out)


def on_files(files: Any, config: Any) -> Any:
    """Add the report screenshots to the site under screenshots/."""
    from mkdocs.structure.files import File

    for png in sorted(SCREENSHOTS.glob("*.png")):
        files.append(File.generated(config, f"screenshots/{png.name}", abs_src_path=str(png)))
    return files


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """Insert the generated reference; point screenshot links at the site's copies."""
    if MARKER in markdown:
        markdown = markdown.replace(MARKER, experiment_reference())
    depth = page.file.src_uri.count("/")
    return markdown.replace(SCREENSHOTS_LINK, "../" * depth + "screenshots/")
