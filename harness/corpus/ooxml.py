"""Office Open XML packages (Word's .docx, Excel's .xlsx, PowerPoint's .pptx), and
OpenDocument text and spreadsheets (.odt, .ods) and EPUB books (.epub), which are packed
the same way: zips of XML parts, read with the standard library, each part bounded in
size before it is unpacked.

Errors name the file and the setting that named it: a file that is no such package (a
legacy .doc, .xls or .ppt renamed, or a password-protected document, which Office saves
as another kind of file), a damaged part (bad compressed data, an encrypted entry, a
compression method zipfile lacks, XML that does not parse, XML declaring a DTD), XML
nested past Python's recursion limit and a file that would unpack past
MAX_UNPACKED_BYTES are one ConfigError each. An empty file (what Windows' "New > Microsoft Word Document" makes)
is `empty`: no text, no error. Part names are matched without regard to case, as the
format's own rules match them.
"""

from __future__ import annotations

import posixpath
import re
import struct
import zipfile
import zlib
from collections.abc import Callable
from pathlib import Path
from types import TracebackType
from typing import Any, TypeVar, overload
from xml.etree import ElementTree

from harness.errors import ConfigError

MAX_UNPACKED_BYTES = 64 * 1024 * 1024
"""XML (and an EPUB's XHTML) one file may unpack to, all parts read together: several
times what a thousand-page document's body takes, while its parsed tree takes some 17
times as much memory (about 1 GB at the bound; an EPUB's chapters, read by an HTML
parser, are bounded one by one as well). A small zip that unpacks to gigabytes is
refused before it is read."""
DAMAGED = (
    zipfile.BadZipFile,
    zlib.error,
    EOFError,
    RuntimeError,  # an encrypted entry
    NotImplementedError,  # a compression method or zip version zipfile lacks
    ValueError,
    OSError,
    struct.error,
    ElementTree.ParseError,
)
"""What reading a damaged package raises."""
MC = "http://schemas.openxmlformats.org/markup-compatibility/2006"
"""Markup compatibility: `mc:AlternateContent`, one content written for new readers
and again for old."""
MATH = (
    "http://schemas.openxmlformats.org/officeDocument/2006/math",
    "http://purl.oclc.org/ooxml/officeDocument/math",  # "Strict Open XML"
)
"""Office Math, which Word and PowerPoint write equations in."""
_DC = "http://purl.org/dc/elements/1.1/"
_SPACE = re.compile(r"\s+")
LINE_SPACE = re.compile(r"[ \t\u00a0]+")
"""Runs of spaces, tabs and no-break spaces in a line of a part's text, which the
readers write as one space (line breaks are kept)."""
T = TypeVar("T")

_APPS = {
    ".docx": ("Word", ".doc", "a Word Document"),
    ".xlsx": ("Excel", ".xls", "an Excel Workbook"),
    ".pptx": ("PowerPoint", ".ppt", "a PowerPoint Presentation"),
    ".odt": ("LibreOffice Writer", ".doc", "an ODF Text Document"),
    ".ods": ("LibreOffice Calc", ".xls", "an ODF Spreadsheet"),
}
_NOT_A = {
    kind: f"not a {kind} (a legacy {legacy}, or password-protected?): save it from {app} "
    f"as {saved} ({kind}) without a password"
    if kind.startswith((".doc", ".xls", ".ppt"))  # Office encrypts into another kind of file
    else f"not a {kind} (a legacy {legacy} renamed?): save it from {app} as {saved} ({kind})"
    for kind, (app, legacy, saved) in _APPS.items()
} | {
    ".epub": "not an EPUB (no zip: a Kindle .mobi or .azw renamed?): convert it to EPUB, "
    "with Calibre for one"
}
"""What a file that is no zip is told, by the kind it was named as."""


@overload
def number(value: str | None, default: int) -> int: ...
@overload
def number(value: str | None, default: None) -> int | None: ...
def number(value: str | None, default: int | None) -> int | None:
    """A whole number attribute (ASCII digits only: `"²".isdigit()` holds; at most 18 of
    them, as Python refuses to read thousands), else `default`."""
    ok = value is not None and value.isascii() and value.isdigit() and len(value) <= 18
    return int(value) if ok and value is not None else default


class Package:
    """An Office file (or an EPUB) opened for reading its parts (a context manager).

    `kind` is ".docx", ".xlsx", ".pptx", ".odt", ".ods" or ".epub" (for the messages);
    `field` the setting that named the file. Raises ConfigError when `path` is no zip."""

    def __init__(self, path: Path, *, kind: str, field: str) -> None:
        self.path = path
        self.kind = kind
        self.field = field
        self._left = MAX_UNPACKED_BYTES  # bytes of XML still to be read
        self._zip: zipfile.ZipFile | None = None
        self._names: dict[str, zipfile.ZipInfo] = {}
        try:
            if path.stat().st_size == 0:
                return
            self._zip = zipfile.ZipFile(path)
            self._names = {_name(info).lower(): info for info in self._zip.infolist()}
        except zipfile.BadZipFile:
            raise ConfigError(str(path), field, _NOT_A[kind]) from None
        except DAMAGED as exc:
            raise ConfigError(
                str(path), field, f"cannot read it ({type(exc).__name__}: {exc})"
            ) from None

    @property
    def empty(self) -> bool:
        """Whether the file is empty (0 bytes): a document no one has written in."""
        return self._zip is None

    def __enter__(self) -> Package:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        if self._zip is not None:
            self._zip.close()

    def part(self, name: str) -> ElementTree.Element | None:
        """The XML part `name` parsed, or None when the package has none (or is empty).
        Each part read takes its unpacked size from the file's allowance. An EPUB's
        part may name the DTD its EPUB 2 writer followed (one that declares nothing)."""
        return self._read(name, _parse_epub if self.kind == ".epub" else _parse)

    def data(self, name: str, limit: int) -> bytes | None:
        """The bytes of part `name` (an EPUB's XHTML, which an HTML parser reads), or
        None when the package has none; bounded as `part` is, and refused past `limit`
        bytes (an HTML parser's tree takes far more memory than ElementTree's)."""
        info = self._names.get(name.lower())
        if info is not None and info.file_size > limit:
            raise ConfigError(
                str(self.path),
                self.field,
                f"{name} holds {info.file_size:,} bytes, more than harness reads of one part "
                f"({limit:,}): split it",
            )
        return self._read(name, bytes)

    def _read(self, name: str, parse: Callable[[bytes], T]) -> T | None:
        info = self._names.get(name.lower())
        if info is None or self._zip is None:
            return None
        self._left -= info.file_size
        if self._left < 0:
            raise ConfigError(
                str(self.path),
                self.field,
                f"it unpacks to over {MAX_UNPACKED_BYTES:,} bytes of XML (at {name}), more "
                "than harness reads from one file: split the document",
            )
        try:
            return parse(self._zip.read(info))
        except DAMAGED as exc:
            raise ConfigError(
                str(self.path),
                self.field,
                f"cannot read this {self.kind}: {name} is damaged ({type(exc).__name__}: {exc})",
            ) from None

    def main(self, name: str) -> ElementTree.Element:
        """The part `name` the file cannot be without (a .docx's `word/document.xml`),
        parsed; ConfigError naming the file when it lacks it."""
        part = self.part(name)
        if part is None:
            raise ConfigError(str(self.path), self.field, f"a {self.kind} without {name}")
        return part

    def walk(self, read: Callable[..., T], *args: Any) -> T:
        """`read(*args)` (a walk over a part's XML), with XML nested too deep to walk
        refused as one ConfigError."""
        try:
            return read(*args)
        except RecursionError:
            raise ConfigError(
                str(self.path),
                self.field,
                f"cannot read this {self.kind}: its XML is nested too deep",
            ) from None


def _name(info: zipfile.ZipInfo) -> str:
    """An entry's name as its writer meant it: a zip without the UTF-8 flag (what
    Info-ZIP's `zip` writes, which EPUB recipes use) holds UTF-8 names that zipfile
    decodes as code page 437."""
    if info.flag_bits & 0x800:
        return info.filename
    try:
        return info.filename.encode("cp437").decode("utf-8")
    except UnicodeError:
        return info.filename


class _NoDoctype(ElementTree.TreeBuilder):
    """A tree builder that refuses a DTD as soon as the parser meets one."""

    def doctype(self, name: str, pubid: str | None, system: str | None) -> None:
        raise ValueError("it declares a DTD, which these files never need")


_PLAIN_DOCTYPE = re.compile(rb"<!DOCTYPE[^\[>]*>")
"""A document type declaration that names a DTD and declares nothing itself (no
internal subset, so no entity)."""


def _parse_epub(data: bytes) -> ElementTree.Element:
    """`_parse`, after a plain DOCTYPE at the start (EPUB 2's OPF and NCX name theirs)
    is taken out: expat would not fetch the DTD, and one that declares entities is still
    refused."""
    head = _PLAIN_DOCTYPE.sub(b"", data[:4096], count=1)
    return _parse(head + data[4096:])


def _parse(data: bytes) -> ElementTree.Element:
    """XML parsed, a part declaring a DTD refused (ValueError): Office never writes one
    (the format forbids it), and its entities would expand a few bytes into gigabytes
    of text, past what MAX_UNPACKED_BYTES bounds."""
    parser = ElementTree.XMLParser(target=_NoDoctype())
    parser.feed(data)
    return parser.close()


_REL = (
    "http://schemas.openxmlformats.org/officeDocument/2006/relationships",
    "http://purl.oclc.org/ooxml/officeDocument/relationships",
)
_PACKAGE_RELS = "http://schemas.openxmlformats.org/package/2006/relationships"


def relationships(package: Package, part: str) -> dict[str, tuple[str, str]]:
    """The relationships of `part` (its `_rels/<name>.rels`): id -> (the type's last
    word, "slide", "worksheet", ...; the target part's name). Links out of the package
    are left out."""
    folder, name = posixpath.split(part)
    rels = package.part(posixpath.join(folder, "_rels", name + ".rels"))
    out: dict[str, tuple[str, str]] = {}
    for r in rels if rels is not None else ():
        if r.tag != f"{{{_PACKAGE_RELS}}}Relationship" or r.get("TargetMode") == "External":
            continue
        target = r.get("Target", "")
        path = target.lstrip("/") if target.startswith("/") else posixpath.join(folder, target)
        out[r.get("Id", "")] = (r.get("Type", "").rsplit("/", 1)[-1], posixpath.normpath(path))
    return out


def rel_id(el: ElementTree.Element) -> str | None:
    """The relationship id an element names (`r:id`), or None."""
    for ns in _REL:
        value = el.get(f"{{{ns}}}id")
        if value is not None:
            return value
    return None


def properties_title(package: Package, part: str = "docProps/core.xml") -> str:
    """The Dublin Core title in the package's document properties (`docProps/core.xml`;
    an OpenDocument file's `meta.xml`), or ""."""
    properties = package.part(part)
    if properties is None:
        return ""
    return _SPACE.sub(" ", properties.findtext(f".//{{{_DC}}}title") or "").strip()
