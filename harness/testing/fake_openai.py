"""A misbehaving OpenAI-compatible chat server on 127.0.0.1, for tests and benchmarks.

`behave(n, prompt)` decides, for the n-th request (1-based) and its prompt text, what the
server does: answer, answer garbage, rate-limit (429 with Retry-After), fail (500, 413),
hang past the client's timeout, or reply as a hostile endpoint would (a huge answer, a
gzip bomb, a body dripped a byte at a time). The server counts requests, requests in flight (and
the most ever in flight) and the token usage it reported, so tests can check the
client's accounting against it.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import http.server
import json
import re
import sys
import threading
import time
import zlib
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Self


@dataclass(frozen=True)
class Act:
    """What the server does with one request: `kind` picks the behaviour, `text` is the
    answer, `retry_after_s` the 429's Retry-After (None: no header), `hang_s` the hang.
    `retry_after` is a raw Retry-After value (an HTTP date, say) sent instead of
    `retry_after_s`. Kinds beyond the HTTP errors: a 200 whose body is not JSON
    (badjson), has no `choices` (nochoices), `choices: []` (emptychoices) or a choice
    without a message (nomessage), and a connection closed without any reply (drop).
    echo_key_400 / echo_key_500: that HTTP error with the request's API key in its body.
    413: request too large. Hostile replies: huge (a 200 whose answer is `text` followed
    by `size` spaces), gzipbomb (the same answer gzip-compressed: a small body that
    inflates to `size` bytes), drip (a valid answer sent one byte every `hang_s`
    seconds, `size` spaces of padding first: 0 means none).
    """

    kind: str = "answer"  # answer | garbage | 429 | 500 | hang | badjson | nochoices | ...
    text: str = "yes"
    retry_after_s: float | None = None
    hang_s: float = 0.0
    retry_after: str | None = None
    top_logprobs: tuple[tuple[str, float], ...] = ()
    """The first answer token's alternatives (token, natural-log probability), returned
    as logprobs when the request asks for them."""
    size: int = 0
    """huge, gzipbomb, drip: how many spaces follow the answer text."""
    tokens: tuple[tuple[str, tuple[tuple[str, float], ...]], ...] = ()
    """The answer as several tokens, each with its alternatives (token, logprob), returned
    as logprobs when the request asks for them (instead of `top_logprobs`); their texts
    should join to `text`."""


def _padded_answer(act: Act) -> tuple[bytes, bytes]:
    """A chat completion whose content is `act.text` and `act.size` spaces, as (the JSON
    before the spaces, the JSON after them): the spaces are never held whole."""
    body = json.dumps(
        {
            "id": "fake-hostile",
            "object": "chat.completion",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": act.text + "\0"}}],
            "usage": {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2},
        }
    )
    head, tail = body.split("\\u0000")
    return head.encode(), tail.encode()


@functools.lru_cache(maxsize=4)
def _gzip_bomb(act: Act) -> bytes:
    """`_padded_answer` gzip-compressed chunk by chunk (200 MB of spaces is ~200 KB),
    made once per answer and size."""
    head, tail = _padded_answer(act)
    z = zlib.compressobj(9, zlib.DEFLATED, 16 + zlib.MAX_WBITS)
    out = [z.compress(head)]
    block = b" " * (1 << 20)
    left = act.size
    while left > 0:
        out.append(z.compress(block[: min(left, len(block))]))
        left -= len(block)
    out += [z.compress(tail), z.flush()]
    return b"".join(out)


def _logprobs(act: Act, text: str, request: dict) -> dict:
    """The choice's logprobs for an Act with top_logprobs (or tokens), when the request
    asked."""
    if act.tokens and request.get("logprobs"):
        content = [
            {
                "token": token,
                "logprob": next((lp for t, lp in top if t == token), 0.0),
                "bytes": None,
                "top_logprobs": [{"token": t, "logprob": lp, "bytes": None} for t, lp in top],
            }
            for token, top in act.tokens
        ]
        return {"logprobs": {"content": content}}
    if not act.top_logprobs or not request.get("logprobs"):
        return {}
    alternatives = [{"token": t, "logprob": lp, "bytes": None} for t, lp in act.top_logprobs]
    # the whole (short) answer as one token, as "yes" or "2" are for real tokenizers
    first = next((lp for t, lp in act.top_logprobs if t == text), act.top_logprobs[0][1])
    return {
        "logprobs": {
            "content": [
                {"token": text, "logprob": first, "bytes": None, "top_logprobs": alternatives}
            ]
        }
    }


def chat_completion(
    request: dict[str, Any],
    text: str,
    completion_id: str,
    prompt: str,
    choice_extra: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """An OpenAI chat completion answering `text` to `request` (one completion token; the
    prompt's words counted as its tokens), with `choice_extra` (e.g. logprobs) in its
    choice."""
    prompt_tokens = len(prompt.split())
    return {
        "id": completion_id,
        "object": "chat.completion",
        "created": int(time.time()),
        "model": request.get("model", "fake"),
        "choices": [
            {
                "index": 0,
                "finish_reason": "stop",
                "message": {"role": "assistant", "content": text},
                **(choice_extra or {}),
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": 1,
            "total_tokens": prompt_tokens + 1,
        },
    }


def answer_yes(n: int, prompt: str) -> Act:
    """Answer "yes" to everything."""
    return Act()


def fake_embeddings(request: dict) -> dict:
    """An /embeddings answer: a deterministic 16-dimensional vector per input text (from
    its sha256), so equal texts get equal vectors and different texts different ones."""
    texts = request.get("input", [])
    texts = [texts] if isinstance(texts, str) else texts
    data = []
    for i, text in enumerate(texts):
        digest = hashlib.sha256(str(text).encode()).digest()
        data.append(
            {"object": "embedding", "index": i, "embedding": [b / 255 - 0.5 for b in digest[:16]]}
        )
    n = sum(len(str(t).split()) for t in texts)
    return {
        "object": "list",
        "data": data,
        "model": request.get("model", "fake"),
        "usage": {"prompt_tokens": n, "total_tokens": n},
    }


_LIST = re.compile(r"Answer one line per passage, (\d+) lines")


def answer_any(n: int, prompt: str) -> Act:
    """A valid answer to every judge prompt format: "yes" to one criterion, both
    criteria as two lines, one line per passage for a list (relevant, not complete),
    grade 2 when asked for a grade, four criterion grades summing to 6 (relevant, not
    complete) when asked for them, and NONE when asked to copy the answering sentence."""
    if "Grade the passage for the question on four criteria" in prompt:
        return Act(text="exactness: 1\ncoverage: 2\ntopicality: 2\ncontextual fit: 1")
    if "Answer exactly two lines" in prompt:
        return Act(text="relevant: yes\ncomplete: no")
    if "Grade the passage for this question" in prompt:
        return Act(text="2")
    if "Copy, word for word" in prompt:
        return Act(text="NONE")
    m = _LIST.search(prompt)
    if m:
        lines = [f"{i}: relevant=yes complete=no" for i in range(1, int(m.group(1)) + 1)]
        return Act(text="\n".join(lines))
    return Act()


class _Server(http.server.ThreadingHTTPServer):
    # The listen backlog is fixed when the socket binds: the default 5 resets connections
    # when a client opens 64 or 256 at once.
    request_queue_size = 1024

    def handle_error(self, request: object, client_address: object) -> None:
        """Quiet about a client that hung up (one that stops reading a hostile reply)."""
        if isinstance(sys.exc_info()[1], (ConnectionResetError, BrokenPipeError)):
            return
        super().handle_error(request, client_address)  # type: ignore[arg-type]  # typeshed: socket


class LoopbackServer:
    """An HTTP server on a free 127.0.0.1 port, serving from a thread while used as a
    context manager; subclasses call `_listen(Handler)` when built."""

    _server: _Server
    _thread: threading.Thread

    def _listen(self, handler: type[http.server.BaseHTTPRequestHandler]) -> None:
        self._server = _Server(("127.0.0.1", 0), handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def base_url(self) -> str:
        """The OpenAI-compatible base URL to give a client (ends in /v1)."""
        return f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> Self:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


class FakeOpenAI(LoopbackServer):
    """The fake server on a free loopback port, serving /chat/completions and /embeddings
    while used as a context manager; its counters are safe to read from the test.
    """

    def __init__(
        self,
        behave: Callable[[int, str], Act] = answer_yes,
        latency_s: float = 0.0,
        refuse_logprobs: int | None = None,
    ) -> None:
        """`refuse_logprobs`: answer requests that ask for logprobs with this HTTP status
        (llama-cpp-python's server answers 500 when started without --logits_all)."""
        self.behave = behave
        self.latency_s = latency_s
        self.refuse_logprobs = refuse_logprobs
        self.refused_logprobs = 0
        self.requests = 0
        self.slots: list[tuple[int | None, str]] = []
        """(`id_slot`, prompt) of each chat request, in arrival order."""
        self.in_flight = 0
        self.max_in_flight = 0
        self.peers: set[tuple[str, int]] = set()
        """The client addresses (one per connection) that sent a request."""
        self.reported_prompt_tokens = 0
        self.reported_completion_tokens = 0
        self.answered = 0
        self.kinds: dict[str, int] = {}
        self.authorizations: list[str] = []
        """The Authorization header of every request (chat and embeddings), as received."""
        self.current = threading.local()
        """In `behave`: `current.authorization` is the Authorization header of the request
        being decided (tests tell workers apart by their keys)."""
        self._lock = threading.Lock()
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            # Headers and body go out in separate writes; without TCP_NODELAY, Nagle and
            # the client's delayed ACK add ~40 ms to every response.
            disable_nagle_algorithm = True

            def log_message(self, *args: object) -> None:
                pass

            def _send(self, code: int, body: bytes, headers: dict[str, str] | None = None) -> None:
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for k, v in (headers or {}).items():
                    self.send_header(k, v)
                self.end_headers()
                self._answered()  # before the last byte: the client may send again at once
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    self.wfile.write(body)  # the client may have given up (a provoked timeout)

            def _answered(self) -> None:
                """This request no longer counts as in flight (once)."""
                if getattr(self, "_in_flight", False):
                    self._in_flight = False
                    with fake._lock:
                        fake.in_flight -= 1

            def _hostile(self, act: Act) -> None:
                """A 200 answer that is too big, a gzip bomb, or sent drop by drop."""
                head, tail = _padded_answer(act)
                if act.kind == "gzipbomb":
                    self._send(200, _gzip_bomb(act), {"Content-Encoding": "gzip"})
                    return
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(head) + act.size + len(tail)))
                self.end_headers()
                block = b" " * (1 << 16)
                with contextlib.suppress(BrokenPipeError, ConnectionResetError):
                    if act.kind == "huge":
                        self.wfile.write(head)
                        for start in range(0, act.size, len(block)):
                            self.wfile.write(block[: min(len(block), act.size - start)])
                        self.wfile.write(tail)
                        return
                    for byte in head + b" " * act.size + tail:  # drip: one byte at a time
                        self.wfile.write(bytes([byte]))
                        self.wfile.flush()
                        time.sleep(act.hang_s)

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length", 0))
                request = json.loads(self.rfile.read(length) or b"{}")
                with fake._lock:
                    fake.authorizations.append(self.headers.get("Authorization", ""))
                if self.path.rstrip("/").endswith("/embeddings"):
                    self._send(200, json.dumps(fake_embeddings(request)).encode())
                    return
                prompt = "\n".join(m.get("content", "") for m in request.get("messages", []))
                with fake._lock:
                    fake.requests += 1
                    fake.peers.add(self.client_address)
                    fake.slots.append((request.get("id_slot"), prompt))
                    n = fake.requests
                    fake.in_flight += 1
                    fake.max_in_flight = max(fake.max_in_flight, fake.in_flight)
                self._in_flight = True
                try:
                    if fake.refuse_logprobs and request.get("logprobs"):
                        with fake._lock:
                            fake.refused_logprobs += 1
                        self._send(
                            fake.refuse_logprobs,
                            b'{"error": {"message": "logprobs is not supported for models '
                            b'created with logits_all=False"}}',
                        )
                        return
                    fake.current.authorization = self.headers.get("Authorization", "")
                    act = fake.behave(n, prompt)
                    with fake._lock:
                        fake.kinds[act.kind] = fake.kinds.get(act.kind, 0) + 1
                    time.sleep(fake.latency_s)
                    if act.kind == "429":
                        headers = (
                            {"Retry-After": str(act.retry_after_s)}
                            if act.retry_after_s is not None
                            else {}
                        )
                        if act.retry_after is not None:
                            headers = {"Retry-After": act.retry_after}
                        self._send(
                            429,
                            b'{"error": {"message": "rate limited", "type": "rate_limit"}}',
                            headers,
                        )
                    elif act.kind == "500":
                        self._send(500, b'{"error": {"message": "internal error"}}')
                    elif act.kind in ("echo_key_400", "echo_key_500"):
                        # A careless endpoint: its error body repeats the key it was sent,
                        # raw and as the header, as some proxies and servers do.
                        auth = self.headers.get("Authorization", "")
                        key = auth.split(" ", 1)[-1]
                        message = f"Incorrect API key provided: {key} (header {auth!r})"
                        body: dict[str, Any] = {"error": {"message": message, "key": key}}
                        self._send(int(act.kind[-3:]), json.dumps(body).encode())
                    elif act.kind == "hang":
                        time.sleep(act.hang_s)
                        self._send(500, b'{"error": {"message": "too late"}}')
                    elif act.kind == "badjson":
                        self._send(200, b"{this is not json")
                    elif act.kind in ("nochoices", "emptychoices", "nomessage"):
                        broken: dict[str, object] = {"id": f"fake-{n}", "object": "chat.completion"}
                        if act.kind != "nochoices":
                            broken["choices"] = (
                                [{"index": 0, "finish_reason": "stop"}]
                                if act.kind == "nomessage"
                                else []
                            )
                        self._send(200, json.dumps(broken).encode())
                    elif act.kind == "drop":
                        self.close_connection = True  # closed with nothing sent back
                    elif act.kind == "413":
                        self._send(413, b'{"error": {"message": "request entity too large"}}')
                    elif act.kind in ("huge", "drip", "gzipbomb"):
                        self._hostile(act)
                    else:
                        text = act.text if act.kind == "answer" else "banana split"
                        body = chat_completion(
                            request, text, f"fake-{n}", prompt, _logprobs(act, text, request)
                        )
                        with fake._lock:
                            fake.reported_prompt_tokens += body["usage"]["prompt_tokens"]
                            fake.reported_completion_tokens += 1
                            fake.answered += 1
                        self._send(200, json.dumps(body).encode())
                finally:
                    self._answered()

        self._listen(Handler)


def main() -> None:
    """Serve from its own process (for benchmarks), with LATENCY_S and TEXT as arguments:
    `python -c "from harness.testing.fake_openai import main; main()" 0.05 yes`.
    Prints the base URL, then serves until killed."""
    import sys

    latency = float(sys.argv[1]) if len(sys.argv) > 1 else 0.05
    text = sys.argv[2] if len(sys.argv) > 2 else "no"
    server = FakeOpenAI(lambda n, p: Act(text=text), latency_s=latency)
    print(server.base_url, flush=True)
    server._server.serve_forever()


if __name__ == "__main__":
    main()
