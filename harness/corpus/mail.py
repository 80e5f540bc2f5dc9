"""Email as documents: a message saved as `.eml` (what Outlook, Apple Mail, Thunderbird
and Gmail's "Download message" write), and a mailbox (`.mbox`: Google Takeout's Gmail
export, Thunderbird's folders), a document per message, as a table is a document per
row: a support inbox or a mailing list's archive is what a team's answers are found in.

A message's text is a few header lines, then its body:

    Subject: Printer on floor 2 jams
    From: Ana Costa <ana@example.com>
    To: it-help@example.com
    Date: 2026-11-28 14:30 +0000

    It jams on every duplex job since Monday.

- the body is the message's plain text, else its HTML read as every element's text
  (`harness.corpus.html.fragment_text`), decoded from its transfer encoding and
  charset (the standard library's `email` package, its modern policy);
- what a reply quotes is left out, as it is the earlier message's text again (in a
  mailbox, the earlier message is its own document): lines starting with `>`, the
  attribution line above them ("On Mon, 2 Mar 2026, Ana <ana@...> wrote:"; in German,
  French, Spanish, Italian, Dutch and Portuguese too), everything after Outlook's
  "-----Original Message-----" or its "From: ... Sent: ..." header block (which
  Outlook writes above a forwarded message too), and in HTML Gmail's `gmail_quote`,
  Apple Mail's and Thunderbird's `<blockquote type="cite">` and Outlook's
  `divRplyFwdMsg`; a message Gmail or Apple Mail forwards is kept (it is new to the
  thread);
- a signature after the `-- ` line (Gmail's and Thunderbird's marked in HTML) is left
  out;
- attachments are named (`Attachments: invoice.pdf`), not read.

The title is the subject (the caller falls back to the file's name). A message whose
parts cannot be decoded (an unknown charset) is read with the bytes that do not decode
replaced; one the `email` package cannot take apart is left out of a mailbox and
counted (`Mailbox.unreadable`), and refused as a message file. A message without a
body has no text. A mailbox's body lines that start `>From ` are read as mboxrd
writes them: escaped `From ` lines, not quotes.
"""

from __future__ import annotations

import email
import email.policy
import mailbox
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from email.message import EmailMessage, Message
from email.utils import parsedate_to_datetime
from pathlib import Path

from harness.errors import ConfigError

_QUOTED = re.compile(r"^\s*>")
_ATTRIBUTION = re.compile(
    r"^(?:On|Am|Le|El|Il|Op|Em)\b.{0,300}"
    r"\b(?:wrote|schrieb|écrit|escribió|scritto|schreef|escreveu)\b.{0,300}:\s*$",
    re.IGNORECASE | re.DOTALL,
)
"""The line a mail program writes above what a reply quotes (which Gmail wraps over two
lines), in the languages named in the module docstring."""
_ORIGINAL = re.compile(
    r"^\s*-{2,}\s*(?:Original Message|Ursprüngliche Nachricht|Message d'origine|"
    r"Mensaje original|Messaggio originale|Oorspronkelijk bericht)\s*-{2,}\s*$",
    re.IGNORECASE,
)
_HEADER_BLOCK = re.compile(r"^\s*\*?(?:From|Von|De|Da|Van)\s*:\*?\s+\S")
_SENT = re.compile(r"^\s*\*?(?:Sent|Gesendet|Envoyé|Enviado|Inviato|Verzonden)\s*:\*?\s")
_SIGNATURE = "--"
"""The line a signature follows (`-- `, its space often lost on the way)."""
_QUOTE_CLASSES = (
    "gmail_quote",
    "gmail_extra",
    "gmail_signature",
    "yahoo_quoted",
    "moz-cite-prefix",
    "moz-signature",
)
_QUOTE_IDS = ("divRplyFwdMsg", "appendonsend", "mail-editor-reference-message-container")


@dataclass(frozen=True)
class Mail:
    """One message of a mailbox as a document: its text, its subject, and its number
    there (from 1)."""

    text: str
    subject: str
    number: int


@dataclass(frozen=True)
class Mailbox:
    """A mailbox's messages with text, and how many the `email` package could not take
    apart."""

    messages: list[Mail]
    unreadable: int


_READ_ERRORS = (
    LookupError,
    ValueError,
    TypeError,
    IndexError,
    AttributeError,
    AssertionError,
    UnicodeError,
)
"""What the `email` package raises on a message it cannot take apart."""
_FROM_ESCAPE = re.compile(rb"^>(>*From )", re.MULTILINE)


def _header(msg: Message, name: str) -> str:
    """A header's value decoded (RFC 2047), white space made single; "" when absent or
    undecodable."""
    try:
        value = msg.get(name)
    except (ValueError, TypeError, IndexError, LookupError):  # a malformed header
        return ""
    return " ".join(str(value).split()) if value is not None else ""


def _date(msg: Message) -> str:
    """The Date header as `2026-11-28 14:30 +0000`, else as written."""
    raw = _header(msg, "Date")
    try:
        when: datetime = parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError):
        return raw
    return when.strftime("%Y-%m-%d %H:%M %z").strip()


def _content(part: Message) -> str:
    """A text part's content as text: decoded by the policy, else its bytes decoded by
    its charset (or UTF-8), what does not decode replaced."""
    try:
        if isinstance(part, EmailMessage):
            return str(part.get_content())
    except (LookupError, ValueError, KeyError, AssertionError, UnicodeError):
        pass
    data = part.get_payload(decode=True)
    if not isinstance(data, bytes):
        return ""
    charset = part.get_content_charset() or "utf-8"
    try:
        return data.decode(charset, errors="replace")
    except LookupError:
        return data.decode("utf-8", errors="replace")


def _body(msg: Message) -> str:
    """The message's own text: its plain-text body, else its HTML's text, without what
    it quotes and its signature."""
    body: Message | None = (
        msg.get_body(preferencelist=("plain", "html")) if isinstance(msg, EmailMessage) else None
    )
    if body is None and not msg.is_multipart() and msg.get_content_maintype() == "text":
        body = msg
    if body is None:
        return ""
    text = _content(body)
    if body.get_content_subtype() == "html":
        text = _html_text(text)
    return "\n".join(_own_lines(text.replace("\r\n", "\n").replace("\r", "\n").split("\n")))


def _html_text(html: str) -> str:
    """An HTML body's text without the quoted history mail programs mark."""
    from bs4 import BeautifulSoup
    from bs4.exceptions import ParserRejectedMarkup

    from harness.corpus.html import RejectedMarkup, fragment_text

    try:
        soup = BeautifulSoup(html, "html.parser")
    except ParserRejectedMarkup:
        return html  # no HTML after all
    quoted = [
        *soup.find_all("blockquote", attrs={"type": "cite"}),
        *soup.find_all(class_=list(_QUOTE_CLASSES)),
    ]
    for tag in quoted:
        tag.decompose()
    for ident in _QUOTE_IDS:
        start = soup.find(id=ident)
        if start is not None:
            for after in list(start.find_all_next()):
                after.decompose()
            start.decompose()
    try:
        return fragment_text(str(soup))
    except RejectedMarkup:
        return soup.get_text("\n")


def _own_lines(lines: list[str]) -> Iterator[str]:
    """A body's lines without what it quotes (see the module docstring) and its
    signature, blank lines run together."""
    kept: list[str] = []
    for i, line in enumerate(lines):
        if line.rstrip() == _SIGNATURE or _ORIGINAL.match(line):
            break
        if _HEADER_BLOCK.match(line) and any(_SENT.match(n) for n in lines[i + 1 : i + 4]):
            while kept and not kept[-1].strip(" _-"):  # and the rule Outlook draws above
                kept.pop()
            break  # Outlook's reply: the earlier message's headers, then its text
        if _QUOTED.match(line):
            while kept and not kept[-1].strip():
                kept.pop()
            if kept and _ATTRIBUTION.match(kept[-1].strip()):
                kept.pop()
            elif len(kept) > 1 and _ATTRIBUTION.match(" ".join(kept[-2:]).strip()):
                del kept[-2:]
            continue
        kept.append(line.rstrip())
    blank = True
    for line in kept:
        if line.strip() or not blank:
            yield line
        blank = not line.strip()


def _attachments(msg: Message) -> list[str]:
    if not isinstance(msg, EmailMessage):
        return []
    names = []
    for part in msg.iter_attachments():
        try:
            name = part.get_filename()
        except (ValueError, TypeError, LookupError):
            name = None
        if name:
            names.append(" ".join(name.split()))
    return names


def message_text(msg: Message) -> tuple[str, str]:
    """The text of one message (see the module docstring) and its subject."""
    subject = _header(msg, "Subject")
    lines = [
        f"{name}: {value}"
        for name, value in (
            ("Subject", subject),
            ("From", _header(msg, "From")),
            ("To", _header(msg, "To")),
            ("Date", _date(msg)),
        )
        if value
    ]
    body = _body(msg).strip("\n")
    attached = _attachments(msg)
    if attached:
        body += ("\n\n" if body else "") + "Attachments: " + ", ".join(attached)
    if not body:
        return "", subject
    return "\n".join(lines) + "\n\n" + body, subject


def eml_text(path: Path) -> tuple[str, str]:
    """The text of the message saved at `path` (an .eml) and its subject. Raises
    ConfigError naming the file when it cannot be read or taken apart."""
    try:
        with path.open("rb") as f:
            msg = email.message_from_binary_file(f, policy=email.policy.default)
        return message_text(msg)
    except OSError as exc:
        raise ConfigError(str(path), "corpus.sources", f"cannot read it ({exc})") from None
    except _READ_ERRORS as exc:
        raise ConfigError(
            str(path), "corpus.sources", f"cannot read this message ({type(exc).__name__}: {exc})"
        ) from None


def mailbox_messages(path: Path) -> Mailbox:
    """The messages of the mbox mailbox at `path`, in its order, each with its text and
    subject (`message_text`); a message without text is left out (its number kept for
    the others), one the `email` package cannot take apart counted. Raises ConfigError
    naming the file when it is no mailbox."""
    with path.open("rb") as f:
        start = f.read(5)
    if start and start != b"From ":
        raise ConfigError(
            str(path),
            "corpus.sources",
            "not an mbox mailbox (it does not start with a 'From ' line): export the "
            "folder as mbox, or save its messages as .eml files",
        )
    box = mailbox.mbox(path, factory=None, create=False)
    out: list[Mail] = []
    unreadable = 0
    try:
        for number, key in enumerate(box.iterkeys(), start=1):
            raw = _FROM_ESCAPE.sub(rb"\1", box.get_bytes(key))
            try:
                text, subject = message_text(
                    email.message_from_bytes(raw, policy=email.policy.default)
                )
            except _READ_ERRORS:
                unreadable += 1
                continue
            if text:
                out.append(Mail(text, subject, number))
    except OSError as exc:
        raise ConfigError(str(path), "corpus.sources", f"cannot read it ({exc})") from None
    finally:
        box.close()
    return Mailbox(out, unreadable)
