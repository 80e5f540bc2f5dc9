"""Antora documentation components: which AsciiDoc files are pages, the attributes the
site sets for them, and where a resource ID (`partial$intro.adoc`) points.

A folder holding an `antora.yml` is a component: its pages are the files under
`modules/<module>/pages/` whose path has no part starting with `_`; navigation files,
partials, examples and hidden files are read only where a page includes them. The
`asciidoc.attributes` of `antora.yml` are set for every page (a value ending in `@` as
its text; `false` unsets it), as are those Antora sets for a page (`env-site`, `site-gen-antora`,
`page-component-name`, `page-component-title`, `page-component-version`,
`page-version`).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from harness.errors import ConfigError

COMPONENT_FILE = "antora.yml"
FAMILIES = {
    "page": "pages",
    "partial": "partials",
    "example": "examples",
    "image": "images",
    "attachment": "attachments",
}
"""An Antora resource family and the folder of a module holding it."""
_RESOURCE = re.compile(
    r"^(?:(?P<version>[^@:$]+)@)?(?:(?P<component>[^@:$]+):(?=[^:$]*:))?"
    r"(?:(?P<module>[^@:$]+):)?(?:(?P<family>[a-z]+)\$)?(?P<path>[^@:$]+)$"
)


@dataclass(frozen=True)
class Component:
    """An Antora component: its folder (`root`), name and the attributes it sets."""

    root: Path
    name: str
    attributes: dict[str, str] = field(default_factory=dict)

    def module_of(self, path: Path) -> str | None:
        """The module a file of this component lies in (`modules/<module>/...`)."""
        parts = path.resolve().relative_to(self.root).parts
        return parts[1] if len(parts) > 2 and parts[0] == "modules" else None

    def is_page(self, path: Path) -> bool:
        """Whether the site publishes `path` as a page."""
        parts = path.resolve().relative_to(self.root).parts
        return (
            len(parts) > 3
            and parts[0] == "modules"
            and parts[2] == "pages"
            and not any(p.startswith("_") for p in parts[3:])
        )

    def resource(self, target: str, page: Path, family: str) -> Path | str:
        """Where a resource ID a file of this component names lies (`partial$a.adoc`,
        `cli:page$index.adoc`, `ROOT:b.adoc`), or why it cannot be read here (another
        component's or version's, a family Antora does not know). `family` is the one
        an ID without `family$` names (`page` for a cross reference)."""
        m = _RESOURCE.match(target)
        if m is None:
            return "not a resource ID"
        if m.group("version") or (m.group("component") and m.group("component") != self.name):
            return "another component or version of the site"
        folder = FAMILIES.get(m.group("family") or family)
        module = m.group("module") or self.module_of(page)
        if folder is None or module is None:
            return "not a resource of a module"
        return self.root / "modules" / module / folder / m.group("path")


def read_component(root: Path) -> Component:
    """The component whose `antora.yml` lies in `root`. Raises ConfigError naming the
    file when it is not a YAML mapping."""
    where = root / COMPONENT_FILE
    try:
        data = yaml.safe_load(where.read_text(encoding="utf-8")) or {}
    except (yaml.YAMLError, UnicodeDecodeError) as exc:
        raise ConfigError(str(where), "corpus.sources", f"expected YAML ({exc})") from None
    if not isinstance(data, dict):
        raise ConfigError(str(where), "corpus.sources", "expected a YAML mapping")
    asciidoc = data.get("asciidoc")
    raw = asciidoc.get("attributes") if isinstance(asciidoc, dict) else None
    attributes: dict[str, str] = {}
    for key, value in (raw if isinstance(raw, dict) else {}).items():
        if value is False or value is None:
            continue
        text = "" if value is True else str(value)
        attributes[str(key).lower()] = text.removesuffix("@")
    name = str(data.get("name", ""))
    version = data.get("version")  # true: the branch's name, which the folder does not hold
    version = "" if version in (None, True, False, "~") else str(version)
    site = {
        "env": "site",
        "env-site": "",
        "site-gen": "antora",
        "site-gen-antora": "",
        "page-component-name": name,
        "page-component-title": str(data.get("title") or name),
        "page-component-version": version,
        "page-version": version,
    }
    return Component(root=root.resolve(), name=name, attributes={**site, **attributes})


class Components:
    """The Antora components of a corpus folder, found once per folder: a file belongs
    to the nearest folder above it, up to the corpus folder, holding an `antora.yml`."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder.resolve()
        self._found: dict[Path, Component | None] = {}

    def of(self, path: Path) -> Component | None:
        """The component `path` belongs to, or None."""
        here = path.resolve().parent
        seen: list[Path] = []
        found: Component | None = None
        while True:
            if here in self._found:
                found = self._found[here]
                break
            seen.append(here)
            if (here / COMPONENT_FILE).is_file():
                found = read_component(here)
                break
            if here == self.folder or here == here.parent or not here.is_relative_to(self.folder):
                break
            here = here.parent
        for p in seen:
            self._found[p] = found
        return found
