"""Parts of Office files written by hand for the Office readers' tests."""

from __future__ import annotations

import zipfile


def write_properties(z: zipfile.ZipFile, title: str) -> None:
    """Write the document properties part (`docProps/core.xml`) with `title`."""
    z.writestr(
        "docProps/core.xml",
        '<cp:coreProperties xmlns:cp="http://schemas.openxmlformats.org/package/2006/'
        'metadata/core-properties" xmlns:dc="http://purl.org/dc/elements/1.1/">'
        f"<dc:title>{title}</dc:title></cp:coreProperties>",
    )
