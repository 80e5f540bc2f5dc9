"""Email as documents: a message saved as `.eml` (what Apple Mail, Thunderbird, Gmail's
"Download message" and new Outlook write; classic Outlook's `.msg` is not read), and a
mailbox (`.mbox`: Google Takeout's Gmail export, Apple Mail's exported `Inbox.mbox`
folder, a Thunderbird folder file renamed `.mbox`), a document per message, as a table
is a document per row: a support inbox or a mailing list's archive is what a team's
answers are found in.

A message's text is a few header lines, then its body:

    Subject: Printer on floor 2 jams
    From: Ana Costa <ana@example.com>
    To: it-help@example.com
    Date: 2026-11-28 14:30 +0000

    It jams on every duplex job since Monday.

- the body is every inline text part in order (a multipart/alternative by its plain
  text, else its HTML read as every element's text, `harness.corpus.html`), decoded
  from its transfer encoding and charset (a part labelled ASCII or Latin-1, or not at
  all, read as UTF-8 where it is, else as Windows-1252; format=flowed lines joined); a
  message attached to it (forwarded as an attachment, a digest's parts) is read after
  it, as a message is;
- what a reply quotes is left out, as it is the earlier message's text again (in a
  mailbox, the earlier message is its own document): a block of lines starting with
  `>` (not one of `>>>` lines alone, a Python session), the attribution line above it
  ("On Mon, 2 Mar 2026, Ana <ana@...> wrote:", with a date or an address; Gmail wraps
  it over two lines; in German, French, Spanish, Italian, Dutch and Portuguese too),
  everything after Outlook's "-----Original Message-----" or its "From: ... Sent: ..."
  header block, and in HTML Gmail's quote, Apple Mail's and Thunderbird's
  `<blockquote type="cite">` and what follows Outlook's `divRplyFwdMsg`;
- a forwarded message (its subject starts `Fwd:`, `FW:`, `WG:`, `TR:`, `RV:`, ...) is
  kept whole, its signature too: what it forwards is new to the thread;
- a signature after the `-- ` line is left out (after a bare `--`, where the mail
  program lost its space, when at most SIGNATURE_LINES lines follow; Gmail's and
  Thunderbird's marked in HTML);
- attachments are named (`Attachments: invoice.pdf`), not read; inline images (a
  signature's logo) are not named.

In a mailbox, a message's key is its Message-ID where every message has one and no two
share it (`inbox.mbox:CAF123@mail.gmail.com`, which stays when messages are deleted
or the mailbox is exported again), else its place (`inbox.mbox:12`); Gmail's spam,
trash and chats (Takeout's "All mail Including Spam and Trash") are left out and
counted. The title is the subject (the caller falls back to the file's name). A
message the `email` package cannot take apart is left out of a mailbox and counted
(`Mailbox.unreadable`), and refused as a message file; a header it cannot parse reads
as written. A message without a body has no text. A mailbox's body lines that start
`>From ` are read as mboxrd writes them: escaped `From ` lines, not quotes.
"""

from __future__ import annotations

import email
import email.errors
import email.policy
import mailbox
import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from email.header import decode_header, make_header
from email.message import Message
from email.utils import parsedate_to_datetime
from pathlib import Path

from harness.errors import ConfigError

_QUOTED = re.compile(r"^>")
_DEPTH_ONE = re.compile(r"^>(?!>)")
"""A line quoting the message replied to (not one it quoted in turn): a block of `>`
lines without one is a Python session's `>>>` lines, or deeper quotes alone."""
_ATTRIBUTION = re.compile(
    r"^(?:On|Am|Le|El|Il|Op|Em)\b.{0,300}"
    r"\b(?:wrote|schrieb|écrit|escribió|scritto|schreef|escreveu)\b.{0,300}:\s*$",
    re.IGNORECASE | re.DOTALL,
)
"""The line a mail program writes above what a reply quotes, in the languages named in
the module docstring; it holds a date or an address (`_MARKED`), or it is a sentence."""
_MARKED = re.compile(r"\d|@")
_WRAPPED = re.compile(
    r"^.{0,120}\b(?:wrote|schrieb|écrit|escribió|scritto|schreef|escreveu)\b\s*:\s*$",
    re.IGNORECASE,
)
"""The second line of an attribution Gmail wraps: the verb, perhaps a name, a colon."""
_ORIGINAL = re.compile(
    r"^\s*-{2,}\s*(?:Original Message|Ursprüngliche Nachricht|Message d'origine|"
    r"Mensaje original|Messaggio originale|Oorspronkelijk bericht)\s*-{2,}\s*$",
    re.IGNORECASE,
)
_HEADER_BLOCK = re.compile(r"^\s*\*?(?:From|Von|De|Da|Van)\s*:\*?\s+\S")
_SENT = re.compile(r"^\s*\*?(?:Sent|Gesendet|Envoyé|Enviado|Inviato|Verzonden)\s*:\*?\s")
_FORWARD = re.compile(
    r"^\s*[\[(]?\s*(?:Fwd?|FW|WG|TR|RV|I|Enc|Doorst|Wtr|VS|VB)\s*:", re.IGNORECASE
)
"""A forwarded message's subject."""
_FORWARD_LINE = re.compile(
    r"^\s*(?:-+\s*Forwarded message\s*-+|Begin forwarded message:)\s*$", re.IGNORECASE
)
SIGNATURE_LINES = 6
"""Lines after a bare `--` that make a signature (more, and it is the sender's text)."""
_QUOTE_CLASSES = ("gmail_quote", "gmail_extra", "yahoo_quoted", "moz-cite-prefix")
_SIGNATURE_CLASSES = ("gmail_signature", "moz-signature")
_QUOTE_IDS = ("divRplyFwdMsg", "appendonsend", "mail-editor-reference-message-container")
_SKIPPED_LABELS = frozenset(["spam", "trash", "chat"])
"""Gmail labels (Takeout's `X-Gmail-Labels`) of messages that are no team's knowledge."""
_NESTED = 8
"""How deep attached messages are read."""
_LATIN = frozenset(["us-ascii", "ascii", "iso-8859-1", "latin-1", "latin1", "windows-1252"])


@dataclass(frozen=True)
class Mail:
    """One message of a mailbox as a document: its text, its subject, its key (see the
    module docstring) and its number there (from 1)."""

    text: str
    subject: str
    key: str
    number: int


@dataclass(frozen=True)
class Mailbox:
    """A mailbox's messages with text, and how many were left out: without text, that
    the `email` package could not take apart, and Gmail's spam, trash and chats."""

    messages: list[Mail]
    empty: int = 0
    unreadable: int = 0
    junk: int = 0


_READ_ERRORS = (
    LookupError,
    ValueError,
    TypeError,
    IndexError,
    AttributeError,
    AssertionError,
    UnicodeError,
    OverflowError,
    RecursionError,
    email.errors.MessageError,
    mailbox.Error,
)
"""What the `email` package raises on a message it cannot take apart."""
_FROM_ESCAPE = re.compile(rb"^>(>*From )", re.MULTILINE)


def _bytes_text(data: bytes, charset: str | None) -> str:
    """Bytes of a part or a header as text: by their charset where it decodes them, but
    a label of ASCII or Latin-1 (or none), which mail programs write on UTF-8 and on
    Windows-1252 alike, tried as UTF-8 and then Windows-1252; what decodes by none,
    replaced."""
    label = (charset or "").lower()
    tries = ([] if label in _LATIN or not label else [label]) + ["utf-8", "cp1252"]
    for name in tries:
        try:
            return data.decode(name)
        except (LookupError, UnicodeError):
            continue
    return data.decode("utf-8", errors="replace")


def _header(msg: Message, name: str) -> str:
    """A header's value decoded (RFC 2047), white space made single; as written (its
    encoded words decoded) where the policy cannot parse it, and as its bytes where a
    mail program wrote them raw (`_bytes_text`: UTF-8, else Windows-1252); "" when
    absent."""
    raw = next((str(v) for k, v in msg.raw_items() if k.lower() == name.lower()), None)
    if raw is None:
        return ""
    if any("\udc80" <= c <= "\udcff" for c in raw):  # raw 8-bit bytes, kept as escapes
        return " ".join(_bytes_text(raw.encode("utf-8", "surrogateescape"), None).split())
    try:
        value = msg.get(name)
        text = str(value) if not getattr(value, "defects", ()) else ""
    except Exception:  # the email package's header parsers raise many kinds
        text = ""
    if not text:
        try:
            text = str(make_header(decode_header(raw)))
        except Exception:
            text = raw
    return " ".join(text.split())


def _date(msg: Message) -> str:
    """The Date header as `2026-11-28 14:30 +0000`, else as written."""
    raw = _header(msg, "Date")
    try:
        when: datetime = parsedate_to_datetime(raw)
    except (TypeError, ValueError, IndexError, OverflowError):
        return raw
    return when.strftime("%Y-%m-%d %H:%M %z").strip()


def _part_text(part: Message) -> str:
    """A text part's content as text (see `_bytes_text`), format=flowed lines joined."""
    data = part.get_payload(decode=True)
    if not isinstance(data, bytes):
        return ""
    text = _bytes_text(data, part.get_content_charset()).replace("\r\n", "\n")
    text = text.replace("\r", "\n")
    if _param(part, "format") == "flowed":
        text = _unflow(text, delsp=_param(part, "delsp") == "yes")
    return text


def _param(part: Message, name: str) -> str:
    """A Content-Type parameter's value, lowercased ("" when absent)."""
    value = part.get_param(name)
    return value.lower() if isinstance(value, str) else ""


def _unflow(text: str, delsp: bool) -> str:
    """Text sent format=flowed (RFC 3676) as its paragraphs: a line that ends with a
    space runs on into the next; a leading space (stuffing) taken off."""
    out: list[str] = []
    current = ""
    for line in text.split("\n"):
        line = line[1:] if line.startswith(" ") else line
        if line.endswith(" ") and line.rstrip() != "--":
            current += line[:-1] if delsp else line
        else:
            out.append(current + line)
            current = ""
    if current:
        out.append(current)
    return "\n".join(out)


class _Reader:
    """Walks a message's parts: the text of its inline text parts, the names of its
    attachments, the messages attached to it."""

    def __init__(self, forward: bool) -> None:
        self.forward = forward
        self.texts: list[str] = []
        self.attached: list[str] = []
        self.messages: list[str] = []

    def walk(self, part: Message, depth: int) -> None:
        kind = part.get_content_type()
        if kind == "message/rfc822":  # a message attached, or a digest's part
            inner = part.get_payload()
            inner = inner[0] if isinstance(inner, list) and inner else inner
            if isinstance(inner, Message) and depth < _NESTED:
                text, _ = _message_text(inner, depth + 1)
                if text:
                    self.messages.append(text)
            return
        if part.is_multipart():
            subparts = [p for p in part.get_payload() if isinstance(p, Message)]
            if kind == "multipart/alternative":
                subparts = _preferred(subparts)
            for sub in subparts:
                self.walk(sub, depth)
            return
        disposition = part.get_content_disposition()
        name = _filename(part)
        if disposition == "attachment" or (name and kind not in ("text/plain", "text/html")):
            if name and not (part.get("Content-ID") and disposition != "attachment"):
                self.attached.append(name)  # an inline image with an id: a logo
            return
        if kind in ("text/plain", "text/html"):
            text = _part_text(part)
            if kind == "text/html":
                text = _html_text(text, self.forward)
            own = "\n".join(_own_lines(text.split("\n"), self.forward)).strip("\n")
            if own.strip():
                self.texts.append(own)


def _preferred(parts: list[Message]) -> list[Message]:
    """Of a multipart/alternative's parts, the one to read: the plain text, else the
    HTML, else the last (richest) one, which may be a multipart of its own."""
    for kind in ("text/plain", "text/html"):
        found = [p for p in parts if p.get_content_type() == kind]
        if found:
            return found[:1]
    return parts[-1:]


def _filename(part: Message) -> str:
    try:
        name = part.get_filename()
    except _READ_ERRORS:
        return ""
    return " ".join(name.split()) if name else ""


def _html_text(html: str, forward: bool) -> str:
    """An HTML body's text without the quoted history and the signature mail programs
    mark (but what a forward forwards)."""
    from bs4 import BeautifulSoup
    from bs4.element import Tag
    from bs4.exceptions import ParserRejectedMarkup

    from harness.corpus.html import RejectedMarkup, fragment_text

    try:
        soup = BeautifulSoup(html, "html.parser")
    except ParserRejectedMarkup:
        return html  # no HTML after all
    classes = list(_SIGNATURE_CLASSES) + ([] if forward else list(_QUOTE_CLASSES))
    dropped = list(soup.find_all(class_=classes))
    if not forward:
        dropped += soup.find_all("blockquote", attrs={"type": "cite"})
    for tag in dropped:
        if isinstance(tag, Tag) and not tag.decomposed:
            tag.decompose()
    start = next((t for i in _QUOTE_IDS if (t := soup.find(id=i)) is not None), None)
    if isinstance(start, Tag) and not forward:
        for node in [start, *start.parents]:  # it, and all after it
            for after in list(node.next_siblings):
                after.extract()
        start.decompose()
    try:
        return fragment_text(str(soup))
    except RejectedMarkup:
        return soup.get_text("\n")


def _own_lines(lines: list[str], forward: bool) -> Iterator[str]:
    """A body's lines without what it quotes (see the module docstring) and its
    signature, blank lines run together."""
    kept: list[str] = []
    i = 0
    while i < len(lines):
        line = lines[i].rstrip()
        if not forward and _signature(lines, i):
            break
        if not forward and (
            _ORIGINAL.match(line)
            or (_HEADER_BLOCK.match(line) and any(_SENT.match(n) for n in lines[i + 1 : i + 4]))
        ):
            while kept and not kept[-1].strip(" _-"):  # and the rule Outlook draws above
                kept.pop()
            break  # Outlook's reply: the earlier message's headers, then its text
        if _QUOTED.match(line):
            end = i
            while end < len(lines) and (_QUOTED.match(lines[end]) or not lines[end].strip()):
                end += 1
            while not lines[end - 1].strip():  # the blank lines after it are the reply's
                end -= 1
            block = lines[i:end]
            if any(_DEPTH_ONE.match(b) for b in block):
                _drop_attribution(kept)
                i = end
                continue
            kept.extend(b.rstrip() for b in block)
            i = end
            continue
        kept.append(line)
        i += 1
    blank = True
    for line in kept:
        if line.strip() or not blank:
            yield line
        blank = not line.strip()


def _signature(lines: list[str], i: int) -> bool:
    """Whether line `i` starts the signature: `-- `, or a bare `--` followed by at most
    SIGNATURE_LINES lines with text (up to a forwarded message's own, which stays)."""
    if lines[i] == "-- ":
        return True
    if lines[i].rstrip() not in ("--", "-- "):
        return False
    rest = [line for line in lines[i + 1 :] if line.strip()]
    return len(rest) <= SIGNATURE_LINES and not any(_FORWARD_LINE.match(r) for r in rest)


def _drop_attribution(kept: list[str]) -> None:
    """Take the attribution line (or Gmail's two) off the end of `kept`, before a
    quoted block."""
    while kept and not kept[-1].strip():
        kept.pop()
    last = kept[-1].strip() if kept else ""
    if _ATTRIBUTION.match(last) and _MARKED.search(last):
        kept.pop()
    elif len(kept) > 1 and _WRAPPED.match(last):
        joined = f"{kept[-2].strip()} {last}"
        if _ATTRIBUTION.match(joined) and _MARKED.search(kept[-2]):
            del kept[-2:]


def message_text(msg: Message) -> tuple[str, str]:
    """The text of one message (see the module docstring) and its subject."""
    return _message_text(msg, 0)


def _message_text(msg: Message, depth: int) -> tuple[str, str]:
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
    reader = _Reader(forward=bool(_FORWARD.match(subject)))
    reader.walk(msg, depth)
    parts = list(reader.texts)
    if reader.attached:
        parts.append("Attachments: " + ", ".join(reader.attached))
    parts += reader.messages
    if not parts:
        return "", subject
    return "\n".join(lines) + "\n\n" + "\n\n".join(parts), subject


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


def _key(msg: Message) -> str:
    """A message's Message-ID without its angle brackets and white space, or ""."""
    return "".join(_header(msg, "Message-ID").strip("<> ").split())


def mailbox_messages(path: Path) -> Mailbox:
    """The messages of the mbox mailbox at `path`, in its order, each with its text,
    subject and key (`message_text`; see the module docstring). Raises ConfigError
    naming the file when it is no mailbox or cannot be read."""
    out: list[tuple[str, str, str, int]] = []
    empty = unreadable = junk = 0
    try:
        with path.open("rb") as f:
            start = f.read(1024).lstrip(b"\xef\xbb\xbf \t\r\n")
        if start and not start.startswith(b"From "):
            raise ConfigError(
                str(path),
                "corpus.sources",
                "not an mbox mailbox (it does not start with a 'From ' line): export the "
                "folder as mbox, or save its messages as .eml files",
            )
        box = mailbox.mbox(path, factory=None, create=False)
        try:
            for number, key in enumerate(box.iterkeys(), start=1):
                raw = _FROM_ESCAPE.sub(rb"\1", box.get_bytes(key))
                try:
                    msg = email.message_from_bytes(raw, policy=email.policy.default)
                    labels = {
                        label.strip().lower() for label in _header(msg, "X-Gmail-Labels").split(",")
                    }
                    if labels & _SKIPPED_LABELS:
                        junk += 1
                        continue
                    text, subject = message_text(msg)
                except _READ_ERRORS:
                    unreadable += 1
                    continue
                if text:
                    out.append((text, subject, _key(msg), number))
                else:
                    empty += 1
        finally:
            box.close()
    except OSError as exc:
        raise ConfigError(str(path), "corpus.sources", f"cannot read it ({exc})") from None
    ids = [key for _, _, key, _ in out]
    by_id = all(ids) and len(set(ids)) == len(ids)
    return Mailbox(
        [Mail(text, subject, key if by_id else str(n), n) for text, subject, key, n in out],
        empty,
        unreadable,
        junk,
    )
