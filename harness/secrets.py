"""The secrets this process holds, and their removal from every text that leaves it.

A pattern finds a key that looks like one (`sk-...`, a JWT, `Bearer ...`, a URL's
password or `?api-key=...`); only the value itself finds a key that looks like nothing
in particular, or one an endpoint echoes back in an error body. So every API key or
password the process reads is remembered (`read_key`, `remember`, `remember_url`), and
`redact` replaces each remembered value (and its escaped forms) as well as every
pattern. Logs, result files, error lines and the CLI's output pass through it.

Every query parameter of an endpoint URL is a possible secret (hosted gateways take keys
as `?code=`, `?auth=`, `?x-functions-key=`, under any name): `redact_url` masks every
query value, `remember_url` remembers them all (a short one as its `name=value` pair, so
ordinary text is not mangled), and `redact_obj` writes every `*base_url` field of a record
through `redact_url`. The real URL lives only in the memory of the client that calls it.

The registry is process-wide and only grows; values shorter than `MIN_LENGTH` are not
remembered (masking them would mangle ordinary text and they are no real key).
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import json
import os
import re
import threading
import urllib.parse
from collections.abc import Mapping
from typing import Any

MIN_LENGTH = 8
"""Values shorter than this are never remembered."""
MASK = "***"
"""What a secret is replaced with."""

_SECRET_NAME_WORDS = ("KEY", "TOKEN", "SECRET", "PASSWORD")
# A variable named like a secret that holds a path or a socket names where a secret is,
# not the secret; masking it would mangle every path under it in the result files.
_NOT_A_VALUE_SUFFIXES = ("_DIR", "_PATH", "_FILE", "_HOME", "_SOCK")

_lock = threading.Lock()
_values: set[str] = set()
_forms: tuple[str, ...] = ()  # every remembered value and its escaped forms, longest first
_pairs: set[str] = set()  # `name=value` query pairs of endpoint URLs, as they appear
_pairs_re: re.Pattern[str] | None = None

# Token characters stop at whitespace, quotes and backslashes, so masking inside the text
# of a JSON or Python literal never eats its closing quote or an escape.
_BEARER = re.compile(r"\b(Bearer)\s+[A-Za-z0-9._~+/=\-]{12,}")
_SK_KEY = re.compile(r"(?<![A-Za-z0-9])sk-[A-Za-z0-9_\-]{6,}(?:\.[A-Za-z0-9_\-]+)*")
_JWT = re.compile(r"(?<![A-Za-z0-9_\-])eyJ[A-Za-z0-9_\-]+=*(?:\.[A-Za-z0-9_\-]+=*){2,}")
_URL_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.\-]*://[^\s/?#@:\"'\\]*):[^\s/?#\"'\\]*@")
_SECRET_PARAM = (
    r"(?:[a-z0-9]+[-_])*"
    r"(?:api[-_]?key|key|access[-_]?token|token|secret|password|passwd|pwd|sig|signature"
    r"|auth|code|credentials?)"
)
_QUERY_SECRET = re.compile(rf"(?i)([?&;]{_SECRET_PARAM}=)[^&;#\s\"'\\]*")
_SECRET_PARAM_NAME = re.compile(rf"(?i){_SECRET_PARAM}")


def _forms_of(value: str) -> set[str]:
    """The value as it may appear in a text: raw, JSON- and URL-escaped, as a repr."""
    forms = {
        value,
        json.dumps(value)[1:-1],
        json.dumps(value, ensure_ascii=False)[1:-1],
        json.dumps(value)[1:-1].replace("/", "\\/"),  # some servers escape the slash
        repr(value)[1:-1],
        urllib.parse.quote(value, safe=""),
        urllib.parse.quote_plus(value, safe=""),
    }
    return {f for f in forms if len(f) >= MIN_LENGTH}


def remember(value: str | None) -> None:
    """Hold `value` as a secret: from now on `redact` replaces it wherever it appears.
    Empty values and values shorter than MIN_LENGTH are ignored."""
    global _forms
    if not value or len(value) < MIN_LENGTH:
        return
    with _lock:
        if value in _values:
            return
        _values.add(value)
        _forms = tuple(sorted(set(_forms) | _forms_of(value), key=len, reverse=True))


def read_key(env_name: str) -> str:
    """The API key in the environment variable `env_name` ("" when unset), remembered
    as a secret. Every key the process sends is read through here (its callers refuse a
    key with a `key_flaw`)."""
    value = os.environ.get(env_name, "") if env_name else ""
    remember(value)
    return value


def key_flaw(value: str) -> str | None:
    """Why `value` cannot go out as an API key, or None: a line break or NUL would end
    the request's header (a key read from a file often keeps its newline)."""
    if any(c in value for c in "\r\n\0"):
        return (
            "holds a line break or NUL (read from a file with its newline?); expected the key alone"
        )
    return None


def _remember_pair(name: str, value: str) -> None:
    """Hold the query pair `name=value` (raw and URL-quoted) as a secret: `redact` masks
    the value where the pair appears after `?`, `&` or `;`."""
    global _pairs_re
    forms = {
        f"{n}={v}"
        for n in {name, urllib.parse.quote(name, safe="")}
        for v in {value, urllib.parse.quote(value, safe=""), urllib.parse.quote_plus(value)}
        if v
    }
    with _lock:
        if forms <= _pairs:
            return
        _pairs.update(forms)
        alternatives = "|".join(
            re.escape(f.split("=", 1)[0]) + "=" + re.escape(f.split("=", 1)[1])
            for f in sorted(_pairs, key=len, reverse=True)
        )
        _pairs_re = re.compile(rf"(?<=[?&;])({alternatives})(?=[&;#\s\"'\\]|$)")


def remember_url(url: str | None) -> None:
    """Remember the credentials inside a URL: the password of `user:password@` (and the
    Basic-auth header an HTTP client builds from it) and every query value (any of them
    may be a key)."""
    if not url or "://" not in url:
        return
    try:
        parts = urllib.parse.urlsplit(url)
        password = parts.password
        username = parts.username or ""
        query = urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    except ValueError:
        return
    if password:
        remember(password)
        remember(urllib.parse.unquote(password))
        basic = f"{urllib.parse.unquote(username)}:{urllib.parse.unquote(password)}"
        remember(base64.b64encode(basic.encode()).decode())
    for name, value in query:
        remember(value)
        if value:
            _remember_pair(name, value)


def remember_environment(environ: Mapping[str, str]) -> None:
    """Remember the values of variables named like a secret (KEY, TOKEN, SECRET or
    PASSWORD in the name), except those that name a path, a file or a socket."""
    for name, value in environ.items():
        upper = name.upper()
        if any(w in upper for w in _SECRET_NAME_WORDS) and not upper.endswith(
            _NOT_A_VALUE_SUFFIXES
        ):
            remember(value)


def redact(text: str) -> str:
    """`text` with every remembered secret, bearer token, `sk-` key, JWT-like token and
    credential inside a URL (`user:***@`, `?api-key=***`) replaced."""
    if not text:
        return text
    if len(text) <= _MEMO_CHARS:
        # a result line repeats the same short strings (metric names, labels) on every
        # line; the answer depends only on the text and what is remembered right now
        return _redact_short(text, _forms, _pairs_re)
    return _redact(text, _forms, _pairs_re)


_MEMO_CHARS = 120


@functools.lru_cache(maxsize=8192)
def _redact_short(text: str, forms: tuple[str, ...], pairs: re.Pattern[str] | None) -> str:
    return _redact(text, forms, pairs)


def _redact(text: str, forms: tuple[str, ...], pairs: re.Pattern[str] | None) -> str:
    """`redact` against a snapshot of the remembered secrets."""
    for form in forms:  # a snapshot: remember() replaces the tuple, never edits it
        if form in text:
            text = text.replace(form, MASK)
    if pairs is not None:
        text = pairs.sub(lambda m: m.group(1).split("=", 1)[0] + "=" + MASK, text)
    text = _URL_USERINFO.sub(rf"\1:{MASK}@", text)
    text = _QUERY_SECRET.sub(rf"\1{MASK}", text)
    text = _BEARER.sub(rf"\1 {MASK}", text)
    text = _JWT.sub(MASK, text)
    return _SK_KEY.sub(f"sk-{MASK}", text)


def redact_url(url: str) -> str:
    """A URL fit to show or write down: its password (`user:***@`), the value of every
    query parameter (`?code=***&deployment=***`: any may be a key) and any remembered
    secret masked. Text that does not parse as a URL is redacted as text."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return redact(url)
    if parts.query and parts.scheme:
        query = "&".join(
            f"{piece.split('=', 1)[0]}={MASK}" if "=" in piece else piece
            for piece in parts.query.split("&")
        )
        url = urllib.parse.urlunsplit(parts._replace(query=query))
    return redact(url)


def _is_endpoint_field(key: object) -> bool:
    """A record field that holds an endpoint URL (`base_url`, `llm_base_url`, ...)."""
    return isinstance(key, str) and key.endswith("base_url")


def redact_obj(obj: Any) -> Any:
    """A JSON-like value (dicts, lists, strings, scalars) with every string redacted,
    keys included, and every endpoint field (`base_url`, ...) through `redact_url`; what
    the result files are written from. A frozen record comes back as a copy of its own
    type with its fields redacted the same way (the report's page records)."""
    if isinstance(obj, str):
        return redact(obj)
    if obj is None or type(obj) in (int, float, bool):  # nothing to redact: the common case
        return obj
    if isinstance(obj, dict):
        return {
            (redact(k) if isinstance(k, str) else k): _redact_field(k, v) for k, v in obj.items()
        }
    if isinstance(obj, list):
        return [redact_obj(v) for v in obj]
    if isinstance(obj, tuple):
        return tuple(redact_obj(v) for v in obj)
    if dataclasses.is_dataclass(obj) and not isinstance(obj, type):
        changes = {
            f.name: _redact_field(f.name, getattr(obj, f.name))
            for f in dataclasses.fields(obj)
            if f.init
        }
        return dataclasses.replace(obj, **changes)
    return obj


def _redact_field(key: object, value: Any) -> Any:
    """A field's value redacted: an endpoint URL through `redact_url`, the rest as values."""
    if _is_endpoint_field(key) and isinstance(value, str):
        return redact_url(value)
    return redact_obj(value)
