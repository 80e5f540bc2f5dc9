"""The text of a PowerPoint deck (.pptx), slide by slide, laid out in lines.

Read with the standard library (`harness.corpus.ooxml`), in the deck's slide order:

- each slide opens with its title as a markdown heading (`## Remote work`; `## Slide 4`
  for a slide without one), so its chunks have it as their topic;
- then the text of its shapes in the order the slide stacks them (text boxes, content
  placeholders, shapes within groups; an equation as its text), a paragraph a line,
  indented two spaces a bullet level; a table's rows as lines, cells joined by " | "
  (as a saved page's);
- then its speaker notes, the first line marked `Notes:` (presenters often keep there
  what the slide only hints at).

Not read: hidden slides, slide numbers, dates and footers, and text in pictures,
charts and SmartArt. The title is the first slide title's, else the deck properties'
(a template's "PowerPoint Presentation" is often left there). An empty file has no text.
"""

from __future__ import annotations

from pathlib import Path
from xml.etree import ElementTree

from harness.corpus.ooxml import (
    LINE_SPACE,
    MATH,
    MC,
    Package,
    number,
    properties_title,
    rel_id,
    relationships,
)

_P = (
    "http://schemas.openxmlformats.org/presentationml/2006/main",
    "http://purl.oclc.org/ooxml/presentationml/main",  # "Strict Open XML"
)
_A = (
    "http://schemas.openxmlformats.org/drawingml/2006/main",
    "http://purl.oclc.org/ooxml/drawingml/main",
)
_MATH_TEXT = frozenset(f"{{{ns}}}t" for ns in MATH)
"""The text element of Office Math, which PowerPoint writes equations in."""
_TITLES = ("title", "ctrTitle")
_FURNITURE = ("sldNum", "dt", "ftr", "hdr", "sldImg")
"""Placeholders that are no content: slide number, date, footer, header, and a notes
page's picture of its slide."""


def _name(el: ElementTree.Element) -> str:
    """The local name of `el` with a prefix for its vocabulary ("p:" PresentationML, "a:"
    DrawingML, "mc:" markup compatibility), or "" for any other."""
    tag = el.tag if isinstance(el.tag, str) else ""
    ns, _, local = tag[1:].partition("}")
    if not tag.startswith("{"):
        return ""
    prefix = "p:" if ns in _P else "a:" if ns in _A else "mc:" if ns == MC else ""
    return prefix + local if prefix else ""


def _placeholder(shape: ElementTree.Element) -> str | None:
    """A shape's placeholder type ("title", "body", "sldNum", ...; "obj" for a content
    placeholder, which names none), or None for a shape that is no placeholder."""
    for props in shape.iter():
        if _name(props) == "p:ph":
            return props.get("type", "obj")
        if _name(props) == "p:txBody":
            break
    return None


def _paragraphs(body: ElementTree.Element) -> list[str]:
    """The lines of a text body: each paragraph's runs, indented by its bullet level."""
    lines: list[str] = []
    for p in body:
        if _name(p) != "a:p":
            continue
        parts: list[str] = []
        level = 0
        for child in p:
            name = _name(child)
            if name == "a:pPr":
                level = min(number(child.get("lvl"), 0), 8)
            elif name == "a:r" or (name == "a:fld" and child.get("type") != "slidenum"):
                parts.extend(t.text or "" for t in child if _name(t) == "a:t")
            elif name == "a:br":
                parts.append("\n")
            elif name == "mc:AlternateContent" or not name:  # an equation (a14:m), as text
                parts.extend(t.text or "" for t in child.iter() if t.tag in _MATH_TEXT)
        for i, line in enumerate("".join(parts).split("\n")):
            text = LINE_SPACE.sub(" ", line).strip()
            if text:
                lines.append("  " * (level if i == 0 else level + 1) + text)
    return lines


def _table(table: ElementTree.Element) -> list[str]:
    rows: list[str] = []
    for tr in (el for el in table if _name(el) == "a:tr"):
        cells = []
        for tc in (el for el in tr if _name(el) == "a:tc"):
            body = next((b for b in tc if _name(b) == "a:txBody"), None)
            text = " ".join(line.strip() for line in _paragraphs(body)) if body is not None else ""
            if text:
                cells.append(text)
        if cells:
            rows.append(" | ".join(cells))
    return rows


def _shapes(tree: ElementTree.Element, title: list[str], lines: list[str]) -> None:
    """Read the shapes of a shape tree (or group) in stacking order: a title
    placeholder's text into `title`, the others' into `lines`."""
    for shape in tree:
        name = _name(shape)
        if name == "p:grpSp":
            _shapes(shape, title, lines)
        elif name == "mc:AlternateContent":  # a shape with an equation, and its fallback
            choices = [c for c in shape if _name(c) in ("mc:Choice", "mc:Fallback")]
            if choices:
                _shapes(choices[0], title, lines)
        elif name == "p:graphicFrame":
            for table in shape.iter():
                if _name(table) == "a:tbl":
                    lines.extend(_table(table))
        elif name == "p:sp":
            kind = _placeholder(shape)
            body = next((b for b in shape if _name(b) == "p:txBody"), None)
            if body is None or kind in _FURNITURE:
                continue
            text = _paragraphs(body)
            if kind in _TITLES:
                title.extend(line.strip() for line in text)
            else:
                lines.extend(text)


def _tree(root: ElementTree.Element | None) -> ElementTree.Element | None:
    """A slide's (or notes page's) shape tree, `p:cSld/p:spTree`."""
    for el in root.iter() if root is not None else ():
        if _name(el) == "p:spTree":
            return el
    return None


def slides_text(path: Path) -> tuple[str, str]:
    """The text of the deck at `path` (see the module docstring) and its title.

    Raises ConfigError naming the file when it is no .pptx or a part is damaged.
    """
    with Package(path, kind=".pptx", field="corpus.sources") as package:
        if package.empty:
            return "", ""
        presentation = package.main("ppt/presentation.xml")
        targets = relationships(package, "ppt/presentation.xml")
        order = [
            targets[rid][1]
            for el in presentation.iter()
            if _name(el) == "p:sldId" and (rid := rel_id(el)) in targets
        ]
        out: list[str] = []
        first_title = ""
        for number, part in enumerate(dict.fromkeys(order), 1):  # each slide once
            slide = package.part(part)
            if slide is None or slide.get("show") in ("0", "false"):
                continue
            title: list[str] = []
            lines: list[str] = []
            tree = _tree(slide)
            if tree is not None:
                package.walk(_shapes, tree, title, lines)
            notes: list[str] = []
            for kind, target in relationships(package, part).values():
                notes_tree = _tree(package.part(target)) if kind == "notesSlide" else None
                if notes_tree is not None:
                    package.walk(_shapes, notes_tree, [], notes)
            if not (title or lines or notes):
                continue  # a picture, a chart: nothing to read
            heading = " ".join(title) or f"Slide {number}"
            first_title = first_title or " ".join(title)
            out.append(f"## {heading}")
            out.extend(lines)
            if notes:
                out.append(f"Notes: {notes[0].strip()}")
                out.extend(notes[1:])
        properties = properties_title(package)
    return "\n".join(out), first_title or properties
