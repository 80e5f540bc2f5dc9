"""A lean HTTP/1.1 client for one endpoint: keep-alive JSON POSTs over asyncio protocols.

The judge posts thousands of small requests to one URL, and on the hosted path the
client's CPU is what bounds its rate. aiohttp spent about 0.3-0.5 ms of CPU a request
(a task, two timer handles, a request and a response object, header multidicts) and
0.15-0.25 s importing itself inside the first requests; this client writes prepared
bytes and parses only what framing needs (status, headers, Content-Length or chunked),
for about a third of that. What it does:

- keep-alive connections per process, reused while the server keeps them open (idle
  ones older than `IDLE_S` are closed, as a server may have dropped them);
- http and https (the system's trust store, as aiohttp and urllib use it; `SSL_CERT_FILE`
  names a private CA);
- a proxy from the environment (`HTTPS_PROXY`, `HTTP_PROXY`, `NO_PROXY`, read as urllib
  reads them; never for a loopback host): https through a CONNECT tunnel, http in
  absolute form, a user:password in the proxy's URL sent as Proxy-Authorization;
- bodies framed by Content-Length, chunked transfer coding, or the connection's end;
  1xx interim responses skipped;
- a body read only up to the caller's cap (`Response.cut` says there was more); gzip
  and deflate are inflated by the caller (`harness.llm.client`), also up to the cap.

What it leaves to the caller: the deadline (wrap a call in `asyncio.timeout`: a call
cancelled mid-way closes its connection), retries, and what a status means. A response
that is no HTTP/1.1, a connection refused or dropped raise `HttpError`.
"""

from __future__ import annotations

import asyncio
import base64
import ipaddress
import ssl
import time
import urllib.parse
import urllib.request
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import cast

from harness.llm import aio

IDLE_S = 15.0
"""An idle kept connection older than this is closed rather than reused: servers drop
idle connections (often after 5-60 s), and a request on a dropped one fails."""

MAX_HEAD_BYTES = 64 * 1024
"""A response's status line and headers may take at most this many bytes."""


class HttpError(Exception):
    """The connection could not be made or was lost, or the answer is no HTTP/1.1."""


@dataclass(frozen=True)
class Response:
    """One HTTP response: status, headers as sent, and the body (raw, not inflated)."""

    status: int
    headers: list[tuple[str, str]]
    body: bytes
    """At most the caller's `limit` bytes of it."""
    cut: bool
    """True when the body was longer than `limit` (not read further)."""

    def header(self, name: str) -> str:
        """The value of header `name` (any case; the last one sent), or ""."""
        name = name.lower()
        for k, v in reversed(self.headers):
            if k.lower() == name:
                return v
        return ""


class _Connection(asyncio.Protocol):
    """One connection: sends a request, parses its response, and says whether the
    connection can carry another."""

    def __init__(self) -> None:
        self.transport: asyncio.Transport | None = None
        self.closed = False
        self.reusable = False
        self.idle_since = 0.0
        self._buf = bytearray()
        self._waiter: asyncio.Future[Response] | None = None
        self._limit = 0
        self._no_body = False  # the answer to a CONNECT: a head only
        self._head: tuple[int, list[tuple[str, str]]] | None = None
        self._framing = ""  # "length", "chunked" or "close"
        self._left = 0  # of a Content-Length body, or of the current chunk
        self._in_chunk = False
        self._body = bytearray()
        self._keep_alive = False
        self._on_answer: Callable[[], None] | None = None

    # asyncio.Protocol

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Keep the transport to write on (any loop's: uvloop's transports do not
        subclass asyncio.Transport, so no isinstance check)."""
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        """Parse what came; a response complete (or broken) settles the request."""
        if self._waiter is None or self._waiter.done():
            self.close()  # bytes nobody asked for: this connection is out of step
            return
        self._buf += data
        try:
            self._parse()
        except HttpError as exc:
            self._settle(exc)
        except Exception as exc:  # whatever the bytes were, the caller hears of it now
            self._settle(HttpError(f"an unreadable answer ({type(exc).__name__}: {exc})"))

    def eof_received(self) -> bool:
        """The server is done sending: the end of a body framed by the connection's end,
        else a lost response."""
        if self._head is not None and self._framing == "close":
            self._finish(cut=False)
        return False  # close the transport

    def connection_lost(self, exc: Exception | None) -> None:
        """Fail a request still waiting."""
        self.closed = True
        if self._head is not None and self._framing == "close":
            self._finish(cut=False)
        self._settle(HttpError(f"the connection was closed ({exc or 'by the server'})"))

    # requests

    def request(
        self,
        data: bytes,
        limit: int,
        *,
        no_body: bool = False,
        on_answer: Callable[[], None] | None = None,
    ) -> asyncio.Future:
        """Send `data` (a whole request) and return the future of its response, whose
        body is kept up to `limit` bytes; `no_body` for a CONNECT's answer. `on_answer()`
        is called once, the moment the request is settled (answered, failed or lost),
        before the future's waiter wakes."""
        assert self.transport is not None and self._waiter is None
        self._waiter = asyncio.get_running_loop().create_future()
        self._limit, self._no_body, self.reusable = limit, no_body, False
        self._on_answer = on_answer
        self.transport.write(data)
        return self._waiter

    def close(self) -> None:
        """Close the connection now (what it was reading is dropped)."""
        self.closed = True
        if self.transport is not None:
            self.transport.abort()

    def _settle(self, result: Response | Exception) -> None:
        on_answer, self._on_answer = self._on_answer, None
        if on_answer is not None:
            on_answer()
        waiter, self._waiter = self._waiter, None
        if waiter is not None and not waiter.done():
            if isinstance(result, Exception):
                waiter.set_exception(result)
            else:
                waiter.set_result(result)

    def _parse(self) -> None:
        while self._waiter is not None:
            if self._head is None and not self._read_head():
                return
            if not self._read_body():
                return

    def _read_head(self) -> bool:
        end = self._buf.find(b"\r\n\r\n")
        if end < 0:
            if len(self._buf) > MAX_HEAD_BYTES:
                raise HttpError(f"a response head over {MAX_HEAD_BYTES} bytes")
            return False
        lines = bytes(self._buf[:end]).decode("latin-1").split("\r\n")
        del self._buf[: end + 4]
        version, _, rest = lines[0].partition(" ")
        code = rest[:3]
        if not version.startswith("HTTP/1.") or not code.isdigit():
            raise HttpError(f"an answer that is no HTTP/1.1 response ({lines[0][:60]!r})")
        status = int(code)
        headers = []
        for line in lines[1:]:
            name, sep, value = line.partition(":")
            if not sep:
                raise HttpError(f"a malformed response header ({line[:60]!r})")
            headers.append((name.strip(), value.strip()))
        if 100 <= status < 200:  # an interim answer (100 Continue, 103): the real one follows
            return self._read_head()
        self._head = (status, headers)
        self._body.clear()
        values = {k.lower(): v.lower() for k, v in headers}
        connection = values.get("connection", "")
        self._keep_alive = (
            "close" not in connection if version == "HTTP/1.1" else "keep-alive" in connection
        )
        length = values.get("content-length")
        if self._no_body or status in (204, 304):
            self._framing, self._left = "length", 0
        elif values.get("transfer-encoding", "").rsplit(",", 1)[-1].strip() == "chunked":
            self._framing, self._in_chunk = "chunked", False
        elif length is not None:
            if not (length.isascii() and length.isdigit()):
                raise HttpError(f"a malformed Content-Length ({length[:40]!r})")
            self._framing, self._left = "length", int(length)
        else:
            self._framing = "close"
        return True

    def _read_body(self) -> bool:
        """Move what arrived into the body; True when the response is complete."""
        if self._framing == "length":
            done = self._keep_left()
            if done is None:
                return True
            return self._finish(cut=False) if done else False
        if self._framing == "close":
            self._keep(len(self._buf))
            return False  # done when the server closes
        while True:  # chunked
            if self._in_chunk:
                done = self._keep_left()
                if done is None:
                    return True
                if not done:
                    return False
                self._in_chunk = False
            line_end = self._buf.find(b"\r\n")
            if line_end < 0:
                return False
            if line_end == 0:  # the CRLF closing the previous chunk's data
                del self._buf[:2]
                continue
            size_text = bytes(self._buf[:line_end]).split(b";", 1)[0].strip()
            if not size_text or size_text.strip(b"0123456789abcdefABCDEF"):
                raise HttpError(f"a malformed chunk size ({size_text[:20]!r})")
            size = int(size_text, 16)
            if size:
                del self._buf[: line_end + 2]
                self._in_chunk, self._left = True, size
                continue
            trailer_end = self._buf.find(b"\r\n\r\n", line_end)
            if trailer_end < 0:
                return False
            del self._buf[: trailer_end + 4]
            return self._finish(cut=False)

    def _keep_left(self) -> bool | None:
        """Move up to `_left` bytes (of a Content-Length body or of a chunk) into the
        body: True once they are all in, False while more must arrive, None when the
        body passed the limit (the response is settled, cut)."""
        take = min(self._left, len(self._buf))
        if not self._keep(take):
            return None
        self._left -= take
        return not self._left

    def _keep(self, n: int) -> bool:
        """Move `n` bytes of the buffer into the body; False (and the response settled,
        cut) when the body would pass the limit."""
        if len(self._body) + n > self._limit:
            self._body += self._buf[: self._limit - len(self._body)]
            self._finish(cut=True)
            return False
        self._body += self._buf[:n]
        del self._buf[:n]
        return True

    def _finish(self, *, cut: bool) -> bool:
        assert self._head is not None
        status, headers = self._head
        self._head = None
        self.reusable = not cut and self._keep_alive and self._framing != "close" and not self._buf
        self._settle(Response(status, headers, bytes(self._body), cut))
        self._body.clear()
        return True


@dataclass(frozen=True)
class Proxy:
    """A forward proxy to send requests through."""

    host: str
    port: int
    tls: bool
    """True for an https:// proxy (TLS to the proxy itself)."""
    auth: str
    """The Proxy-Authorization header line for its URL's user:password, or ""."""


def env_proxy(url: str) -> Proxy | None:
    """The proxy the environment names for `url` (as urllib reads `HTTPS_PROXY`,
    `HTTP_PROXY` and `NO_PROXY`), or None. A loopback host (the local judge's server) is
    never sent through a proxy: no proxy can reach this machine's loopback."""
    parts = urllib.parse.urlsplit(url)
    host = parts.hostname or ""
    proxy = urllib.request.getproxies().get(parts.scheme)
    if not proxy or _loopback(host) or urllib.request.proxy_bypass(host):
        return None
    return proxy_at(proxy)


def proxy_at(proxy: str) -> Proxy:
    """The proxy at URL `proxy` ("host:port" means http://host:port)."""
    if "://" not in proxy:
        proxy = "http://" + proxy
    p = urllib.parse.urlsplit(proxy)
    auth = ""
    if p.username is not None:
        user = urllib.parse.unquote(p.username) + ":" + urllib.parse.unquote(p.password or "")
        auth = f"Proxy-Authorization: Basic {base64.b64encode(user.encode()).decode()}\r\n"
    tls = p.scheme == "https"
    return Proxy(p.hostname or "", p.port or (443 if tls else 80), tls, auth)


def _loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


class Pool:
    """Keep-alive connections to the origin of one URL, posting to that URL.

    Make it and use it on one event loop; `close` on that loop."""

    def __init__(
        self,
        url: str,
        headers: dict[str, str],
        *,
        ssl_context: ssl.SSLContext | None = None,
        proxy: Proxy | None = None,
    ) -> None:
        """`headers` go with every request (Host, Content-Length and Connection are the
        pool's); `ssl_context` for an https URL (the system's default when None);
        `proxy`: `env_proxy(url)` for the environment's."""
        parts = urllib.parse.urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        self.tls = parts.scheme == "https"
        self.host = parts.hostname
        self.port = parts.port or (443 if self.tls else 80)
        authority = parts.netloc.rpartition("@")[2]
        target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
        self._proxy = proxy
        if proxy is not None and not self.tls:  # plain http through a proxy: absolute form
            target = urllib.parse.urlunsplit(("http", authority, target, "", ""))
        self._ssl = ssl_context
        if any(c in f"{k}{v}" for k, v in headers.items() for c in "\r\n\0"):
            raise ValueError("a request header with a line break or NUL")  # header injection
        lines = [f"POST {target} HTTP/1.1", f"Host: {authority}"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        head = "\r\n".join(lines) + "\r\n"
        if proxy is not None and not self.tls:
            head += proxy.auth
        self._head = head.encode("latin-1")
        self._idle: deque[_Connection] = deque()
        self._opening: deque[asyncio.Task[_Connection]] = deque()
        """Connections `warm` is opening, for the next requests to take."""

    def warm(self, n: int) -> None:
        """Start opening connections until `n` are kept or opening, without waiting for
        them: the first requests of a burst then find them open instead of each paying
        a connection (and a TLS handshake) of its own. One that fails is dropped; the
        request that would have used it connects itself and reports the failure."""
        now = time.monotonic()
        while self._idle and (self._idle[0].closed or now - self._idle[0].idle_since >= IDLE_S):
            self._idle.popleft().close()  # the oldest first: what `_take` would drop
        for _ in range(n - len(self._idle) - len(self._opening)):
            task = asyncio.ensure_future(self._connect())
            self._opening.append(task)
            task.add_done_callback(self._opened)

    def _opened(self, task: asyncio.Task[_Connection]) -> None:
        """A warmed connection no request took while it opened: kept for the next."""
        if task not in self._opening:
            return  # a request took it
        self._opening.remove(task)
        if task.cancelled() or task.exception() is not None:
            return
        conn = task.result()
        conn.idle_since = time.monotonic()
        self._idle.append(conn)

    async def post(self, body: bytes, limit: int) -> Response:
        """POST `body` to the URL; the response's body is kept up to `limit` bytes.

        The moment the answer's last byte is in, the connection is kept for the next
        request (if it can carry one) and, under a call permit (`harness.llm.aio.holding`),
        the permit is given up: the next request waiting for it goes out at once, on this
        connection, while this answer is still to be read. The permit is taken (again)
        before the request is sent."""
        permit = aio.call_permit()
        if permit is not None:
            await permit.hold()
        conn = self._take() or await self._next_connection()
        data = self._head + b"Content-Length: %d\r\n\r\n" % len(body) + body
        kept = False

        def answered() -> None:
            nonlocal kept
            if conn.reusable and not conn.closed:
                conn.idle_since = time.monotonic()
                self._idle.append(conn)
                kept = True
            if permit is not None:
                permit.let_go()

        try:
            response = await conn.request(data, limit, on_answer=answered)
        finally:
            if not kept:  # failed, cancelled mid-way or not reusable: closed, never reused
                conn.close()
        return response

    async def close(self) -> None:
        """Close every kept connection (and stop opening more)."""
        while self._opening:
            task = self._opening.pop()
            if not task.done():
                task.cancel()
            elif not task.cancelled() and task.exception() is None:
                task.result().close()
        while self._idle:
            self._idle.pop().close()

    async def _next_connection(self) -> _Connection:
        """A connection `warm` is opening (the earliest), else a new one."""
        while self._opening:
            task = self._opening.popleft()
            try:
                return await task  # cancelled with this request if it is still opening
            except HttpError:
                continue  # warmed in vain: try the next, or connect anew
        return await self._connect()

    def _take(self) -> _Connection | None:
        now = time.monotonic()
        while self._idle:
            conn = self._idle.pop()  # the most recently used: the likeliest still open
            if not conn.closed and now - conn.idle_since < IDLE_S:
                return conn
            conn.close()
        return None

    def _context(self) -> ssl.SSLContext:
        if self._ssl is None:
            self._ssl = ssl.create_default_context()
        return self._ssl

    async def _connect(self) -> _Connection:
        loop = asyncio.get_running_loop()
        proxy = self._proxy
        host, port = (proxy.host, proxy.port) if proxy else (self.host, self.port)
        direct_tls = self.tls and proxy is None
        try:
            _, conn = await loop.create_connection(
                _Connection,
                host,
                port,
                ssl=self._context() if direct_tls or (proxy and proxy.tls) else None,
                server_hostname=host if direct_tls or (proxy and proxy.tls) else None,
            )
        except (OSError, ssl.SSLError) as exc:
            raise HttpError(f"cannot connect to {host}:{port} ({exc})") from None
        if proxy is None or not self.tls:
            return conn
        try:  # https through the proxy: a tunnel, then TLS inside it
            origin = (
                f"[{self.host}]:{self.port}" if ":" in self.host else f"{self.host}:{self.port}"
            )
            connect = f"CONNECT {origin} HTTP/1.1\r\nHost: {origin}\r\n{proxy.auth}\r\n"
            answer = await conn.request(connect.encode("latin-1"), 0, no_body=True)
            if answer.status != 200:
                raise HttpError(f"the proxy refused the tunnel (HTTP {answer.status})")
            assert conn.transport is not None
            tls = await loop.start_tls(
                conn.transport, conn, self._context(), server_hostname=self.host
            )
        except (OSError, ssl.SSLError) as exc:
            conn.close()
            raise HttpError(f"no TLS through the proxy to {self.host} ({exc})") from None
        except BaseException:
            conn.close()
            raise
        if tls is None:
            raise HttpError("the proxy's tunnel closed before TLS")
        conn.transport = tls
        return conn
