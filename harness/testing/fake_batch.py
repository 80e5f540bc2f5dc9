"""A fake OpenAI Files and Batches API (and chat completions) on 127.0.0.1, for tests.

It serves what `harness.judge.batch` uses: POST /files (purpose "batch", multipart),
POST /batches, GET /batches/{id} (validating -> in_progress -> finalizing -> completed,
one step a look, with request_counts), GET /batches (the list), GET /files/{id}/content,
and POST /chat/completions for the requests asked online. Switches: `hold` (batches stay
in_progress until it is set), `fail(custom_id)` (that request goes to the error file
with a 500), `expire` (the first n batches end `expire_as`, "expired" or "cancelled",
with only their first half answered and, as OpenAI does, every request they never ran
in the error file with `"response": null` and the code batch_expired or
batch_cancelled), `reject` (the first n batches fail validation: status "failed", no
file), `malformed` (that many lines of the first result file are not JSON), `garbage`
(that many answers after those, whose text the judge cannot parse), `no_choices` (that
many answers after those, billed but without `choices`), `refuse` (an endpoint, by its
name in `ENDPOINTS`, answers that HTTP status; the test may change it while serving)
and `lose_create` (the first n POST /batches create their batch but answer 500, as an
answer lost on the way would look).
Every request of every batch and every online call is counted, by prompt.
"""

from __future__ import annotations

import collections
import email.parser
import http.server
import json
import threading
import time
from collections.abc import Callable
from typing import Any

from harness.testing.fake_openai import LoopbackServer, chat_completion

ENDPOINTS = ("upload", "create", "list", "get", "content", "chat")
"""The endpoints `refuse` names: POST /files, POST /batches, GET /batches, GET
/batches/{id}, GET /files/{id}/content, POST /chat/completions."""


def answer(prompt: str) -> str:
    """The judge's answer to a prompt: relevant for about half the chunks, complete
    always; two lines in "both" mode."""
    if "Answer exactly two lines" in prompt:
        return "relevant: yes\ncomplete: no"
    return "yes" if len(prompt) % 2 else "no"


def _prompt(body: dict[str, Any]) -> str:
    return "\n".join(m.get("content", "") for m in body.get("messages", []))


def _completion(body: dict[str, Any], text: str, n: str) -> dict[str, Any]:
    return chat_completion(body, text, f"chatcmpl-{n}", _prompt(body))


class FakeBatchAPI(LoopbackServer):
    """The fake server on a free loopback port while used as a context manager."""

    def __init__(
        self,
        *,
        answer: Callable[[str], str] = answer,
        fail: Callable[[str], bool] = lambda cid: False,
        expire: int = 0,
        expire_as: str = "expired",
        reject: int = 0,
        malformed: int = 0,
        garbage: int = 0,
        no_choices: int = 0,
        hold: threading.Event | None = None,
        refuse: dict[str, int] | None = None,
        lose_create: int = 0,
    ) -> None:
        self.answer, self.fail = answer, fail
        self.expire, self.expire_as, self.reject = expire, expire_as, reject
        self.malformed, self.garbage, self.no_choices = malformed, garbage, no_choices
        self.hold = hold
        self.refuse: dict[str, int] = dict(refuse or {})
        """Endpoint name (`ENDPOINTS`) -> the HTTP status it answers instead."""
        self.refused: collections.Counter[str] = collections.Counter()
        """Endpoint name -> requests refused."""
        self.lose_create = lose_create
        self.billed_prompt_tokens = 0
        """Prompt tokens of every readable batch result line answered 200 (what the batches
        bill)."""
        self.files: dict[str, bytes] = {}
        self.batches: dict[str, dict[str, Any]] = {}
        self.uploads = 0
        self.batch_requests: collections.Counter[str] = collections.Counter()
        """Prompt -> times it was in a batch that answered it (billed)."""
        self.submitted: collections.Counter[str] = collections.Counter()
        """custom_id -> batches it was submitted in."""
        self.online: collections.Counter[str] = collections.Counter()
        """Prompt -> online chat completions answered."""
        self.polls = 0
        self.downloads: collections.Counter[str] = collections.Counter()
        """File id -> times its content was downloaded."""
        self._lock = threading.Lock()
        self._results_made = 0
        fake = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True

            def log_message(self, *args: object) -> None:
                pass

            def _send(
                self, code: int, obj: Any, raw: bytes | None = None, retry_ms: int | None = None
            ) -> None:
                body = raw if raw is not None else json.dumps(obj).encode()
                self.send_response(code)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                if retry_ms is not None:  # the wait the SDK's retries keep to
                    self.send_header("retry-after-ms", str(retry_ms))
                self.end_headers()
                self.wfile.write(body)

            def _body(self) -> bytes:
                return self.rfile.read(int(self.headers.get("Content-Length", 0)))

            def _refused(self, endpoint: str) -> bool:
                """Answer the error `refuse` sets for `endpoint`, if any (under the lock)."""
                code = fake.refuse.get(endpoint)
                if code is None:
                    return False
                fake.refused[endpoint] += 1
                # echoing the caller's key, as a careless gateway might
                said = f"refused ({endpoint}) for {self.headers.get('Authorization')}"
                error = {"message": said, "type": "fake", "code": str(code)}
                self._send(code, {"error": error}, retry_ms=1)
                return True

            def do_POST(self) -> None:
                path = self.path.split("?")[0].rstrip("/")
                data = self._body()
                with fake._lock:
                    endpoint = _endpoint(path, {"/files": "upload", "/batches": "create"}, "chat")
                    if self._refused(endpoint):
                        return
                    if path.endswith("/files"):
                        self._send(200, fake._upload(self.headers["Content-Type"], data))
                    elif path.endswith("/batches"):
                        made = fake._create(json.loads(data))
                        if fake.lose_create > 0:
                            fake.lose_create -= 1
                            lost = {"error": {"message": "lost", "type": "fake"}}
                            self._send(500, lost, retry_ms=1)
                        else:
                            self._send(200, made)
                    elif path.endswith("/chat/completions"):
                        body = json.loads(data)
                        fake.online[_prompt(body)] += 1
                        text = fake.answer(_prompt(body))
                        self._send(200, _completion(body, text, str(sum(fake.online.values()))))
                    else:
                        self._send(404, {"error": {"message": f"no {path}"}})

            def do_GET(self) -> None:
                path = self.path.split("?")[0].rstrip("/")
                parts = path.split("/")
                with fake._lock:
                    endpoint = _endpoint(path, {"/batches": "list", "/content": "content"}, "get")
                    if self._refused(endpoint):
                        return
                    if path.endswith("/batches"):
                        data = [fake._public(b) for b in fake.batches.values()]
                        self._send(200, {"object": "list", "data": data, "has_more": False})
                    elif len(parts) >= 2 and parts[-2] == "batches":
                        batch = fake.batches.get(parts[-1])
                        if batch is None:
                            self._send(404, {"error": {"message": "no such batch"}})
                        else:
                            self._send(200, fake._poll(batch))
                    elif path.endswith("/content") and parts[-2] in fake.files:
                        fake.downloads[parts[-2]] += 1
                        self._send(200, None, fake.files[parts[-2]])
                    else:
                        self._send(404, {"error": {"message": f"no {path}"}})

        self._listen(Handler)

    # ------------------------------------------------------------ the API, under the lock

    def _upload(self, content_type: str, data: bytes) -> dict[str, Any]:
        msg = email.parser.BytesParser().parsebytes(
            b"Content-Type: " + content_type.encode() + b"\r\n\r\n" + data
        )
        content = b""
        purpose = ""
        for part in msg.walk():
            if part.is_multipart():
                continue
            name = part.get_param("name", header="content-disposition")
            payload = part.get_payload(decode=True)
            assert isinstance(payload, bytes)
            if name == "file":
                content = payload
            elif name == "purpose":
                purpose = payload.decode()
        assert purpose == "batch", purpose
        self.uploads += 1
        file_id = f"file-{len(self.files) + 1}"
        self.files[file_id] = content
        return {
            "id": file_id,
            "object": "file",
            "bytes": len(content),
            "created_at": int(time.time()),
            "filename": "batch.jsonl",
            "purpose": "batch",
            "status": "processed",
        }

    def _create(self, request: dict[str, Any]) -> dict[str, Any]:
        file_id = request["input_file_id"]
        assert request["endpoint"] == "/v1/chat/completions"
        rows = [json.loads(line) for line in self.files[file_id].splitlines() if line.strip()]
        for row in rows:
            self.submitted[row["custom_id"]] += 1
        batch = {
            "id": f"batch_{len(self.batches) + 1}",
            "object": "batch",
            "endpoint": request["endpoint"],
            "errors": None,
            "input_file_id": file_id,
            "completion_window": "24h",
            "status": "validating",
            "output_file_id": None,
            "error_file_id": None,
            "created_at": int(time.time()),
            "request_counts": {"total": len(rows), "completed": 0, "failed": 0},
            "_rows": rows,
            "_expire": len(self.batches) < self.expire,
            "_reject": len(self.batches) < self.reject,
        }
        self.batches[batch["id"]] = batch
        return self._public(batch)

    @staticmethod
    def _public(batch: dict[str, Any]) -> dict[str, Any]:
        return {k: v for k, v in batch.items() if not k.startswith("_")}

    def _poll(self, batch: dict[str, Any]) -> dict[str, Any]:
        self.polls += 1
        status = batch["status"]
        total = batch["request_counts"]["total"]
        if status == "validating" and batch["_reject"]:
            batch["status"] = "failed"
            batch["errors"] = {
                "object": "list",
                "data": [{"code": "invalid_request", "message": "line 1: bad body", "line": 1}],
            }
        elif status == "validating":
            batch["status"] = "in_progress"
        elif status == "in_progress" and (self.hold is None or self.hold.is_set()):
            batch["status"] = "finalizing"
            batch["request_counts"]["completed"] = total // 2
        elif status == "finalizing":
            self._finish(batch)
        return self._public(batch)

    def _finish(self, batch: dict[str, Any]) -> None:
        rows = batch["_rows"]
        out: list[bytes] = []
        errors: list[bytes] = []
        if batch["_expire"]:
            rows, never = rows[: len(rows) // 2], rows[len(rows) // 2 :]
            word = self.expire_as
            for i, row in enumerate(never, len(rows)):
                line = {
                    "id": f"req-{i}",
                    "custom_id": row["custom_id"],
                    "response": None,
                    "error": {"code": f"batch_{word}", "message": f"This request was {word}."},
                }
                errors.append(json.dumps(line).encode())
        first = self._results_made == 0
        self._results_made += 1
        for i, row in enumerate(rows):
            cid, body = row["custom_id"], row["body"]
            if self.fail(cid):
                line = {
                    "id": f"req-{i}",
                    "custom_id": cid,
                    "response": {"status_code": 500, "body": {"error": "server error"}},
                    "error": {"code": "server_error", "message": "server error"},
                }
                errors.append(json.dumps(line).encode())
                continue
            if first and i < self.malformed:
                out.append(b'{"custom_id": "' + cid.encode() + b'", "response": {not json')
                continue
            garbled = first and i < self.malformed + self.garbage  # the lines after those
            text = "banana split" if garbled else self.answer(_prompt(body))
            completion = _completion(body, text, f"b{i}")
            self.billed_prompt_tokens += completion["usage"]["prompt_tokens"]
            if first and i < self.malformed + self.garbage + self.no_choices and not garbled:
                completion["choices"] = []  # billed, and no answer
            else:
                self.batch_requests[_prompt(body)] += 1
            line = {
                "id": f"req-{i}",
                "custom_id": cid,
                "response": {"status_code": 200, "body": completion},
                "error": None,
            }
            out.append(json.dumps(line).encode())
        counts = batch["request_counts"]
        counts["completed"], counts["failed"] = len(out), len(errors)
        batch["status"] = self.expire_as if batch["_expire"] else "completed"
        for kind, lines in (("output_file_id", out), ("error_file_id", errors)):
            if lines:
                file_id = f"file-{len(self.files) + 1}"
                self.files[file_id] = b"\n".join(lines) + b"\n"
                batch[kind] = file_id

    # ------------------------------------------------------------ serving


def _endpoint(path: str, by_suffix: dict[str, str], other: str) -> str:
    """The name `refuse` knows a request's endpoint by: the first suffix `path` ends with."""
    return next((name for end, name in by_suffix.items() if path.endswith(end)), other)
