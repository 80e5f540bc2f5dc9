"""Office Open XML packages (Word's .docx, Excel's .xlsx, PowerPoint's .pptx): zips of
XML parts, read with the standard library, each part bounded in size before it is
unpacked.

Errors name the file and the setting that named it: a file that is no such package (a
legacy .doc, .xls or .ppt renamed, or a password-protected document, which Office saves
as another kind of file) and a damaged part are one ConfigError each.
"""

from __future__ import annotations

import zipfile
from pathlib import Path
from types import TracebackType
from xml.etree import ElementTree

from harness.errors import ConfigError

MAX_PART_BYTES = 256 * 1024 * 1024
"""Bytes one part may take once unzipped: a few hundred times what a thousand-page
document's body takes, and a bound on a zip that unpacks to gigabytes."""

_APPS = {
    ".docx": ("Word", ".doc", "a Word Document"),
    ".xlsx": ("Excel", ".xls", "an Excel Workbook"),
    ".pptx": ("PowerPoint", ".ppt", "a PowerPoint Presentation"),
}


class Package:
    """An Office file opened for reading its parts (a context manager).

    `kind` is ".docx", ".xlsx" or ".pptx" (for the messages); `field` the setting that named the
    file. Raises ConfigError when `path` is no zip."""

    def __init__(self, path: Path, *, kind: str, field: str) -> None:
        self.path = path
        self.kind = kind
        self.field = field
        app, legacy, saved = _APPS[kind]
        try:
            self._zip = zipfile.ZipFile(path)
        except zipfile.BadZipFile:
            raise ConfigError(
                str(path),
                field,
                f"not a {kind} (a legacy {legacy}, or password-protected?): save it from {app} "
                f"as {saved} ({kind}) without a password",
            ) from None
        except OSError as exc:
            raise ConfigError(str(path), field, f"cannot read it ({exc})") from None

    def __enter__(self) -> Package:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self._zip.close()

    def part(self, name: str) -> ElementTree.Element | None:
        """The XML part `name` parsed, or None when the package has none."""
        try:
            info = self._zip.getinfo(name)
        except KeyError:
            return None
        if info.file_size > MAX_PART_BYTES:
            raise ConfigError(
                str(self.path),
                self.field,
                f"{name} unpacks to {info.file_size:,} bytes, over the {MAX_PART_BYTES:,} "
                "harness reads",
            )
        try:
            return ElementTree.fromstring(self._zip.read(info))
        except (ElementTree.ParseError, zipfile.BadZipFile, OSError, ValueError) as exc:
            raise ConfigError(
                str(self.path),
                self.field,
                f"cannot read this {self.kind}: {name} is damaged ({type(exc).__name__}: {exc})",
            ) from None
