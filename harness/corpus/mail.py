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
  kept whole, its `>` lines and signature too: what it forwards is new to the thread;
  so is a signature above a forwarded message's marker;
- a signature after the `-- ` line is left out (after a bare `--`, where the mail
  program lost its space, when at most SIGNATURE_LINES lines follow; Gmail's and
  Thunderbird's marked in HTML);
- attachments are named (`Attachments: invoice.pdf`), not read; inline images (a
  signature's logo) and a signed message's signature are not named. Of the parts of a
  multipart/alternative, the first that gives text is read, the plain text first.

In a mailbox, a message's key is its Message-ID (`inbox.mbox:CAF123@mail.gmail.com`,
which stays when messages are deleted or the mailbox is exported again; a second
message with the same one `...~2`), else its place (`inbox.mbox:12`); Gmail's spam,
trash and chats (Takeout's "All mail Including Spam and Trash") are left out and
counted. The title is the subject (the caller falls back to the file's name). A
message the `email` package cannot take apart is left out of a mailbox and counted
(`Mailbox.unreadable`), and refused as a message file, as is a file that is no
message (an Outlook `.msg` renamed); a header it cannot parse reads as written. A
message without a body has no text. A mailbox's body lines that start `>From ` are
read as mboxrd writes them: escaped `From ` lines, not quotes; a mailbox that starts
with a byte-order mark is refused (the `mailbox` package would lose its first
message).
"""

from __future__ import annotations

import codecs
import email
import email.errors
import email.policy
import mailbox
import re
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime
from email.header import decode_header, make_header
from email.message import Message
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any, TypeVar

from harness.errors import ConfigError

T = TypeVar("T")

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
_MARKED = re.compile(r"\d{1,2}:\d{2}|\b(?:19|20)\d{2}\b|@")
"""What an attribution holds and a sentence rarely does: a time, a year, an address."""
_WRAPPED = re.compile(
    r"^[^.!?]{0,80}\b(?:wrote|schrieb|écrit|escribió|scritto|schreef|escreveu)\s*:\s*$",
    re.IGNORECASE,
)
"""The second line of an attribution Gmail wraps: the verb, perhaps a name, a colon."""
_ORIGINAL = re.compile(
    r"^\s*-{2,}\s*(?:Original Message|Ursprüngliche Nachricht|Message d'origine|"
    r"Mensaje original|Mensagem original|Messaggio originale|Oorspronkelijk bericht)"
    r"\s*-{2,}\s*$",
    re.IGNORECASE,
)
_HEADER_BLOCK = re.compile(r"^\s*\*?(?:From|Von|De|Da|Van)\s*:\*?\s+\S")
_SENT = re.compile(
    r"^\s*\*?(?:Sent|Date|Gesendet|Datum|Envoyé|Enviado(?: el| em)?|Enviada|Inviato|"
    r"Verzonden)\s*:\*?\s",
    re.IGNORECASE,
)
"""The line after From in the header block Outlook writes above an earlier message
(Outlook for Mac and iOS write Date)."""
_FORWARD = re.compile(r"^\s*[\[(]?\s*(?:Fwd?|FW|WG|TR|RV|I|Enc|Doorst|VB|PD)\s*:", re.IGNORECASE)
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
_LATIN = frozenset(["ascii", "iso8859-1", "cp1252"])
"""Charsets (Python's names) that mail programs write on UTF-8 and Windows-1252 text."""
_SIGNED = frozenset(["application/pgp-signature", "application/pkcs7-signature"])
"""A signed message's signature part: no attachment a reader sees."""


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
_OLE = b"\xd0\xcf\x11\xe0"
"""How a compound file starts: Outlook's .msg, a legacy Office file."""
_HEADER_LINE = re.compile(rb"[!-9;-~]+[ \t]*:|From ")
"""A message's first line: a header's name and its colon (or an mbox's `From ` line)."""


def _bytes_text(data: bytes, charset: str | None) -> str:
    """Bytes of a part or a header as text: by their charset where it decodes them, but
    a label of ASCII or Latin-1 (or none), which mail programs write on UTF-8 and on
    Windows-1252 alike, tried as UTF-8, then Windows-1252, then Latin-1 (which decodes
    any byte)."""
    try:
        label = codecs.lookup(charset).name if charset else ""
    except (LookupError, ValueError):  # an unknown name, or one with a NUL
        label = ""
    tries = ([] if label in _LATIN or not label else [label]) + ["utf-8", "cp1252", "latin-1"]
    for name in tries:
        try:
            return data.decode(name)
        except (LookupError, UnicodeError):
            continue
    return data.decode("latin-1")


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
    text = _bytes_text(data, _safe(part.get_content_charset)).replace("\r\n", "\n")
    text = text.replace("\r", "\n")
    if _param(part, "format") == "flowed":
        text = _unflow(text, delsp=_param(part, "delsp") == "yes")
    return text


def _param(part: Message, name: str) -> str:
    """A Content-Type parameter's value, lowercased ("" when absent or unreadable)."""
    value = _safe(lambda: part.get_param(name))
    return value.lower() if isinstance(value, str) else ""


def _unflow(text: str, delsp: bool) -> str:
    """Text sent format=flowed (RFC 3676) as its paragraphs: a line that ends with a
    space runs on into the next of the same quote depth (not into a signature's `-- `);
    the space stuffed in front of a line's text taken off."""
    out: list[str] = []
    pending: tuple[int, str] | None = None  # a flowed line's depth and text so far
    for raw in text.split("\n"):
        depth = _depth(raw)
        body = raw[depth:]
        body = body[1:] if body.startswith(" ") else body
        if pending is not None and pending[0] == depth and body.rstrip() != "--":
            body = pending[1] + body
        elif pending is not None:
            out.append(_requoted(*pending))
        pending = None
        if body.endswith(" ") and body.rstrip() != "--":
            pending = (depth, body[:-1] if delsp else body)
        else:
            out.append(_requoted(depth, body))
    if pending is not None:
        out.append(_requoted(*pending))
    return "\n".join(out)


def _requoted(depth: int, body: str) -> str:
    return f"{'>' * depth} {body}" if depth else body


def _depth(line: str) -> int:
    """How many `>` quote a line."""
    return len(line) - len(line.lstrip(">"))


class _Reader:
    """Walks a message's parts: the text of its inline text parts, the names of its
    attachments, the messages attached to it."""

    def __init__(self, forward: bool) -> None:
        self.forward = forward
        self.texts: list[str] = []
        self.attached: list[str] = []
        self.messages: list[str] = []

    def walk(self, part: Message, depth: int) -> None:
        kind = _kind(part)
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
                self.alternative(subparts, depth)
                return
            for sub in subparts:
                self.walk(sub, depth)
            return
        disposition = _disposition(part)
        name = _filename(part)
        if disposition == "attachment" or (name and kind not in ("text/plain", "text/html")):
            logo = kind.startswith("image/") and bool(_safe(lambda: part.get("Content-ID")))
            if name and kind not in _SIGNED and not (logo and disposition != "attachment"):
                self.attached.append(name)  # not a signature, nor an inline logo
            return
        if kind in ("text/plain", "text/html"):
            text = _part_text(part)
            if kind == "text/html":
                text = _html_text(text, self.forward)
            own = "\n".join(_own_lines(text.split("\n"), self.forward)).strip("\n")
            if own.strip():
                self.texts.append(own)

    def alternative(self, parts: list[Message], depth: int) -> None:
        """A multipart/alternative: the first of its parts that gives text, the plain
        text before the HTML before the others (the last, richest, first); attachments
        named from every part."""
        order = {"text/plain": 0, "text/html": 1}
        ranked = sorted(enumerate(parts), key=lambda ip: (order.get(_kind(ip[1]), 2), -ip[0]))
        chosen = False
        for _, part in ranked:
            reader = _Reader(self.forward)
            reader.walk(part, depth)
            for name in reader.attached:
                if name not in self.attached:
                    self.attached.append(name)
            if not chosen and (reader.texts or reader.messages):
                self.texts += reader.texts
                self.messages += reader.messages
                chosen = True


def _safe(read: Callable[[], T | None], default: T | None = None) -> T | None:
    """`read()`, or `default` where the email package cannot parse the header it reads
    (a damaged parameter: `filename*` alone raises IndexError in Python 3.11)."""
    try:
        return read()
    except Exception:  # its header parsers raise many kinds
        return default


def _kind(part: Message) -> str:
    return _safe(part.get_content_type, "") or ""


def _disposition(part: Message) -> str:
    return _safe(part.get_content_disposition, "") or ""


def _filename(part: Message) -> str:
    name = _safe(part.get_filename)
    return " ".join(name.split()) if isinstance(name, str) else ""


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
        return re.sub(r"<[^>]*>", " ", html)  # the parser gave up: its text, roughly
    dropped: list[Any] = []
    if not forward:
        dropped += soup.find_all(class_=[*_SIGNATURE_CLASSES, *_QUOTE_CLASSES])
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
        return soup.get_text("\n")  # what parsed once but not as written back


def _own_lines(lines: list[str], forward: bool) -> Iterator[str]:
    """A body's lines without what it quotes (see the module docstring) and its
    signature, blank lines run together; a forward's lines all kept."""
    if forward:
        yield from _closed(line.rstrip() for line in lines)
        return
    kept: list[str] = []
    after = _text_after(lines)
    i = 0
    while i < len(lines):
        line = lines[i].rstrip()
        if _signature(lines[i], after[i]):
            break
        if _ORIGINAL.match(line) or (
            _HEADER_BLOCK.match(line) and any(_SENT.match(n) for n in lines[i + 1 : i + 4])
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
            else:
                kept.extend(b.rstrip() for b in block)
            i = end
            continue
        kept.append(line)
        i += 1
    yield from _closed(kept)


def _closed(lines: Iterable[str]) -> Iterator[str]:
    """`lines` with runs of blank lines made one, and none first."""
    blank = True
    for line in lines:
        if line.strip() or not blank:
            yield line
        blank = not line.strip()


def _text_after(lines: list[str]) -> list[tuple[int, bool]]:
    """For each line, how many lines with text that quote nothing follow it, and
    whether a forwarded message's marker does (one pass from the end)."""
    out: list[tuple[int, bool]] = [(0, False)] * len(lines)
    count, forward = 0, False
    for i in range(len(lines) - 1, -1, -1):
        out[i] = (count, forward)
        line = lines[i]
        if line.strip() and not _QUOTED.match(line):
            count += 1
        forward = forward or bool(_FORWARD_LINE.match(line))
    return out


def _signature(line: str, after: tuple[int, bool]) -> bool:
    """Whether `line` starts the signature: `-- `, or a bare `--` followed by at most
    SIGNATURE_LINES lines with text (quotes not counted); neither above a forwarded
    message, which stays."""
    lines, forwarded = after
    if forwarded or line.rstrip() != "--":
        return False
    return line == "-- " or lines <= SIGNATURE_LINES


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
    return "\n\n".join(["\n".join(lines), *parts] if lines else parts), subject


def eml_text(path: Path) -> tuple[str, str]:
    """The text of the message saved at `path` (an .eml) and its subject. Raises
    ConfigError naming the file when it cannot be read, is no message (an Outlook .msg
    renamed, a file without headers), or cannot be taken apart."""
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise ConfigError(str(path), "corpus.sources", f"cannot read it ({exc})") from None
    data = data.lstrip(b"\xef\xbb\xbf \t\r\n")  # a byte-order mark, a blank line first
    if data and (data.startswith(_OLE) or not _HEADER_LINE.match(data)):
        what = "an Outlook .msg renamed?" if data.startswith(_OLE) else "it starts with no header"
        raise ConfigError(
            str(path),
            "corpus.sources",
            f"not an email message ({what}): save the message as .eml from the mail program",
        )
    try:
        return message_text(email.message_from_bytes(data, policy=email.policy.default))
    except _READ_ERRORS as exc:
        raise ConfigError(
            str(path), "corpus.sources", f"cannot read this message ({type(exc).__name__}: {exc})"
        ) from None


def _key(msg: Message) -> str:
    """A message's Message-ID without its angle brackets and white space, or ""."""
    return "".join(_header(msg, "Message-ID").strip("<> ").split())


def _keys(ids: list[str], numbers: list[int]) -> list[str]:
    """Each message's key: its Message-ID, the second and later with the same one
    `id~2`, ...; its number in the mailbox where it has none (or only digits, which a
    number could be)."""
    seen: dict[str, int] = {}
    out = []
    for key, n in zip(ids, numbers, strict=True):
        if not key or key.isdigit():
            out.append(str(n))
            continue
        seen[key] = seen.get(key, 0) + 1
        out.append(key if seen[key] == 1 else f"{key}~{seen[key]}")
    return out


def mailbox_messages(path: Path) -> Mailbox:
    """The messages of the mbox mailbox at `path`, in its order, each with its text,
    subject and key (`message_text`, `_keys`; see the module docstring). Raises
    ConfigError naming the file when it is no mailbox or cannot be read."""
    out: list[tuple[str, str, str, int]] = []
    empty = unreadable = junk = 0
    try:
        with path.open("rb") as f:
            head = f.read(1024)
        if head.startswith(b"\xef\xbb\xbf"):
            raise ConfigError(
                str(path),
                "corpus.sources",
                "the mailbox starts with a byte-order mark, which hides its first message: "
                "take the mark out (save it as UTF-8 without BOM)",
            )
        start = head.lstrip(b" \t\r\n")
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
    keys = _keys([key for _, _, key, _ in out], [n for _, _, _, n in out])
    return Mailbox(
        [Mail(text, subject, key, n) for (text, subject, _, n), key in zip(out, keys, strict=True)],
        empty,
        unreadable,
        junk,
    )
