"""A lean fake chat endpoint for benchmarks: one asyncio protocol, one canned answer.

A benchmark of the client against a fake endpoint on the same machine measures both: on
2 cores, the fake's own CPU per request is taken from the client. `FakeOpenAI` (a
thread per connection, the standard library's HTTP parsing) spends about 0.45 ms a
request; this one parses only what it needs (the end of the headers and
Content-Length) and writes the same prepared bytes after the latency, so the rate it
allows is the client's. It answers every POST with the chat completion `text`; it has
none of `FakeOpenAI`'s misbehaviours or counters.

    python -c "from harness.testing.lean_openai import main; main()" 0.05 yes
"""

from __future__ import annotations

import asyncio
import json
import sys

from harness.testing.fake_openai import chat_completion


def canned_response(text: str) -> bytes:
    """The whole HTTP/1.1 response (keep-alive) carrying a chat completion of `text`."""
    body = json.dumps(chat_completion({"model": "fake"}, text, "fake-lean", "")).encode()
    head = (
        "HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n"
        f"Content-Length: {len(body)}\r\nConnection: keep-alive\r\n\r\n"
    )
    return head.encode() + body


class LeanChat(asyncio.Protocol):
    """One connection: each complete request is answered with `response` after
    `latency_s` (a client sends the next request on a connection only after its answer,
    so answers go out in order)."""

    def __init__(self, latency_s: float, response: bytes) -> None:
        self.latency_s, self.response = latency_s, response
        self.buffer = bytearray()
        self.transport: asyncio.Transport | None = None

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        """Keep the connection's transport to answer on."""
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        """Buffer what came; answer each request once its body is all in."""
        self.buffer += data
        while True:
            end = self.buffer.find(b"\r\n\r\n")
            if end < 0:
                return
            length = _content_length(bytes(self.buffer[:end]))
            if len(self.buffer) < end + 4 + length:
                return
            del self.buffer[: end + 4 + length]
            asyncio.get_running_loop().call_later(self.latency_s, self._reply)

    def _reply(self) -> None:
        if self.transport is not None and not self.transport.is_closing():
            self.transport.write(self.response)


def _content_length(head: bytes) -> int:
    """The Content-Length of a request's header block (0 without one)."""
    for line in head.split(b"\r\n")[1:]:
        name, _, value = line.partition(b":")
        if name.strip().lower() == b"content-length":
            return int(value.strip())
    return 0


async def serve(latency_s: float, text: str) -> None:
    """Listen on a free 127.0.0.1 port, print the base URL (ends in /v1), serve until
    cancelled."""
    loop = asyncio.get_running_loop()
    response = canned_response(text)
    server = await loop.create_server(
        lambda: LeanChat(latency_s, response), "127.0.0.1", 0, backlog=1024
    )
    port = server.sockets[0].getsockname()[1]
    print(f"http://127.0.0.1:{port}/v1", flush=True)
    async with server:
        await server.serve_forever()


def main() -> None:
    """Serve from its own process, with LATENCY_S and TEXT as arguments (as
    `fake_openai.main`)."""
    latency = float(sys.argv[1]) if len(sys.argv) > 1 else 0.05
    text = sys.argv[2] if len(sys.argv) > 2 else "no"
    asyncio.run(serve(latency, text))


if __name__ == "__main__":
    main()
