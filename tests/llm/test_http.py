"""The lean HTTP/1.1 client (`harness.llm.http`) against scripted servers on 127.0.0.1:
framing (Content-Length, chunked, the connection's end), interim answers, keep-alive and
its limits, the body cap, broken answers, TLS, and proxies (CONNECT tunnel and absolute
form). The judge's own behaviours over it (retries, deadlines, gzip, caps) are tested in
test_reply_bounds and test_async_client."""

from __future__ import annotations

import asyncio
import base64
import ssl
import subprocess
from collections.abc import Awaitable, Callable
from pathlib import Path

import pytest

from harness.llm import http

Answer = Callable[[bytes], list[bytes]]
"""A scripted server's answer to one request (its head and body): the byte pieces to
write, each flushed apart; b"" closes the connection there."""


def _reply(body: bytes = b'{"ok": true}', head: str = "") -> bytes:
    return f"HTTP/1.1 200 OK\r\nContent-Length: {len(body)}\r\n{head}\r\n".encode() + body


class Scripted:
    """An HTTP server that answers each request with `answer(request)`, counting the
    connections it accepted and keeping the requests it read."""

    def __init__(self, answer: Answer, ssl_context: ssl.SSLContext | None = None) -> None:
        self.answer, self.ssl_context = answer, ssl_context
        self.connections = 0
        self.requests: list[bytes] = []
        self.server: asyncio.Server | None = None
        self.port = 0
        self.writers: list[asyncio.StreamWriter] = []

    async def __aenter__(self) -> Scripted:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.ssl_context)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        for w in self.writers:  # the handlers see the end and return
            w.close()
        await asyncio.sleep(0.01)

    def url(self, scheme: str = "http") -> str:
        return f"{scheme}://127.0.0.1:{self.port}/v1/chat/completions?api-version=1"

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        self.writers.append(writer)
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = 0
                for line in head.split(b"\r\n"):
                    if line.lower().startswith(b"content-length:"):
                        length = int(line.split(b":")[1])
                request = head + await reader.readexactly(length)
                self.requests.append(request)
                for piece in self.answer(request):
                    if not piece:
                        writer.close()
                        return
                    writer.write(piece)
                    await writer.drain()
                    await asyncio.sleep(0.001)
        except (asyncio.IncompleteReadError, ConnectionError):
            writer.close()


def run(coro: Awaitable[object]) -> object:
    return asyncio.run(coro)  # type: ignore[arg-type]


def proxy_env(monkeypatch: pytest.MonkeyPatch, **values: str) -> None:
    """Only these proxy variables (urllib reads either case; lowercase wins)."""
    for name in ("http_proxy", "https_proxy", "no_proxy", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.upper(), raising=False)
    for name, value in values.items():
        monkeypatch.setenv(name, value)


def test_content_length_bodies_go_over_one_kept_connection():
    async def go():
        async with Scripted(lambda r: [_reply()]) as server:
            pool = http.Pool(server.url(), {"Authorization": "Bearer k"})
            got = [await pool.post(b'{"q": 1}', 1000) for _ in range(3)]
            await pool.close()
            return server, got

    server, got = run(go())
    assert [(r.status, r.body, r.cut) for r in got] == [(200, b'{"ok": true}', False)] * 3
    assert server.connections == 1
    first = server.requests[0]
    assert first.startswith(b"POST /v1/chat/completions?api-version=1 HTTP/1.1\r\n")
    assert b"Host: 127.0.0.1:" in first and b"Authorization: Bearer k\r\n" in first
    assert first.endswith(b'Content-Length: 8\r\n\r\n{"q": 1}')


def test_a_chunked_body_in_small_pieces_with_extensions_and_trailers():
    pieces = [
        b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n",
        b"5;ext=1\r\nhel",
        b"lo\r\n",
        b"6\r\n, worl\r\n1\r\nd\r\n0\r\nX-Trailer: t\r\n",
        b"\r\n",
    ]

    async def go():
        async with Scripted(lambda r: pieces) as server:
            pool = http.Pool(server.url(), {})
            a = await pool.post(b"{}", 1000)
            b = await pool.post(b"{}", 1000)
            return server, a, b

    server, a, b = run(go())
    assert a.body == b.body == b"hello, world"
    assert server.connections == 1  # a chunked answer keeps the connection


def test_a_body_ended_by_the_connection_and_connection_close_are_not_reused():
    answers = iter(
        [
            [b"HTTP/1.0 200 OK\r\n\r\nuntil the end", b""],
            [_reply(b"{}", "Connection: close\r\n")],
            [_reply(b"{}")],
        ]
    )

    async def go():
        async with Scripted(lambda r: next(answers)) as server:
            pool = http.Pool(server.url(), {})
            got = [(await pool.post(b"{}", 1000)).body for _ in range(3)]
            return server, got

    server, got = run(go())
    assert got == [b"until the end", b"{}", b"{}"]
    assert server.connections == 3


def test_interim_answers_are_skipped_and_headers_are_kept_as_sent():
    answer = [
        b"HTTP/1.1 100 Continue\r\n\r\n",
        b"HTTP/1.1 429 Too Many Requests\r\nRetry-After: 2\r\nretry-after: 3\r\n"
        b"Content-Length: 2\r\n\r\n{}",
    ]

    async def go():
        async with Scripted(lambda r: answer) as server:
            return await http.Pool(server.url(), {}).post(b"{}", 1000)

    r = run(go())
    assert r.status == 429 and r.body == b"{}"
    assert ("Retry-After", "2") in r.headers and r.header("RETRY-AFTER") == "3"


def test_a_body_over_the_limit_is_cut_and_its_connection_dropped():
    async def go():
        async with Scripted(lambda r: [_reply(b"x" * 5000)]) as server:
            pool = http.Pool(server.url(), {})
            r = await pool.post(b"{}", 100)
            again = await pool.post(b"{}", 10_000)
            return server, r, again

    server, r, again = run(go())
    assert r.cut and r.body == b"x" * 100
    assert not again.cut and len(again.body) == 5000
    assert server.connections == 2


@pytest.mark.parametrize(
    "answer, says",
    [
        ([b"SSH-2.0-OpenSSH\r\n\r\n"], "no HTTP/1.1 response"),
        ([b"HTTP/1.1 200 OK\r\nContent-Length: ten\r\n\r\n"], "Content-Length"),
        ([b"HTTP/1.1 200 OK\r\nno colon here\r\n\r\n"], "malformed response header"),
        ([b"HTTP/1.1 200 OK\r\nContent-Length: \xb2\r\n\r\n"], "Content-Length"),
        ([b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n"], "chunk size"),
        ([b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n-5\r\n"], "chunk size"),
        ([b"HTTP/1.1 200 OK\r\nX: " + b"a" * 70_000], "response head over"),
        ([b"HTTP/1.1 200 OK\r\nContent-Length: 10\r\n\r\nshort", b""], "closed"),
        ([b""], "closed"),
    ],
)
def test_broken_answers_raise_http_error(answer: list[bytes], says: str):
    async def go():
        async with Scripted(lambda r: answer) as server:
            await http.Pool(server.url(), {}).post(b"{}", 100_000)

    with pytest.raises(http.HttpError, match=says):
        run(go())


def test_a_refused_connection_is_an_http_error():
    async def go():
        async with Scripted(lambda r: []) as server:
            url = server.url()
        await http.Pool(url, {}).post(b"{}", 100)

    with pytest.raises(http.HttpError, match="cannot connect"):
        run(go())


def test_a_connection_the_server_dropped_while_idle_is_not_reused():
    async def go():
        async with Scripted(lambda r: [_reply(b"{}"), b""]) as server:  # closes after it
            pool = http.Pool(server.url(), {})
            await pool.post(b"{}", 100)
            await asyncio.sleep(0.05)  # the close has arrived
            await pool.post(b"{}", 100)
            return server

    assert run(go()).connections == 2


def test_a_kept_connection_dropped_before_its_answer_is_an_error_not_sent_again():
    # the server may have read (and billed) the request: the caller's retry policy
    # decides, and counts the attempt
    answers = iter([[_reply()], [b""], [_reply()]])

    async def go():
        async with Scripted(lambda r: next(answers)) as server:
            pool = http.Pool(server.url(), {})
            await pool.post(b"{}", 100)
            with pytest.raises(http.HttpError, match="closed"):
                await pool.post(b"{}", 100)
            return server

    server = run(go())
    assert server.connections == 1 and len(server.requests) == 2


def test_a_call_cancelled_mid_way_closes_its_connection():
    slow = [b"HTTP/1.1 200 OK\r\nContent-Length: 4\r\n\r\nab"]

    async def go():
        async with Scripted(lambda r: slow) as server:
            pool = http.Pool(server.url(), {})
            with pytest.raises(TimeoutError):
                async with asyncio.timeout(0.2):
                    await pool.post(b"{}", 100)
            assert not pool._idle
            return server

    run(go())


def test_warm_opens_the_connections_a_burst_then_takes():
    async def go():
        async with Scripted(lambda r: [_reply()]) as server:
            pool = http.Pool(server.url(), {})
            pool.warm(3)
            pool.warm(3)  # counts those still opening: no more
            got = await asyncio.gather(*(pool.post(b"{}", 100) for _ in range(3)))
            opened = server.connections
            pool.warm(2)  # three kept already
            await asyncio.sleep(0.02)
            await pool.close()
            return opened, server.connections, got

    opened, total, got = run(go())
    assert [r.status for r in got] == [200] * 3
    assert opened == 3 and total == 3  # the burst took the warmed ones; none was added


def test_warm_against_a_dead_endpoint_leaves_the_error_to_the_request():
    async def go():
        async with Scripted(lambda r: []) as server:
            url = server.url()
        pool = http.Pool(url, {})
        pool.warm(2)
        await asyncio.sleep(0.02)  # both failed, quietly
        assert not pool._opening and not pool._idle
        pool.warm(2)
        with pytest.raises(http.HttpError, match="cannot connect"):
            await pool.post(b"{}", 100)  # takes a failing warm one, then connects itself
        await pool.close()

    run(go())


def test_a_call_permit_passes_on_when_the_answer_arrives_not_when_it_is_read():
    """Two calls, one permit: the second is sent (over the first's connection) while the
    first still holds its answer unread; a request sent again takes the permit again."""
    from harness.llm import aio

    async def go():
        async with Scripted(lambda r: [_reply()]) as server:
            pool = http.Pool(server.url(), {})
            limit = asyncio.Semaphore(1)
            second_answered = asyncio.Event()
            order: list[str] = []

            async def call(name: str, then: Callable[[], Awaitable[object]]) -> None:
                permit = aio.CallPermit(limit)
                await permit.hold()
                with aio.holding(permit):
                    await pool.post(b"{}", 100)
                    order.append(f"{name} answered")
                    await then()

            async def first_then() -> None:
                await second_answered.wait()  # still inside its call: the permit is free
                await pool.post(b"{}", 100)  # a retry: takes the permit again
                order.append("first sent again")

            async def second_then() -> None:
                second_answered.set()

            async with asyncio.timeout(5):
                await asyncio.gather(call("first", first_then), call("second", second_then))
            await pool.close()
            return order, server.connections, limit.locked()

    order, connections, locked = run(go())
    assert order == ["first answered", "second answered", "first sent again"]
    assert connections == 1  # the first's connection was back before the second was sent
    assert not locked


@pytest.fixture(scope="module")
def tls(tmp_path_factory: pytest.TempPathFactory) -> tuple[ssl.SSLContext, ssl.SSLContext]:
    """(a server context with a self-signed certificate for 127.0.0.1, a client context
    that trusts it)."""
    d: Path = tmp_path_factory.mktemp("tls")
    subprocess.run(
        [
            "openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1",
            "-subj", "/CN=127.0.0.1", "-addext", "subjectAltName=IP:127.0.0.1",
            "-keyout", str(d / "key.pem"), "-out", str(d / "cert.pem"),
        ],
        check=True,
        capture_output=True,
    )  # fmt: skip
    server = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    server.load_cert_chain(d / "cert.pem", d / "key.pem")
    client = ssl.create_default_context(cafile=str(d / "cert.pem"))
    return server, client


def test_https_verifies_the_server_and_keeps_its_connection(tls):
    server_ctx, client_ctx = tls

    async def go():
        async with Scripted(lambda r: [_reply()], server_ctx) as server:
            pool = http.Pool(server.url("https"), {}, ssl_context=client_ctx)
            got = [await pool.post(b"{}", 100) for _ in range(2)]
            untrusting = http.Pool(
                server.url("https"), {}, ssl_context=ssl.create_default_context()
            )
            with pytest.raises(http.HttpError, match="CERTIFICATE_VERIFY_FAILED"):
                await untrusting.post(b"{}", 100)
            return server, got

    server, got = run(go())
    assert [r.body for r in got] == [b'{"ok": true}'] * 2
    assert server.connections == 1  # one kept for both posts (the refused one never opened)


def test_a_private_ca_named_by_ssl_cert_file_is_trusted(tls, monkeypatch, tmp_path):
    """The system's trust store, as OpenSSL reads it: SSL_CERT_FILE names a private CA
    (an endpoint behind a company's own certificate) without any setting of ours."""
    server_ctx, client_ctx = tls
    ca = tmp_path / "ca.pem"
    ca.write_text(ssl.DER_cert_to_PEM_cert(client_ctx.get_ca_certs(binary_form=True)[0]))
    monkeypatch.setenv("SSL_CERT_FILE", str(ca))

    async def go():
        async with Scripted(lambda r: [_reply()], server_ctx) as server:
            return await http.Pool(server.url("https"), {}).post(b"{}", 100)

    assert run(go()).body == b'{"ok": true}'


class Proxy:
    """A forward proxy: CONNECT tunnels (answered 200, then bytes relayed both ways)
    and absolute-form requests relayed to their origin; keeps each request head."""

    def __init__(self) -> None:
        self.heads: list[bytes] = []
        self.server: asyncio.Server | None = None
        self.port = 0
        self.writers: list[asyncio.StreamWriter] = []

    async def __aenter__(self) -> Proxy:
        self.server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self.port = self.server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self.server is not None
        self.server.close()
        for w in self.writers:  # both ends of each relay: the pipes see the end
            w.close()
        await asyncio.sleep(0.01)

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.writers.append(writer)
        head = await reader.readuntil(b"\r\n\r\n")
        self.heads.append(head)
        method, target, _ = head.split(b"\r\n")[0].split(b" ")
        if method == b"CONNECT":
            host, port = target.rsplit(b":", 1)
            up_r, up_w = await asyncio.open_connection(host.decode(), int(port))
            self.writers.append(up_w)
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
        else:
            origin = target.split(b"/")[2]
            host, port = origin.rsplit(b":", 1)
            up_r, up_w = await asyncio.open_connection(host.decode(), int(port))
            self.writers.append(up_w)
            up_w.write(head)

        async def pipe(r: asyncio.StreamReader, w: asyncio.StreamWriter) -> None:
            try:
                while data := await r.read(65536):
                    w.write(data)
                    await w.drain()
            except ConnectionError:
                pass
            w.close()

        await asyncio.gather(pipe(reader, up_w), pipe(up_r, writer))


def test_https_goes_through_a_connect_tunnel_with_proxy_credentials(tls):
    server_ctx, client_ctx = tls

    async def go():
        async with Proxy() as proxy, Scripted(lambda r: [_reply()], server_ctx) as server:
            at = http.proxy_at(f"http://us%40er:p%3Ass@127.0.0.1:{proxy.port}")
            pool = http.Pool(server.url("https"), {}, ssl_context=client_ctx, proxy=at)
            got = [await pool.post(b"{}", 100) for _ in range(2)]
            return proxy, server, got

    proxy, server, got = run(go())
    assert [r.body for r in got] == [b'{"ok": true}'] * 2
    assert len(proxy.heads) == 1  # one tunnel carried both
    head = proxy.heads[0]
    assert head.startswith(f"CONNECT 127.0.0.1:{server.port} HTTP/1.1\r\n".encode())
    token = base64.b64encode(b"us@er:p:ss").decode()
    assert f"Proxy-Authorization: Basic {token}".encode() in head
    assert b"Proxy-Authorization" not in server.requests[0]  # the origin never sees it


def test_plain_http_goes_to_the_proxy_in_absolute_form():
    async def go():
        async with Proxy() as proxy, Scripted(lambda r: [_reply()]) as server:
            pool = http.Pool(server.url(), {}, proxy=http.proxy_at(f"127.0.0.1:{proxy.port}"))
            r = await pool.post(b"{}", 100)
            return proxy, server, r

    proxy, server, r = run(go())
    assert r.body == b'{"ok": true}'
    assert proxy.heads[0].startswith(
        f"POST http://127.0.0.1:{server.port}/v1/chat/completions?api-version=1 ".encode()
    )


def test_the_environment_names_the_proxy_unless_no_proxy_says_otherwise(monkeypatch):
    proxy_env(monkeypatch, https_proxy="http://proxy.example:3128")
    assert http.env_proxy("https://api.example/v1") == http.Proxy("proxy.example", 3128, False, "")
    assert http.env_proxy("http://api.example/v1") is None  # no HTTP_PROXY
    proxy_env(monkeypatch, https_proxy="http://proxy.example:3128", no_proxy="api.example")
    assert http.env_proxy("https://api.example/v1") is None
    proxy_env(monkeypatch, http_proxy="http://proxy.example:3128")
    for local in ("http://127.0.0.1:8080/v1", "http://localhost:8080/v1", "http://[::1]:8/v1"):
        assert http.env_proxy(local) is None  # the local judge's server: never proxied
    assert http.env_proxy("http://10.0.0.5:8080/v1") is not None


class _PlainTransport:
    """A transport that is no asyncio.Transport subclass, as uvloop's are not."""

    def __init__(self) -> None:
        self.written: list[bytes] = []
        self.aborted = False

    def write(self, data: bytes) -> None:
        self.written.append(data)

    def abort(self) -> None:
        self.aborted = True


def test_a_connection_works_on_a_transport_that_is_no_asyncio_transport_subclass() -> None:
    # a process that installed uvloop's policy gives the client uvloop's transports
    async def go() -> http.Response:
        conn = http._Connection()
        transport = _PlainTransport()
        conn.connection_made(transport)  # type: ignore[arg-type]
        waiter = conn.request(b"POST / HTTP/1.1\r\n\r\n", 1024)
        conn.data_received(_reply(b'{"ok": 1}')[:20])
        conn.data_received(_reply(b'{"ok": 1}')[20:])
        assert transport.written == [b"POST / HTTP/1.1\r\n\r\n"]
        return await waiter

    response = asyncio.run(go())
    assert (response.status, response.body) == (200, b'{"ok": 1}')
