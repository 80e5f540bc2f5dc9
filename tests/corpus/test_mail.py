"""Email as documents: a message file (.eml) and a mailbox (.mbox), a document a
message, without what a reply quotes."""

from __future__ import annotations

import email
import email.policy
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
    first = message("From the start, it jammed.")
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
    assert warnings == [f"{tmp_path / 'inbox.mbox'}: left out messages: 1 without text"]
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


def raw_message(headers: str, body: bytes, content_type: str = "text/plain") -> bytes:
    return f"{headers}\nMIME-Version: 1.0\nContent-Type: {content_type}\n\n".encode() + body + b"\n"


def read_raw(headers: str, body: bytes, content_type: str) -> str:
    """The text of a message written as bytes (`raw_message`)."""
    raw = raw_message(headers, body, content_type)
    return message_text(email.message_from_bytes(raw, policy=email.policy.default))[0]


def test_a_forward_is_kept_whole_and_the_sender_s_own_text_is_not_taken_for_a_quote():
    """Outlook writes the same header block above a forward as above a reply, Gmail
    puts an HTML forward in its quote block: a forward (by its subject) keeps them. A
    bare `--` with many lines after it, a Python session's `>>>` lines, and a sentence
    that ends 'wrote:' without a date or an address are the sender's."""
    outlook = message(
        "FYI, see below.\n\n________________________________\nFrom: Customer <c@x.com>\n"
        "Sent: Saturday, 28 November 2026 14:30\nTo: Support\nSubject: Invoice 123\n\n"
        "The invoice charges us twice for March.\n",
        subject="FW: Invoice 123",
    )
    assert message_text(outlook)[0].endswith("The invoice charges us twice for March.")
    gmail = EmailMessage()
    gmail["Subject"] = "Fwd: Printer"
    gmail.set_content(
        '<div>FYI</div><div class="gmail_quote"><div class="gmail_attr">---------- '
        "Forwarded message ---------<br>From: Ana</div><div>It jams.</div></div>",
        subtype="html",
    )
    assert message_text(gmail)[0].endswith(
        "FYI\n---------- Forwarded message ---------\nFrom: Ana\nIt jams."
    )
    own = message(
        "Steps to reproduce\n--\n1. open the app\n2. tap Print\n3. pick duplex\n4. wait\n"
        "5. see the jam\n6. restart\n7. again\n\n>>> import printer\n>>> printer.reset()\n\n"
        "On Monday the server crashed.\nWe checked the logs and the kernel wrote:\n"
        "> Out of memory\n\nWe then added swap.\n\nGracias, ya está.\n"
        "El servidor ya arranca después del cambio.\nAna escribió:\n> ¿Arranca?\n"
    )
    body = message_text(own)[0].split("\n\n", 1)[1]
    assert body == (
        "Steps to reproduce\n--\n1. open the app\n2. tap Print\n3. pick duplex\n4. wait\n"
        "5. see the jam\n6. restart\n7. again\n\n>>> import printer\n>>> printer.reset()\n\n"
        "On Monday the server crashed.\nWe checked the logs and the kernel wrote:\n\n"
        "We then added swap.\n\nGracias, ya está.\nEl servidor ya arranca después del "
        "cambio.\nAna escribió:"
    )


def test_every_inline_text_part_an_attached_message_and_charsets_as_written():
    """Apple Mail puts text, an image and text again; a message forwarded as an
    attachment is read after the body; a logo with a Content-ID is not named; text
    labelled ASCII that is UTF-8, or Latin-1 that is Windows-1252, and a raw 8-bit
    subject read as meant; format=flowed lines are joined."""
    inner = raw_message("Subject: Original\nFrom: c@x.com", b"The printer jams on duplex.")
    body = (
        b"--b\nContent-Type: text/plain; charset=us-ascii\n\nCaf\xc3\xa9 first.\n"
        b"--b\nContent-Type: image/png\nContent-Disposition: inline; filename=shot.png\n\nPNG\n"
        b"--b\nContent-Type: text/plain; charset=iso-8859-1\n\n\x93Quoted\x94 then.\n"
        b"--b\nContent-Type: image/png; name=logo.png\nContent-ID: <logo>\n\nPNG\n"
        b"--b\nContent-Type: text/plain; format=flowed; delsp=yes\n\nIt conti \nnues here.\n"
        b"--b\nContent-Type: message/rfc822\n\n" + inner + b"\n--b--\n"
    )
    raw = (
        b"Subject: Caf\xe9 note\nFrom: a@x.com\nMIME-Version: 1.0\n"
        b'Content-Type: multipart/mixed; boundary="b"\n\n' + body
    )
    text, subject = message_text(email.message_from_bytes(raw, policy=email.policy.default))
    assert subject == "Café note"
    assert text == (
        "Subject: Café note\nFrom: a@x.com\n\nCafé first.\n\n\u201cQuoted\u201d then.\n\n"
        "It continues here.\n\nAttachments: shot.png\n\n"
        "Subject: Original\nFrom: c@x.com\n\nThe printer jams on duplex."
    )


def test_broken_messages_never_stop_a_load(tmp_path, warnings):
    """A date past any year, multiparts nested a thousand deep, an address group the
    policy cannot print: a header reads as written, a message that cannot be taken
    apart is left out of a mailbox (counted) and a folder's .eml skipped with a
    warning; Gmail's spam and trash are left out; an Apple Mail export (a folder
    `Inbox.mbox` holding `mbox`, starting with a blank line) reads, keyed by
    Message-ID."""
    date = raw_message(
        "Subject: Late\nDate: Sat, 28 Nov 99999999999999999999 14:30:00 +0000\n"
        'To: Group: a@x, "b" <b@x>; c@x\nMessage-ID: <m1@x>',
        b"Still read.",
    )
    deep = b"Subject: Deep\nMessage-ID: <m2@x>\nMIME-Version: 1.0\n" + b"".join(
        f'Content-Type: multipart/mixed; boundary="b{i}"\n\n--b{i}\n'.encode() for i in range(1200)
    )
    spam = raw_message("Subject: Win\nX-Gmail-Labels: Spam,Unread\nMessage-ID: <m3@x>", b"Buy.")
    folder = tmp_path / "Inbox.mbox"
    folder.mkdir()
    (folder / "mbox").write_bytes(
        b"\n".join(b"From x@x Sat Nov 28 14:30:00 2026\n" + m for m in (date, deep, spam)).join(
            [b"\n", b""]
        )
    )
    (tmp_path / "deep.eml").write_bytes(deep)
    docs = load_documents(tmp_path)
    assert [(d.doc_id, d.title) for d in docs] == [("Inbox.mbox:m1@x", "Late")]
    assert docs[0].text.startswith(
        'Subject: Late\nTo: Group: a@x, "b" <b@x>; c@x\nDate: Sat, 28 Nov 99999999999999999999'
    )
    mailbox_warning, skipped = sorted(warnings)
    assert mailbox_warning == (
        f"{folder / 'mbox'}: left out messages: 1 the email package could not take apart; "
        "1 Gmail labels spam, trash or chat"
    )
    assert skipped.startswith("skipped deep.eml: cannot read this message (RecursionError: ")


def test_what_a_second_review_found(tmp_path, warnings):
    """Apple Mail quotes a forwarded message with `>`; a plain part that is empty gives
    way to the HTML, and attachments are named from every alternative; a damaged
    `filename*` parameter loses only the name; Outlook for Mac's From/Date block is
    history; a sentence with a number ending 'wrote:' is the sender's; a bare `--`
    above a quoted reply is a signature; format=flowed does not run a line into a
    quote."""
    apple = message(
        "FYI\n\nBegin forwarded message:\n\n> From: Bob <bob@x.com>\n> The server is down.\n",
        subject="Fwd: outage",
    )
    assert message_text(apple)[0].endswith(
        "FYI\n\nBegin forwarded message:\n\n> From: Bob <bob@x.com>\n> The server is down."
    )
    alt = (
        b"--a\nContent-Type: text/plain\n\n \n"
        b"--a\nContent-Type: multipart/mixed; boundary=m\n\n"
        b"--m\nContent-Type: text/html\n\n<p>Rich words.</p>\n"
        b"--m\nContent-Type: application/pdf\nContent-Disposition: attachment; filename=r.pdf\n\n%PDF\n"
        b"--m--\n--a--\n"
    )
    text = read_raw("Subject: Alt", alt, 'multipart/alternative; boundary="a"')
    assert text == "Subject: Alt\n\nRich words.\n\nAttachments: r.pdf"
    damaged = (
        b"--b\nContent-Type: text/plain\n\nSee the file.\n"
        b"--b\nContent-Type: application/pdf\nContent-Disposition: inline; filename*\n\n%PDF\n"
        b"--b--\n"
    )
    text = read_raw("Subject: Damaged", damaged, 'multipart/mixed; boundary="b"')
    assert text == "Subject: Damaged\n\nSee the file."
    mac = message(
        "Done.\n\nFrom: Ana Costa <ana@x.com>\nDate: Saturday, 28 November 2026\n"
        "To: IT\nSubject: Printer\n\nIt jams.\n"
    )
    assert message_text(mac)[0].endswith("\n\nDone.")
    own = message(
        "On Monday I tried the 2 fixes Bob wrote:\n> fix one\n\nNeither worked.\n--\n"
        "Ben\n\nOn Sat, 28 Nov 2026 at 14:30, Ana <ana@x.com> wrote:\n" + "> a\n" * 8
    )
    assert message_text(own)[0].endswith(
        "\n\nOn Monday I tried the 2 fixes Bob wrote:\n\nNeither worked."
    )
    flowed = EmailMessage()
    flowed["Subject"] = "Flowed"
    flowed.set_content("My answer runs \non here.\n> their \n> question\n")
    flowed.set_param("format", "flowed")
    assert message_text(flowed)[0] == "Subject: Flowed\n\nMy answer runs on here."


def test_mailbox_keys_exports_and_files_that_are_no_mail(tmp_path, warnings):
    """Message-IDs key the messages, a repeated one `~2`, a missing one by place; two
    Apple Mail exports keep apart by their folders' names, and an export's other files
    are no unread kinds; a mailbox with a byte-order mark, and an Outlook .msg renamed
    .eml, are refused; an .eml with a byte-order mark reads."""

    def box(folder, *ids):
        folder.mkdir()
        (folder / "mbox").write_bytes(
            b"".join(
                b"From x@x Sat Nov 28 14:30:00 2026\n"
                + raw_message(f"Subject: s{n}" + (f"\nMessage-ID: <{i}>" if i else ""), b"Text.")
                for n, i in enumerate(ids)
            )
        )
        (folder / "Info.plist").write_text("<plist/>")
        (folder / "table_of_contents").write_bytes(b"\x00\x01")

    box(tmp_path / "Inbox.mbox", "a@x", "a@x", None)
    box(tmp_path / "Sent.mbox", "b@x")
    assert [d.doc_id for d in load_documents(tmp_path)] == [
        "Inbox.mbox:a@x",
        "Inbox.mbox:a@x~2",
        "Inbox.mbox:3",
        "Sent.mbox:b@x",
    ]
    assert [d.doc_id for d in load_documents([tmp_path / "Inbox.mbox", tmp_path / "Sent.mbox"])][
        -1
    ] == "Sent.mbox:b@x"
    assert warnings == []
    (tmp_path / "bom.mbox").write_bytes(
        b"\xef\xbb\xbfFrom x@x Sat Nov 28 14:30:00 2026\nSubject: one\n\nText.\n"
    )
    with pytest.raises(
        ConfigError, match=r"bom\.mbox: corpus\.sources: the mailbox starts with a byte-order mark"
    ):
        load_documents(tmp_path / "bom.mbox")
    (tmp_path / "note.eml").write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\x00" * 64)
    with pytest.raises(
        ConfigError,
        match=r"note\.eml: corpus\.sources: not an email message \(an Outlook \.msg renamed\?\)",
    ):
        eml_text(tmp_path / "note.eml")
    (tmp_path / "bom.eml").write_bytes(b"\xef\xbb\xbf" + raw_message("Subject: BOM", b"Read."))
    assert eml_text(tmp_path / "bom.eml") == ("Subject: BOM\n\nRead.", "BOM")
