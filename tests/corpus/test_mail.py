"""Email as documents: a message file (.eml) and a mailbox (.mbox), a document a
message, without what a reply quotes."""

from __future__ import annotations

from email.message import EmailMessage

import pytest

from harness.corpus import load_documents
from harness.corpus.mail import eml_text, message_text
from harness.errors import ConfigError


def message(body: str, *, subject: str = "Printer on floor 2 jams", html: str | None = None):
    msg = EmailMessage()
    msg["Subject"] = subject
    msg["From"] = "Ana Costa <ana@example.com>"
    msg["To"] = "it-help@example.com"
    msg["Date"] = "Sat, 28 Nov 2026 14:30:00 +0000"
    msg.set_content(body)
    if html is not None:
        msg.add_alternative(html, subtype="html")
    return msg


def test_a_reply_reads_as_its_own_words_under_its_headers(tmp_path):
    """What a reply quotes (the attribution Gmail wraps over two lines, the `>` lines)
    and the signature are left out; an answer written between quotes is kept; the
    subject is the title; an attachment is named, not read."""
    msg = message(
        "Try the tray on the left.\n\n"
        "On Sat, 28 Nov 2026 at 14:30, Ana Costa <ana@example.com>\nwrote:\n"
        "> It jams on every duplex job.\n>\n> Since Monday.\n\n"
        "Then restart it.\n\n> Which model?\n\nA Ricoh.\n\n-- \nBen, IT help desk\n"
    )
    msg.add_attachment(b"%PDF-1.4", maintype="application", subtype="pdf", filename="manual.pdf")
    (tmp_path / "reply.eml").write_bytes(bytes(msg))
    text, title = eml_text(tmp_path / "reply.eml")
    assert title == "Printer on floor 2 jams"
    assert text == (
        "Subject: Printer on floor 2 jams\nFrom: Ana Costa <ana@example.com>\n"
        "To: it-help@example.com\nDate: 2026-11-28 14:30 +0000\n\n"
        "Try the tray on the left.\n\nThen restart it.\n\nA Ricoh.\n\n"
        "Attachments: manual.pdf"
    )
    (doc,) = load_documents(tmp_path)
    assert (doc.doc_id, doc.title, doc.text) == ("reply.eml", title, text)


def test_outlook_s_and_other_languages_quoted_history_is_left_out():
    outlook = message(
        "Fixed now.\n\n________________________________\nFrom: Ana Costa <ana@example.com>\n"
        "Sent: Saturday, 28 November 2026 14:30\nTo: IT help\nSubject: Printer\n\nIt jams.\n"
    )
    assert message_text(outlook)[0].endswith("\n\nFixed now.")
    original = message("Fixed.\n\n-----Original Message-----\nFrom: Ana\nIt jams.\n")
    assert message_text(original)[0].endswith("\n\nFixed.")
    german = message("Erledigt.\n\nAm 28.11.2026 um 14:30 schrieb Ana Costa:\n> Er klemmt.\n")
    assert message_text(german)[0].endswith("\n\nErledigt.")


def test_an_html_message_without_plain_text_loses_its_quote_blocks():
    """Gmail's quote, Apple Mail's and Thunderbird's cited blockquote, Outlook's reply
    header and all after it; a message with a plain-text part is read from that."""
    html = (
        "<html><head><style>p {color: red}</style></head><body><p>Use <b>tray 2</b>.</p>"
        '<div class="gmail_quote">On Sat, Ana wrote:<blockquote>It jams.</blockquote></div>'
        '<blockquote type="cite">Older text.</blockquote><p>Thanks!</p>'
        '<div id="divRplyFwdMsg">From: Ana</div><p>It jams, says Ana.</p></body></html>'
    )
    msg = EmailMessage()
    msg["Subject"] = "Re: Printer"
    msg.set_content(html, subtype="html")
    assert message_text(msg) == ("Subject: Re: Printer\n\nUse tray 2.\nThanks!", "Re: Printer")
    both = message("Plain words.", html="<p>HTML words.</p>")
    assert message_text(both)[0].endswith("\n\nPlain words.")


def test_a_mailbox_is_a_document_a_message(tmp_path, warnings):
    """Numbered by their place in the mailbox; a message without a body is left out
    (the others keep their numbers); a body line escaped as `>From ` is text, not a
    quote; a Latin-1 message decodes by its charset."""
    first = message("From the start, it jammed.".replace("From", "From", 1))
    empty = EmailMessage()
    empty["Subject"] = "(no body)"
    latin = message("Caf\u00e9 machine broken.", subject="Caf\u00e9")
    latin.set_content("Caf\u00e9 machine broken.", charset="latin-1", cte="quoted-printable")
    parts = []
    for msg in (first, empty, latin):
        raw = bytes(msg).replace(b"\nFrom the start", b"\n>From the start")
        parts.append(b"From ana@example.com Sat Nov 28 14:30:00 2026\n" + raw + b"\n")
    (tmp_path / "inbox.mbox").write_bytes(b"".join(parts))
    docs = load_documents(tmp_path)
    assert [(d.doc_id, d.title, d.source) for d in docs] == [
        ("inbox.mbox:1", "Printer on floor 2 jams", f"{tmp_path / 'inbox.mbox'}:1"),
        ("inbox.mbox:3", "Café", f"{tmp_path / 'inbox.mbox'}:3"),
    ]
    assert docs[0].text.endswith("\n\nFrom the start, it jammed.")
    assert docs[1].text.endswith("\n\nCafé machine broken.")


def test_a_file_that_is_no_mailbox_is_refused_or_skipped_in_a_folder(tmp_path, warnings):
    (tmp_path / "notes.mbox").write_text("Dear all, this is not a mailbox.\n")
    (tmp_path / "a.md").write_text("# A\n\nText.\n")
    assert [d.doc_id for d in load_documents(tmp_path)] == ["a.md"]
    assert warnings == [
        "skipped notes.mbox: not an mbox mailbox (it does not start with a 'From ' line): "
        "export the folder as mbox, or save its messages as .eml files"
    ]
    with pytest.raises(ConfigError, match=r"notes\.mbox: corpus\.sources: not an mbox mailbox"):
        load_documents(tmp_path / "notes.mbox")
