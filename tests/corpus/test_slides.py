"""PowerPoint decks (.pptx) in a corpus, written by hand as PowerPoint lays them out (the
presentation's slide list, each slide's shape tree, its notes page beside it)."""

from __future__ import annotations

import zipfile
from pathlib import Path

import pytest

from harness.corpus import load_documents
from harness.corpus.slides import slides_text
from harness.errors import ConfigError
from tests.corpus.office import write_properties

P = "http://schemas.openxmlformats.org/presentationml/2006/main"
A = "http://schemas.openxmlformats.org/drawingml/2006/main"
R = "http://schemas.openxmlformats.org/officeDocument/2006/relationships"
RELS = "http://schemas.openxmlformats.org/package/2006/relationships"
NS = f'xmlns:p="{P}" xmlns:a="{A}" xmlns:r="{R}"'


def shape(paragraphs: list[tuple[str, int]], placeholder: str | None = "") -> str:
    """A shape holding `paragraphs` (text, bullet level); `placeholder` is its type
    ("" a content placeholder, None a plain text box)."""
    ph = (
        ""
        if placeholder is None
        else f'<p:ph type="{placeholder}"/>'
        if placeholder
        else "<p:ph idx='1'/>"
    )
    paras = "".join(
        f'<a:p><a:pPr lvl="{lvl}"/><a:r><a:t>{text}</a:t></a:r></a:p>' for text, lvl in paragraphs
    )
    return (
        f"<p:sp><p:nvSpPr><p:cNvPr id='2' name='s'/><p:cNvSpPr/><p:nvPr>{ph}</p:nvPr></p:nvSpPr>"
        f"<p:txBody><a:bodyPr/>{paras}</p:txBody></p:sp>"
    )


def slide(shapes: str, show: bool = True) -> str:
    hidden = "" if show else ' show="0"'
    return f"<p:sld {NS}{hidden}><p:cSld><p:spTree>{shapes}</p:spTree></p:cSld></p:sld>"


def deck(
    path: Path, slides: list[str], notes: dict[int, str] | None = None, title: str = ""
) -> Path:
    """Write a .pptx of `slides` (slide XML) at `path`; `notes` maps a slide's index to
    its notes page's shapes."""
    notes = notes or {}
    with zipfile.ZipFile(path, "w") as z:
        # listed in the presentation out of file order: the list decides
        order = list(reversed(range(len(slides))))
        z.writestr(
            "ppt/presentation.xml",
            f"<p:presentation {NS}><p:sldIdLst>"
            + "".join(f'<p:sldId id="{256 + i}" r:id="rId{i + 1}"/>' for i in order)
            + "</p:sldIdLst></p:presentation>",
        )
        z.writestr(
            "ppt/_rels/presentation.xml.rels",
            f'<Relationships xmlns="{RELS}">'
            + "".join(
                f'<Relationship Id="rId{i + 1}" Type="{R}/slide" Target="slides/slide{i + 1}.xml"/>'
                for i in range(len(slides))
            )
            + "</Relationships>",
        )
        for i, xml in enumerate(slides):
            z.writestr(f"ppt/slides/slide{i + 1}.xml", xml)
            if i in notes:
                z.writestr(
                    f"ppt/slides/_rels/slide{i + 1}.xml.rels",
                    f'<Relationships xmlns="{RELS}"><Relationship Id="rId9" '
                    f'Type="{R}/notesSlide" Target="../notesSlides/notesSlide{i + 1}.xml"/>'
                    "</Relationships>",
                )
                z.writestr(
                    f"ppt/notesSlides/notesSlide{i + 1}.xml",
                    f"<p:notes {NS}><p:cSld><p:spTree>{notes[i]}</p:spTree></p:cSld></p:notes>",
                )
        if title:
            write_properties(z, title)
    return path


def test_slides_read_in_the_decks_order_under_their_titles_with_notes(tmp_path):
    table = (
        "<p:graphicFrame><a:graphic><a:graphicData><a:tbl>"
        "<a:tr><a:tc><a:txBody><a:p><a:r><a:t>Item</a:t></a:r></a:p></a:txBody></a:tc>"
        "<a:tc><a:txBody><a:p><a:r><a:t>Limit</a:t></a:r></a:p></a:txBody></a:tc></a:tr>"
        "<a:tr><a:tc><a:txBody><a:p><a:r><a:t>Meals</a:t></a:r></a:p></a:txBody></a:tc>"
        "<a:tc><a:txBody><a:p><a:r><a:t>£45 a day</a:t></a:r></a:p></a:txBody></a:tc></a:tr>"
        "</a:tbl></a:graphicData></a:graphic></p:graphicFrame>"
    )
    slides = [
        # the deck lists these last to first
        slide(
            shape([("Expense limits", 0)], "title")
            + table
            + shape([("Receipts in 30 days", 0)], None)
        ),
        slide(shape([("Backup: the old policy", 0)], "title"), show=False),
        slide(
            shape([("Annual leave", 0)], "title")
            + shape([("27 days a year", 0), ("30 after five years", 1)])
            + shape([("7", 0)], "sldNum")
            + "<p:grpSp>"
            + shape([("In a group", 0)], None)
            + "</p:grpSp>"
        ),
        slide(""),  # a picture only
        slide(shape([("Onboarding, week one", 0)])),  # no title
    ]
    notes = {
        2: shape([("(slide picture)", 0)], "sldImg")
        + shape([("Carry over 5 days.", 0), ("Ask People.", 0)], "body")
    }
    text, title = slides_text(deck(tmp_path / "onboarding.pptx", slides, notes))
    assert text.splitlines() == [
        "## Slide 1",
        "Onboarding, week one",
        "## Annual leave",
        "27 days a year",
        "  30 after five years",
        "In a group",
        "Notes: Carry over 5 days.",
        "Ask People.",
        "## Expense limits",
        "Item | Limit",
        "Meals | £45 a day",
        "Receipts in 30 days",
    ]
    assert title == "Annual leave"  # the first titled slide's (the first slide has none)
    untitled = [slide(shape([("Onboarding, week one", 0)]))]
    assert slides_text(deck(tmp_path / "t.pptx", untitled, title="Onboarding"))[1] == "Onboarding"


def test_equation_boxes_hidden_slides_and_a_slide_listed_twice(tmp_path):
    """PowerPoint wraps a text box holding an equation in mc:AlternateContent (read
    once); `show="false"` hides a slide as "0" does; a slide the list names twice is
    read once."""
    math = (
        '<mc:AlternateContent xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006">'
        '<mc:Choice xmlns:a14="http://schemas.microsoft.com/office/drawing/2010/main" '
        'Requires="a14"><a14:m><m:oMathPara xmlns:m="http://schemas.openxmlformats.org/'
        'officeDocument/2006/math"><m:oMath><m:r><m:t>v=d/t</m:t></m:r></m:oMath>'
        "</m:oMathPara></a14:m></mc:Choice><mc:Fallback/></mc:AlternateContent>"
    )
    equation = shape([("Speed is ", 0)], None).replace("</a:r></a:p>", "</a:r>" + math + "</a:p>")
    boxed = (
        '<mc:AlternateContent xmlns:mc="http://schemas.openxmlformats.org/markup-compatibility/2006">'
        '<mc:Choice Requires="a14">' + equation + "</mc:Choice>"
        "<mc:Fallback>" + shape([("(picture of the equation)", 0)], None) + "</mc:Fallback>"
        "</mc:AlternateContent>"
    )
    slides = [
        slide(shape([("Physics", 0)], "title") + boxed),
        slide(shape([("Old", 0)], "title"), show=False),
    ]
    slides[1] = slides[1].replace('show="0"', 'show="false"')
    path = deck(tmp_path / "p.pptx", slides)
    assert slides_text(path)[0] == "## Physics\nSpeed is v=d/t"
    twice = tmp_path / "twice.pptx"
    with zipfile.ZipFile(path) as src, zipfile.ZipFile(twice, "w") as dst:
        for item in src.infolist():
            data = src.read(item)
            if item.filename == "ppt/presentation.xml":
                data = data.replace(
                    b'r:id="rId1"/>', b'r:id="rId1"/><p:sldId id="300" r:id="rId1"/>'
                )
            dst.writestr(item, data)
    assert slides_text(twice)[0] == "## Physics\nSpeed is v=d/t"


def test_a_folder_of_decks_is_read_and_a_deck_of_pictures_is_left_out(tmp_path, warnings):
    folder = tmp_path / "decks"
    folder.mkdir()
    deck(folder / "leave.pptx", [slide(shape([("Leave", 0)], "title") + shape([("27 days", 0)]))])
    deck(folder / "photos.pptx", [slide(""), slide("")])
    (folder / "~$leave.pptx").write_bytes(b"\x0bJane Doe")
    docs = load_documents(folder)
    assert [(d.doc_id, d.title) for d in docs] == [("leave.pptx", "Leave")]
    assert docs[0].text == "## Leave\n27 days"
    assert len(warnings) == 1 and "photos.pptx" in warnings[0] and "without text" in warnings[0]


def test_a_file_that_is_no_pptx_is_named(tmp_path):
    legacy = tmp_path / "old.pptx"
    legacy.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 64)
    with pytest.raises(
        ConfigError, match=r"not a \.pptx \(a legacy \.ppt, or password-protected"
    ) as e:
        slides_text(legacy)
    assert str(legacy) in str(e.value)
    bare = tmp_path / "bare.pptx"
    with zipfile.ZipFile(bare, "w") as z:
        z.writestr("[Content_Types].xml", "<Types/>")
    with pytest.raises(ConfigError, match=r"without ppt/presentation\.xml"):
        slides_text(bare)
