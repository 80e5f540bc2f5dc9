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


SHEET = "http://schemas.openxmlformats.org/spreadsheetml/2006/main"
REL = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"


def xlsx(path, sheets, shared=(), hidden=(), title=None, styles=None, date1904=False):
    """An Excel workbook written by hand as Excel lays it out: `sheets` maps each sheet's
    name to the XML of its rows (`<row>`s of `<c>` cells); `shared` are the shared
    strings (a `<t>` each, or rich-text runs' XML as given); `title` the document
    properties' title; `styles` the XML inside the styles part (`<numFmts>`,
    `<cellXfs>`); `date1904` the workbook's date system."""
    names = list(sheets)
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as z:
        z.writestr(
            "xl/workbook.xml",
            f'<workbook xmlns="{SHEET}" xmlns:r="{REL}">'
            + ('<workbookPr date1904="1"/>' if date1904 else "")
            + "<sheets>"
            + "".join(
                f'<sheet name="{n}" sheetId="{i}" r:id="rId{i}"'
                + (' state="hidden"' if n in hidden else "")
                + "/>"
                for i, n in enumerate(names, 1)
            )
            + "</sheets></workbook>",
        )
        z.writestr(
            "xl/_rels/workbook.xml.rels",
            '<Relationships xmlns="http://schemas.openxmlformats.org/package/2006/relationships">'
            + "".join(
                f'<Relationship Id="rId{i}" Type="{REL}/worksheet" '
                f'Target="{"/xl/" if i == 2 else ""}worksheets/sheet{i}.xml"/>'
                for i in range(1, len(names) + 1)
            )
            + "</Relationships>",
        )
        z.writestr(
            "xl/sharedStrings.xml",
            f'<sst xmlns="{SHEET}">'
            + "".join(f"<si>{s if s.startswith('<') else f'<t>{s}</t>'}</si>" for s in shared)
            + "</sst>",
        )
        if title is not None:
            write_properties(z, title)
        if styles is not None:
            z.writestr("xl/styles.xml", f'<styleSheet xmlns="{SHEET}">{styles}</styleSheet>')
        for i, n in enumerate(names, 1):
            z.writestr(
                f"xl/worksheets/sheet{i}.xml",
                f'<worksheet xmlns="{SHEET}"><sheetData>{sheets[n]}</sheetData></worksheet>',
            )
    return path


ODF_NS = (
    'xmlns:office="urn:oasis:names:tc:opendocument:xmlns:office:1.0" '
    'xmlns:text="urn:oasis:names:tc:opendocument:xmlns:text:1.0" '
    'xmlns:table="urn:oasis:names:tc:opendocument:xmlns:table:1.0" '
    'xmlns:style="urn:oasis:names:tc:opendocument:xmlns:style:1.0" '
    'xmlns:draw="urn:oasis:names:tc:opendocument:xmlns:drawing:1.0" '
    'xmlns:svg="urn:oasis:names:tc:opendocument:xmlns:svg-compatible:1.0" '
    'xmlns:dc="http://purl.org/dc/elements/1.1/" '
    'xmlns:xml="http://www.w3.org/XML/1998/namespace"'
)


def odf(path, kind, body, *, styles="", title=None, manifest=None):
    """An OpenDocument file written by hand as LibreOffice lays it out: `kind` is "text"
    or "spreadsheet", `body` the XML inside office:<kind>, `styles` content.xml's
    automatic styles, `title` meta.xml's, `manifest` META-INF/manifest.xml's XML."""
    with zipfile.ZipFile(path, "w") as z:
        z.writestr("mimetype", f"application/vnd.oasis.opendocument.{kind}")
        z.writestr(
            "content.xml",
            f"<office:document-content {ODF_NS}><office:automatic-styles>{styles}"
            f"</office:automatic-styles><office:body><office:{kind}>{body}</office:{kind}>"
            "</office:body></office:document-content>",
        )
        if title is not None:
            z.writestr(
                "meta.xml",
                f"<office:document-meta {ODF_NS}><office:meta><dc:title>{title}</dc:title>"
                "</office:meta></office:document-meta>",
            )
        if manifest is not None:
            z.writestr("META-INF/manifest.xml", manifest)
    return path
