"""Judging a sweep's verdicts through an OpenAI-compatible Files and Batches API.

A batch request costs about half an online one (`judge.batch_discount`), and a sweep's
verdicts can wait. `judge_in_batches` takes the (question, chunk) pairs every setting of
the space retrieves, and:

1. records, with a stand-in for the judge's client, the requests the judge would send
   for the verdicts not in the verdict cache (the same prompts, sampling and logprobs
   as online; `custom_id` is a hash of the request body, so a rerun names them alike);
2. uploads them as JSONL files (split under `judge.batch_max_requests` and
   `judge.batch_max_bytes`), records each file and then each batch id in the sweep
   folder's `batches.json` (written atomically) BEFORE waiting, so a process killed
   while the provider works resumes the recorded batches and pays nothing twice (a file
   uploaded whose batch id was never recorded is looked up among the provider's batches
   before a batch is created for it);
3. polls every `judge.batch_poll_s` seconds, logging each batch's status and counts;
4. replays the results through the judge itself (its client answering from the result
   file), so each answer is parsed exactly as an online one, and keeps the verdicts in
   the verdict cache. What a finished batch did not answer usably, a result line that is
   not JSON or no chat completion, a request in the error file (a partial failure), an
   answer the judge cannot parse (which it re-asks with its stricter reminder), is asked
   online at once, at the online price: asking the batch again could fail the same way
   and would wait another window. The requests an expired (or cancelled) batch never
   answered are submitted again in a new batch, and only those, up to
   `MAX_SUBMISSIONS` times each; then the trials ask them online. A batch whose input
   the provider rejected (status failed) stops the sweep with its errors, recorded
   first as done (with its status and errors): resuming the sweep submits its requests
   again in a new batch, within the same `MAX_SUBMISSIONS`.

Pointwise judging asks "complete" only of relevant chunks, so the batch goes in two
rounds: relevance first, then "complete" for the chunks the first round judged relevant.
One round with both would pay "complete" for every chunk, most of them not relevant and
never read, about twice the verdicts an online sweep pays; the second round costs wall
time (up to one more completion window), which is what a batch trades for the price.
Both, graded and criteria modes ask one request per pair (one round); listwise is not
batched.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import copy
import hashlib
import json
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from loguru import logger

from harness.config import CriteriaConfig, JudgeConfig
from harness.errors import ConfigError, HarnessError
from harness.judge.chat import ChatJudge
from harness.judge.protocol import PAIRWISE_MODES, Judge
from harness.llm import aio
from harness.llm.client import (
    ChatClient,
    ChatFailed,
    MalformedReply,
    Reply,
    read_completion,
    safe_error,
)
from harness.llm.endpoint import has_judge_endpoint
from harness.stores import VerdictCache, verdict_key
from harness.types import Cost, CriterionVerdict

STATE_FILE = "batches.json"
"""The sweep folder's record of its batches (see `BatchState`)."""
MAX_SUBMISSIONS = 3
"""How often one request is submitted at most (an expired batch's unanswered requests go
again); past that the trials ask it online."""
ENDPOINT = "/v1/chat/completions"
TERMINAL = ("completed", "failed", "expired", "cancelled")


# ------------------------------------------------------------------ what to ask


@dataclass(frozen=True)
class Ask:
    """One judge call as `judge_pairs` would make it: one criterion of a pair, or both
    criteria at once (both, graded, criteria), with the batch requests it needs (an
    ensemble asks two wordings)."""

    question: str
    chunk: str
    criterion: str
    """relevant, complete, or "both"."""
    keys: tuple[str, ...]
    """Its verdict keys: one, or relevant's and complete's for "both"."""
    custom_ids: tuple[str, ...]


def custom_id(body: dict[str, Any]) -> str:
    """The request's name in a batch: a hash of its body, so equal requests share it."""
    return "v-" + hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()[:40]


class _Recorder:
    """A stand-in for the judge's client that records each request instead of sending
    it (and fails it, so the judge goes on to its next request, as an ensemble does)."""

    def __init__(self, client: ChatClient) -> None:
        self.client = client
        self.bodies: list[dict[str, Any]] = []

    def describe(self) -> str:
        return self.client.describe()

    async def achat(self, messages: list[dict[str, str]], **kwargs: Any) -> Reply:
        self.bodies.append(self.client.request_body(messages, **kwargs))
        raise ChatFailed("recorded for a batch", Cost())


_ASKED_ONLINE: contextvars.ContextVar[list[str] | None] = contextvars.ContextVar(
    "batch_asked_online", default=None
)
"""The custom_ids one replayed ask (its task) asked online: its verdict is then not a
batch's (`BatchState.batch_verdicts`)."""


class _Replay:
    """A stand-in for the judge's client that answers from batch results, and asks the
    endpoint online for a request the batch did not answer."""

    def __init__(self, client: ChatClient, answers: dict[str, Reply]) -> None:
        self.client, self.answers = client, answers
        self.online = Cost()
        self.lock = threading.Lock()

    def describe(self) -> str:
        return self.client.describe()

    async def achat(self, messages: list[dict[str, str]], **kwargs: Any) -> Reply:
        cid = custom_id(self.client.request_body(messages, **kwargs))
        if cid in self.answers:
            return self.answers[cid]
        asked = _ASKED_ONLINE.get()
        if asked is not None:
            asked.append(cid)
        try:
            reply = await self.client.achat(messages, **kwargs)
        except ChatFailed as exc:
            with self.lock:
                self.online += exc.cost
            raise
        except asyncio.CancelledError:
            # stopped in flight (another ask hit JudgeUnavailable): it was asked, and
            # may be billed, though its tokens are never known
            with self.lock:
                self.online += Cost(calls=1)
            raise
        with self.lock:
            self.online += reply.cost
        return reply


def _stand_in(judge: ChatJudge, client: Any) -> ChatJudge:
    """The judge (same identity, prompts and parsing) with another client."""
    other = copy.copy(judge)
    other.client = client
    # every recorded request "fails": the recorder's copy never declares the endpoint down
    other._streak = judge._streak.fork(1 << 62 if isinstance(client, _Recorder) else None)
    return other


def _ask_of(judge: ChatJudge, q: str, c: str, criterion: str, criteria: CriteriaConfig) -> Any:
    """The judge's coroutine for one Ask."""
    if criterion == "both":
        return judge.agrade_both(q, c, criteria)
    return judge.agrade(q, c, criterion, getattr(criteria, criterion))


def plan_asks(
    pairs: Sequence[tuple[str, str]],
    judge: ChatJudge,
    criteria: CriteriaConfig,
    cache: VerdictCache,
    round_: int,
) -> tuple[list[Ask], dict[str, dict[str, Any]]]:
    """The asks of batch round `round_` (1: relevance, or both criteria; 2: "complete"
    of the pairs judged relevant) whose verdicts are not cached, and each request body
    by custom_id."""
    identity = judge.identity()
    recorder = _Recorder(judge.client)
    rec = _stand_in(judge, recorder)
    asks: list[Ask] = []
    bodies: dict[str, dict[str, Any]] = {}
    seen: set[tuple[str, str]] = set()

    async def record() -> None:
        for q, c in pairs:
            if (q, c) in seen:
                continue
            seen.add((q, c))
            rel_key = verdict_key(identity, criteria.relevant, q, c)
            comp_key = verdict_key(identity, criteria.complete, q, c)
            rel = cache.get(rel_key)
            keys: tuple[str, ...]
            if judge.mode in PAIRWISE_MODES:
                if round_ != 1 or (rel is not None and (not rel.value or cache.get(comp_key))):
                    continue
                name, keys = "both", (rel_key, comp_key)
            elif round_ == 1:
                if rel is not None:
                    continue
                name, keys = "relevant", (rel_key,)
            else:
                if rel is None or not rel.value or cache.get(comp_key) is not None:
                    continue
                name, keys = "complete", (comp_key,)
            recorder.bodies.clear()
            await _ask_of(rec, q, c, name, criteria)
            cids = []
            for body in recorder.bodies:
                cid = custom_id(body)
                bodies[cid] = body
                cids.append(cid)
            asks.append(Ask(q, c, name, keys, tuple(cids)))

    aio.run(record())
    return asks, bodies


def rounds(mode: str) -> int:
    """Batch rounds a judge mode needs (see the module's docstring)."""
    return 1 if mode in PAIRWISE_MODES else 2


# ------------------------------------------------------------------ the API


@dataclass
class BatchInfo:
    """A batch as the provider reports it."""

    id: str
    status: str
    total: int = 0
    completed: int = 0
    failed: int = 0
    output_file_id: str | None = None
    error_file_id: str | None = None
    input_file_id: str | None = None
    errors: str = ""


class BatchAPI:
    """The Files and Batches endpoints of an OpenAI-compatible base URL (the OpenAI SDK,
    with its retries of 429s, 5xx and dropped connections). What the provider or the
    network does wrong is a `HarnessError` of one line without the key."""

    def __init__(self, client: ChatClient, max_retries: int = 5) -> None:
        """The endpoint and key of the judge's `client` (the key stays inside the SDK)."""
        self.sdk = client.sdk(max_retries)
        # POST /batches carries no idempotency key: the SDK retrying one whose answer
        # was lost (a timeout, a dropped connection, a 5xx after the work) would create
        # and bill a second batch over the same file, so it is asked once
        self.sdk_once = client.sdk(0)
        self.where = client.describe()

    @contextlib.contextmanager
    def _errors(self, doing: str) -> Iterator[None]:
        """The SDK's errors (and its ValueError for a bad id) as one HarnessError line."""
        import openai

        try:
            yield
        except openai.APIStatusError as exc:
            body = exc.body.get("message") if isinstance(exc.body, dict) else None
            said = safe_error(str(body or exc.message))
            raise HarnessError(
                f"batch API: {doing}: {self.where} answered {exc.status_code}: {said}"
            ) from None
        except openai.APIConnectionError as exc:  # timeouts included
            raise HarnessError(
                f"batch API: {doing}: {self.where} did not answer ({type(exc).__name__})"
            ) from None
        except (openai.OpenAIError, ValueError) as exc:
            raise HarnessError(
                f"batch API: {doing}: {type(exc).__name__}: {safe_error(str(exc))}"
            ) from None

    def upload(self, jsonl: bytes) -> str:
        """POST /files with purpose "batch": the file's id."""
        with self._errors(f"uploading a batch file ({len(jsonl)} bytes)"):
            return str(self.sdk.files.create(file=("batch.jsonl", jsonl), purpose="batch").id)

    def create(self, input_file_id: str) -> str:
        """POST /batches over an uploaded file, asked once: the batch's id. When it
        fails, the batch may still have been created (its answer lost), so the
        provider's batches are searched for one over the file before the error stands
        (a resume then creates it: `_BatchRun.wait`)."""
        try:
            with self._errors(f"creating a batch over {input_file_id}"):
                b = self.sdk_once.batches.create(
                    input_file_id=input_file_id, endpoint=ENDPOINT, completion_window="24h"
                )
                return str(b.id)
        except HarnessError as exc:
            try:
                found = self.find(input_file_id)
            except HarnessError:
                raise exc from None
            if found is None:
                raise
            logger.info(
                "batch {}: created over {} though its answer was lost", found, input_file_id
            )
            return found

    def get(self, batch_id: str) -> BatchInfo:
        """GET /batches/{id}."""
        with self._errors(f"looking at batch {batch_id}"):
            return _info(self.sdk.batches.retrieve(batch_id))

    def find(self, input_file_id: str) -> str | None:
        """The id of a batch already created over `input_file_id` (GET /batches), if any."""
        with self._errors(f"looking for a batch over {input_file_id}"):
            for b in self.sdk.batches.list(limit=100):
                if b.input_file_id == input_file_id:
                    return str(b.id)
        return None

    def content(self, file_id: str) -> bytes:
        """GET /files/{id}/content."""
        with self._errors(f"downloading {file_id}"):
            return bytes(self.sdk.files.content(file_id).content)


def _info(b: Any) -> BatchInfo:
    counts = b.request_counts
    errors = getattr(b, "errors", None)
    messages = [e.message or e.code or "" for e in (getattr(errors, "data", None) or [])]
    return BatchInfo(
        id=str(b.id),
        status=str(b.status),
        total=counts.total if counts else 0,
        completed=counts.completed if counts else 0,
        failed=counts.failed if counts else 0,
        output_file_id=b.output_file_id,
        error_file_id=b.error_file_id,
        input_file_id=b.input_file_id,
        errors="; ".join(m for m in messages if m)[:300],
    )


# ------------------------------------------------------------------ the record


@dataclass
class BatchState:
    """`batches.json`: every file uploaded and batch created for the sweep, and what the
    batches paid. Written atomically after each change, before any wait."""

    path: Path
    batches: list[dict[str, Any]] = field(default_factory=list)
    """{input_file_id, id (None until created), round, custom_ids, status, done,
    answered, prompt_tokens, completion_tokens, malformed_lines, failed_requests, and
    errors when the provider reported some}."""
    batch_verdicts: list[str] = field(default_factory=list)
    """Verdict keys kept in the cache from a batch's answer (not those asked online when
    the batch's was unusable), each once (a rerun keeps again what a kill -9 lost from
    the cache before its flush)."""
    online: dict[str, int] = field(default_factory=dict)
    """Requests asked online because the batch did not answer them usably: calls, tokens."""

    @classmethod
    def load(cls, path: Path) -> BatchState:
        """The record in `path`, or an empty one."""
        if not path.is_file():
            return cls(path)
        try:
            data = json.loads(path.read_text())
            # a record written before verdicts were kept duplicate-free may repeat some
            verdicts = list(dict.fromkeys(data["batch_verdicts"]))
            return cls(path, list(data["batches"]), verdicts, data["online"])
        except (ValueError, KeyError, TypeError) as exc:
            raise HarnessError(f"{path}: not a batch record ({exc})") from None

    def save(self) -> None:
        """Replace the file atomically."""
        from harness.log.io import write_json_atomic

        write_json_atomic(
            self.path,
            {
                "batches": self.batches,
                "batch_verdicts": self.batch_verdicts,
                "online": self.online,
            },
        )

    def stats(self, config: JudgeConfig) -> dict[str, Any]:
        """What the batches cost: tokens billed, at the batch price, plus what was asked
        online at the online price."""
        prompt = sum(int(b.get("prompt_tokens", 0)) for b in self.batches)
        completion = sum(int(b.get("completion_tokens", 0)) for b in self.batches)
        batch = Cost(prompt_tokens=prompt, completion_tokens=completion).usd(
            config.price_prompt_per_mtok, config.price_completion_per_mtok
        )
        online = Cost(
            prompt_tokens=self.online.get("prompt_tokens", 0),
            completion_tokens=self.online.get("completion_tokens", 0),
        ).usd(config.price_prompt_per_mtok, config.price_completion_per_mtok)
        usd = (batch or 0.0) * config.batch_discount + (online or 0.0)
        return {
            "batches": len(self.batches),
            "batch_requests": sum(len(b["custom_ids"]) for b in self.batches),
            "batch_verdicts": len(self.batch_verdicts),
            "batch_prompt_tokens": prompt + self.online.get("prompt_tokens", 0),
            "batch_completion_tokens": completion + self.online.get("completion_tokens", 0),
            "batch_online_calls": self.online.get("calls", 0),
            "batch_cost_usd": round(usd, 6),
        }


def state_path(sweep_dir: Path) -> Path:
    """Where a sweep keeps its batch record."""
    return Path(sweep_dir) / STATE_FILE


# ------------------------------------------------------------------ the work


_NO_ENDPOINT = "expected an OpenAI-compatible endpoint (judge.base_url)"
_LISTWISE = "listwise judging is not batched"


def check_batch_config(config: JudgeConfig, where: str) -> None:
    """What the config alone shows a batch sweep cannot use, as a ConfigError: the
    local judge (no endpoint) or listwise judging. Checked before a sweep's folder is
    made; `check_batchable` checks the opened judge."""
    if not has_judge_endpoint(config):
        raise ConfigError(where, "judge.batch", _NO_ENDPOINT)
    if config.mode == "listwise":
        raise ConfigError(where, "judge.batch", _LISTWISE)


def check_batchable(judge: Judge, where: str) -> ChatJudge:
    """The judge as a ChatJudge that can go through a batch API, else a ConfigError."""
    if not isinstance(judge, ChatJudge) or judge.prompt_cache:
        raise ConfigError(where, "judge.batch", _NO_ENDPOINT)
    if judge.mode == "listwise":
        raise ConfigError(where, "judge.batch", _LISTWISE)
    return judge


def judge_in_batches(
    pairs: Sequence[tuple[str, str]],
    judge: ChatJudge,
    config: JudgeConfig,
    cache: VerdictCache,
    sweep_dir: Path,
    *,
    api: BatchAPI | None = None,
    sleep: Callable[[float], None] = time.sleep,
) -> dict[str, Any]:
    """Judge `pairs` through the batch API into `cache` (see the module's docstring);
    the batch stats (`BatchState.stats`)."""
    api = api or BatchAPI(judge.client)
    state = BatchState.load(state_path(sweep_dir))
    run = _BatchRun(pairs, judge, config, cache, state, api, sleep)
    for round_ in range(1, rounds(judge.mode) + 1):
        run.round(round_)
    return state.stats(config)


class _BatchRun:
    """One process's pass over the batch rounds."""

    def __init__(
        self,
        pairs: Sequence[tuple[str, str]],
        judge: ChatJudge,
        config: JudgeConfig,
        cache: VerdictCache,
        state: BatchState,
        api: BatchAPI,
        sleep: Callable[[float], None],
    ) -> None:
        self.pairs, self.judge, self.config, self.cache = pairs, judge, config, cache
        self.state, self.api, self.sleep = state, api, sleep
        self._answers: dict[str, tuple[dict[str, Reply], set[str]]] = {}
        self._tried: set[tuple[str, str, str]] = set()

    def round(self, round_: int) -> None:
        """Submit, wait for and keep one round, until nothing of it is left to ask."""
        while True:
            self.wait()
            asks, bodies = plan_asks(
                self.pairs, self.judge, self.config.criteria, self.cache, round_
            )
            # an ask replayed once and still failing (online too) is left to the trials
            asks = [a for a in asks if (a.question, a.chunk, a.criterion) not in self._tried]
            if not asks:
                return
            settled, answers = self.results()  # downloaded only when something is left
            ready = [a for a in asks if all(c in settled for c in a.custom_ids)]
            self._tried.update((a.question, a.chunk, a.criterion) for a in ready)
            self.replay(ready, answers)
            tries = self.submissions()
            done = set(ready)  # a list's `in` compares dataclasses one by one: quadratic
            todo = [
                a
                for a in asks
                if a not in done and all(tries.get(c, 0) < MAX_SUBMISSIONS for c in a.custom_ids)
            ]
            if not todo:
                if len(ready) < len(asks):
                    logger.warning(
                        "batch: {} requests were submitted {} times without an answer; "
                        "the trials ask them online",
                        len(asks) - len(ready),
                        MAX_SUBMISSIONS,
                    )
                return
            self.submit(todo, bodies, settled, round_)

    # ---------------------------------------------------------- submitting

    def submissions(self) -> dict[str, int]:
        """custom_id -> batches it was submitted in."""
        out: dict[str, int] = {}
        for b in self.state.batches:
            for c in b["custom_ids"]:
                out[c] = out.get(c, 0) + 1
        return out

    def submit(
        self,
        asks: Sequence[Ask],
        bodies: dict[str, dict[str, Any]],
        settled: set[str],
        round_: int,
    ) -> None:
        """Upload the asks' unanswered requests in files under the limits, recording
        each file, then each batch, before the next step."""
        for ids, jsonl in self._files(asks, bodies, settled):
            file_id = self.api.upload(jsonl)
            entry: dict[str, Any] = {
                "input_file_id": file_id,
                "id": None,
                "round": round_,
                "custom_ids": ids,
                "status": "uploaded",
                "done": False,
            }
            self.state.batches.append(entry)
            self.state.save()
            self._create(entry)
        logger.info(
            "batch round {}: {} requests submitted",
            round_,
            sum(len(b["custom_ids"]) for b in self.state.batches if not b["done"]),
        )

    def _create(self, entry: dict[str, Any]) -> None:
        entry["id"] = self.api.create(entry["input_file_id"])
        entry["status"] = "validating"
        self.state.save()

    def _files(
        self, asks: Sequence[Ask], bodies: dict[str, dict[str, Any]], settled: set[str]
    ) -> Iterator[tuple[list[str], bytes]]:
        """(custom_ids, JSONL) per file; an ask's requests stay in one file."""
        ids: list[str] = []
        lines: list[bytes] = []
        size = 0
        seen: set[str] = set()
        for ask in asks:
            new = [c for c in ask.custom_ids if c not in settled and c not in seen]
            rows = [
                json.dumps(
                    {"custom_id": c, "method": "POST", "url": ENDPOINT, "body": bodies[c]}
                ).encode()
                + b"\n"
                for c in new
            ]
            grow = sum(len(r) for r in rows)
            if ids and (
                len(ids) + len(new) > self.config.batch_max_requests
                or size + grow > self.config.batch_max_bytes
            ):
                yield ids, b"".join(lines)
                ids, lines, size = [], [], 0
            ids += new
            lines += rows
            size += grow
            seen.update(new)
        if ids:
            yield ids, b"".join(lines)

    # ---------------------------------------------------------- waiting

    def wait(self) -> None:
        """Poll every batch not yet kept until it ends, logging its progress; a file
        whose batch id was never recorded (a kill between the two) gets its batch."""
        for entry in self.state.batches:
            if entry["id"] is None:
                found = self.api.find(entry["input_file_id"])
                if found is not None:
                    entry["id"], entry["status"] = found, "validating"
                    self.state.save()
                else:
                    self._create(entry)
        pending = [b for b in self.state.batches if not b["done"]]
        while pending:
            for entry in list(pending):
                info = self.api.get(entry["id"])
                logger.info(
                    "batch {}: {}, {}/{} done, {} failed",
                    info.id,
                    info.status,
                    info.completed,
                    info.total,
                    info.failed,
                )
                if info.status == "failed":
                    # kept as done first: a resume submits its requests in a new batch
                    # instead of polling this one again and stopping again
                    self._keep(entry, info)
                    raise HarnessError(
                        f"batch {info.id}: the provider rejected it"
                        + (f" ({info.errors})" if info.errors else "")
                        + f"; {len(entry['custom_ids'])} requests are recorded in "
                        f"{self.state.path}: resuming the sweep submits them again in a "
                        "new batch"
                    )
                if info.status in TERMINAL:
                    self._keep(entry, info)
                    pending.remove(entry)
            if pending:
                self.sleep(self.config.batch_poll_s)

    def _keep(self, entry: dict[str, Any], info: BatchInfo) -> None:
        """Read a finished batch's files, book what it billed and mark it done."""
        entry.update(output_file_id=info.output_file_id, error_file_id=info.error_file_id)
        answers, settled, bad, billed = self._read(entry, info.status)
        entry.update(
            status=info.status,
            done=True,
            answered=len(answers),
            failed_requests=len(settled) - len(answers),
            malformed_lines=bad,
            prompt_tokens=billed.prompt_tokens,
            completion_tokens=billed.completion_tokens,
        )
        if info.errors:
            entry["errors"] = info.errors
        self.state.save()
        if bad:
            logger.warning("batch {}: {} result lines unreadable; asked online", info.id, bad)

    def _read(
        self, entry: dict[str, Any], status: str
    ) -> tuple[dict[str, Reply], set[str], int, Cost]:
        """(answers by custom_id, the custom_ids settled, unreadable lines, tokens billed)
        of a finished batch. Settled: answered, failed in the error file, or anything of
        a completed batch (a request of it without a readable line is asked online); an
        expired or cancelled batch's unanswered requests are not settled, whether its
        error file lists them (OpenAI writes each with `"response": null` and the code
        batch_expired or batch_cancelled) or not."""
        answers: dict[str, Reply] = {}
        failed: set[str] = set()
        bad = 0
        billed = Cost()
        mine = set(entry["custom_ids"])
        for key in ("output_file_id", "error_file_id"):
            file_id = entry.get(key)
            if not file_id:
                continue
            for line in self.api.content(file_id).splitlines():
                if not line.strip():
                    continue
                got = _result_line(line)
                if got is None or got[0] not in mine:
                    bad += 1
                    continue
                cid, reply, cost = got
                billed += cost
                if isinstance(reply, Reply):
                    answers[cid] = reply
                elif reply == FAILED:
                    failed.add(cid)
                # NEVER_RAN: the batch ended before it; submitted again, not asked online
        settled = mine if status == "completed" else set(answers) | failed
        self._answers[entry["id"]] = (answers, settled)
        return answers, settled, bad, billed

    def results(self) -> tuple[set[str], dict[str, Reply]]:
        """The custom_ids settled and the answers of every finished batch (read again
        from the provider after a restart)."""
        settled: set[str] = set()
        answers: dict[str, Reply] = {}
        for entry in self.state.batches:
            if entry["id"] not in self._answers:
                self._read(entry, entry["status"])
            a, s = self._answers[entry["id"]]
            answers.update(a)
            settled |= s
        return settled, answers

    # ---------------------------------------------------------- keeping

    def replay(self, asks: Sequence[Ask], answers: dict[str, Reply]) -> None:
        """Each ask through the judge answering from the batch (online for what the
        batch did not answer usably); successful verdicts go to the cache."""
        if not asks:
            return
        replay = _Replay(self.judge.client, answers)
        judge = _stand_in(self.judge, replay)
        kept: list[str] = []

        async def one(ask: Ask) -> None:
            asked: list[str] = []
            _ASKED_ONLINE.set(asked)  # this task's own: tasks copy the context
            got = await _ask_of(judge, ask.question, ask.chunk, ask.criterion, self.config.criteria)
            verdicts: Sequence[CriterionVerdict] = got if ask.criterion == "both" else (got,)
            for key, verdict in zip(ask.keys, verdicts, strict=True):
                self.cache.put(key, verdict)
                if verdict.error is None and not asked:  # a verdict the batch answered
                    kept.append(key)

        async def every() -> None:
            sem = asyncio.Semaphore(max(1, self.judge.concurrency))

            failed = False

            async def bounded(ask: Ask) -> None:
                nonlocal failed
                async with sem:
                    if failed:  # woken by the failed ask's permit before it is cancelled
                        return
                    try:
                        await one(ask)
                    except Exception:
                        failed = True
                        raise

            tasks = [asyncio.ensure_future(bounded(a)) for a in asks]
            try:
                await asyncio.gather(*tasks)
            finally:
                # gather leaves the others running after the first error (the endpoint
                # unavailable): they would go on asking, and paying, after the record is
                # saved; cancelled, and waited for, so what they paid is booked first
                for task in tasks:
                    task.cancel()
                await asyncio.gather(*tasks, return_exceptions=True)

        try:
            aio.run(every())
        finally:
            try:
                self.cache.flush()  # the verdicts on disk before the record says so
            finally:
                online = replay.online
                for name, value in (
                    ("calls", online.calls),
                    ("prompt_tokens", online.prompt_tokens),
                    ("completion_tokens", online.completion_tokens),
                ):
                    self.state.online[name] = self.state.online.get(name, 0) + value
                have = set(self.state.batch_verdicts)
                self.state.batch_verdicts += [k for k in dict.fromkeys(kept) if k not in have]
                self.state.save()
        if online.calls:
            logger.info("batch: {} requests asked online (no usable batch answer)", online.calls)


FAILED = "failed"
"""`_result_line`: the provider ran the request and it failed (asked online)."""
NEVER_RAN = "never ran"
"""`_result_line`: the batch expired or was cancelled before it ran the request
(submitted again)."""
UNRUN_CODES = ("batch_expired", "batch_cancelled")
"""The error codes of a request its batch ended without running."""


def _result_line(line: bytes) -> tuple[str, Reply | str, Cost] | None:
    """(custom_id, the answer, or FAILED or NEVER_RAN, tokens billed) of one line of a
    result or error file; None for a line that cannot be read."""
    try:
        row = json.loads(line)
        cid = row["custom_id"]
    except (ValueError, KeyError, TypeError):
        return None
    if not isinstance(cid, str):
        return None
    error = row.get("error")
    if isinstance(error, dict) and error.get("code") in UNRUN_CODES:
        return cid, NEVER_RAN, Cost()
    response = row.get("response")
    if not isinstance(response, dict) or response.get("status_code") != 200:
        return cid, FAILED, Cost()
    try:
        text, tokens, prompt, completion = read_completion(response.get("body"))
    except MalformedReply as exc:  # billed all the same: its tokens are booked
        return (
            cid,
            FAILED,
            Cost(prompt_tokens=exc.prompt_tokens, completion_tokens=exc.completion_tokens),
        )
    cost = Cost(calls=1, prompt_tokens=prompt, completion_tokens=completion)
    return cid, Reply(text=text, tokens=tokens, cost=cost), cost
