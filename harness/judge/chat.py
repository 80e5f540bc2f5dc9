"""The judge behind any OpenAI-compatible chat endpoint (OpenAI, vLLM, Ollama, llama.cpp).

Each criterion is one call answered "yes" or "no" (optionally with a one-sentence
reason); when the endpoint returns logprobs, P(yes) is kept as the judge's confidence.
Transport (retries, budgets, logprobs, tokens) is `harness.llm.ChatClient`'s; this
module owns what is the judge's own: prompts, parsing, a re-ask after malformed output,
and declaring the endpoint down after too many failures in a row.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar

from harness.config import CriteriaConfig
from harness.errors import JudgeUnavailable
from harness.judge.parsing import (
    MalformedOutput,
    first_token_alternatives,
    grade_distribution,
    p_none,
    p_yes_per_answer,
    parse_answer,
    parse_both,
    parse_extract,
    parse_grade,
    parse_list,
    split_sentences,
)
from harness.judge.prompts import (
    GRAMMAR_BOTH,
    GRAMMAR_GRADE,
    GRAMMAR_REASON,
    GRAMMAR_SHORT,
    NONE_ANSWER,
    PROMPT_VERSION,
    STRICT_REMINDER,
    build_messages,
    build_messages_both,
    build_messages_extract,
    build_messages_graded,
    build_messages_list,
    grammar_extract,
    grammar_list,
)
from harness.judge.protocol import BaseJudge
from harness.llm.client import ChatClient, ChatFailed, Reply
from harness.llm.ratelimit import RateLimiter
from harness.secrets import redact_url
from harness.types import ComponentSpec, CriterionVerdict

T = TypeVar("T")


@dataclass(frozen=True)
class _Chat:
    """One request a grading step asks for (sent by `_drive` or `_adrive`)."""

    messages: list[dict[str, str]]
    grammar: str | None
    max_tokens: int
    top_logprobs: int


@dataclass(frozen=True)
class _Asked:
    """A parsed answer (or the error that replaced it), with what it cost."""

    parsed: Any
    p_yes: list[float | None]
    raws: list[str]
    cost: dict[str, Any]
    error: str | None
    tokens: list[tuple[str, list[tuple[str, float]]]] = field(default_factory=list)
    """The answer's tokens with their alternatives (graded and extractive modes read them)."""

    @property
    def raw(self) -> str:
        return "\n---\n".join(self.raws)

    def p(self, i: int) -> float | None:
        return self.p_yes[i] if i < len(self.p_yes) else None


class ChatJudge(BaseJudge):
    """A judge behind any OpenAI-compatible chat endpoint.

    The API key is handed to the client and held only there; it is never part of
    `spec`, `identity()`, a log line or an error message.
    """

    def __init__(
        self,
        *,
        base_url: str,
        model: str,
        api_key: str,
        reasons: bool = False,
        temperature: float = 0.0,
        timeout_s: float = 120.0,
        max_retries: int = 3,
        logprobs: bool = True,
        grammar: bool = False,
        mode: str = "pointwise",
        variant: str = "main",
        concurrency: int = 1,
        relevant_grade: int = 1,
        complete_grade: int = 2,
        spec_extra: dict[str, Any] | None = None,
        max_consecutive_failures: int = 8,
        limiter: RateLimiter | None = None,
        retry_base_s: float = 0.5,
        retry_cap_s: float = 30.0,
        max_retry_after_s: float = 300.0,
        prompt_cache: bool = False,
    ) -> None:
        """`prompt_cache`: the server keeps a prompt cache across requests (the local
        llama.cpp server), so `judge_pairs` judges the pairs sharing a chunk back to back."""
        self.prompt_cache = prompt_cache
        self.client = ChatClient(
            base_url=base_url,
            model=model,
            api_key=api_key,
            temperature=temperature,
            timeout_s=timeout_s,
            max_retries=max_retries,
            logprobs=logprobs,
            limiter=limiter,
            retry_base_s=retry_base_s,
            retry_cap_s=retry_cap_s,
            max_retry_after_s=max_retry_after_s,
        )
        self.base_url = base_url
        self.model = model
        self.reasons = reasons
        self.temperature = temperature
        self.max_tokens = 60 if reasons else 2
        # llama.cpp servers accept a GBNF grammar that makes a malformed answer impossible;
        # other endpoints may reject the unknown field, so it is opt-in.
        self.use_grammar = grammar
        self.grammar = (GRAMMAR_REASON if reasons else GRAMMAR_SHORT) if grammar else None
        self.mode = mode
        self.variant = variant
        self.concurrency = concurrency
        self.grade_cuts = (relevant_grade, complete_grade)
        self._failures = 0
        self._max_failures = max_consecutive_failures
        self._fail_lock = threading.Lock()
        self.spec = ComponentSpec(
            name="openai-chat",
            args={
                "base_url": redact_url(base_url),  # the spec is logged: no password in it
                "model": model,
                "prompt_version": PROMPT_VERSION,
                "reasons": reasons,
                "temperature": temperature,
                "max_tokens": self.max_tokens,
                "grammar": self.grammar,
                "mode": mode,
                "prompt_variant": variant,
                **({"grade_cuts": list(self.grade_cuts)} if mode == "graded" else {}),
                **(spec_extra or {}),
            },
        )

    def identity(self) -> str:
        """Model (and its file hash), prompt version, sampling settings and mode, as sorted JSON.

        The main prompt variant is left out so verdicts cached before variants existed stay valid.
        """
        return json.dumps(
            {
                "model": self.model,
                "model_sha256": self.spec.args.get("model_sha256"),
                "prompt_version": PROMPT_VERSION,
                "reasons": self.reasons,
                "temperature": self.temperature,
                "max_tokens": self.max_tokens,
                "grammar": self.grammar,
                "mode": self.mode,
                # the cut-offs decide a graded verdict's value and p_yes, which are cached
                **({"grade_cuts": list(self.grade_cuts)} if self.mode == "graded" else {}),
                # "main" is left out so verdicts paid before variants existed stay valid
                **({"variant": self.variant} if self.variant != "main" else {}),
            },
            sort_keys=True,
        )

    def with_options(self, *, mode: str | None = None, variant: str | None = None) -> ChatJudge:
        """The same endpoint, model and key with another mode or prompt variant."""
        other = super().with_options(mode=mode, variant=variant)
        assert isinstance(other, ChatJudge)
        other._fail_lock = threading.Lock()
        return other

    def _drive(self, steps: Generator[_Chat, Reply, T]) -> T:
        """Run grading steps with the synchronous client."""
        sent: Reply | None = None
        thrown: ChatFailed | None = None
        while True:
            try:
                ask = steps.throw(thrown) if thrown else steps.send(sent)  # type: ignore[arg-type]
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
            sent, thrown = None, None
            try:
                sent = self.client.chat(
                    ask.messages,
                    grammar=ask.grammar,
                    max_tokens=ask.max_tokens,
                    top_logprobs=ask.top_logprobs,
                )
            except ChatFailed as exc:
                thrown = exc

    async def _adrive(self, steps: Generator[_Chat, Reply, T]) -> T:
        """Run grading steps with the asynchronous client (`ChatClient.achat`)."""
        sent: Reply | None = None
        thrown: ChatFailed | None = None
        while True:
            try:
                ask = steps.throw(thrown) if thrown else steps.send(sent)  # type: ignore[arg-type]
            except StopIteration as done:
                return done.value  # type: ignore[no-any-return]
            sent, thrown = None, None
            try:
                sent = await self.client.achat(
                    ask.messages,
                    grammar=ask.grammar,
                    max_tokens=ask.max_tokens,
                    top_logprobs=ask.top_logprobs,
                )
            except ChatFailed as exc:
                thrown = exc

    def _ask(
        self,
        messages: list[dict[str, str]],
        parse: Callable[[str], Any],
        *,
        grammar: str | None,
        max_tokens: int,
        reminder: str = STRICT_REMINDER,
        top_logprobs: int = 5,
    ) -> Generator[_Chat, Reply, _Asked]:
        """Steps to one answer, parsed (each request is yielded as a `_Chat` for `_drive`
        or `_adrive` to send); a malformed answer is re-asked once with a stricter
        instruction (`reminder`). Endpoint failures come back as an error (and count toward the
        consecutive-failure limit, past which the judge is declared down). Every HTTP
        request is booked in the cost, failed ones included."""
        raws: list[str] = []
        cost: dict[str, Any] = {
            "calls": 0,
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "latency_s": 0.0,
            "retries": 0,
            "failed_attempts": 0,
        }
        for attempt in range(2):
            try:
                reply = yield _Chat(messages, grammar, max_tokens, top_logprobs)
            except ChatFailed as exc:
                # the client already retried what is worth retrying (a malformed 200 too).
                error = exc.error
                for name in (
                    "calls",
                    "prompt_tokens",
                    "completion_tokens",
                    "retries",
                    "failed_attempts",
                ):
                    cost[name] += getattr(exc.cost, name)
                with self._fail_lock:
                    self._failures += 1
                    failures = self._failures
                if failures >= self._max_failures:
                    raise JudgeUnavailable(
                        f"{self.client.describe()} failed {failures} verdicts in a row; "
                        f"last error: {error}"
                    ) from None
                return _Asked(None, [], raws, cost, error)
            with self._fail_lock:
                self._failures = 0  # the endpoint answered; what it said is another matter
            for name in (
                "calls",
                "prompt_tokens",
                "completion_tokens",
                "latency_s",
                "retries",
                "failed_attempts",
            ):
                cost[name] += getattr(reply, name)
            raws.append(reply.text)
            try:
                parsed = parse(reply.text)
            except MalformedOutput as exc:
                if attempt == 0:
                    messages = [
                        *messages,
                        {"role": "assistant", "content": reply.text},
                        {"role": "user", "content": reminder},
                    ]
                    continue
                return _Asked(None, [], raws, cost, str(exc))
            return _Asked(parsed, p_yes_per_answer(reply.tokens), raws, cost, None, reply.tokens)
        raise AssertionError("unreachable")

    def grade(
        self, question: str, chunk_text: str, criterion: str, criterion_text: str
    ) -> CriterionVerdict:
        """One criterion: one yes/no call (re-asked once if malformed); in extractive mode
        "complete" asks for the answering sentence; in ensemble mode the main and the
        reworded prompt are both asked and their P(yes) averaged."""
        return self._drive(self._grade(question, chunk_text, criterion, criterion_text))

    async def agrade(
        self, question: str, chunk_text: str, criterion: str, criterion_text: str
    ) -> CriterionVerdict:
        """`grade` on the shared event loop (what `judge_pairs` uses)."""
        return await self._adrive(self._grade(question, chunk_text, criterion, criterion_text))

    def _grade(
        self, question: str, chunk_text: str, criterion: str, criterion_text: str
    ) -> Generator[_Chat, Reply, CriterionVerdict]:
        if self.mode == "extractive" and criterion == "complete":
            return (yield from self._grade_extractive(question, chunk_text))
        if self.mode == "ensemble":
            parts = []
            for v in ("main", "reworded"):
                verdict = yield from self._grade_yes_no(
                    question, chunk_text, criterion, criterion_text, v
                )
                parts.append(verdict)
            return self._ensemble(parts)
        return (
            yield from self._grade_yes_no(
                question, chunk_text, criterion, criterion_text, self.variant
            )
        )

    def _grade_yes_no(
        self, question: str, chunk_text: str, criterion: str, criterion_text: str, variant: str
    ) -> Generator[_Chat, Reply, CriterionVerdict]:
        a = yield from self._ask(
            build_messages(
                question, chunk_text, criterion_text, reasons=self.reasons, variant=variant
            ),
            parse_answer,
            grammar=self.grammar,
            max_tokens=self.max_tokens,
        )
        if a.error:
            return CriterionVerdict(
                criterion=criterion, value=None, raw=a.raw, error=a.error, **a.cost
            )
        value, reason = a.parsed
        return CriterionVerdict(
            criterion=criterion, value=value, p_yes=a.p(0), reason=reason, raw=a.raw, **a.cost
        )

    @staticmethod
    def _ensemble(parts: Sequence[CriterionVerdict]) -> CriterionVerdict:
        """One verdict from several wordings: P(yes) is the mean of their P(yes), the
        verdict P >= 0.5 (without probabilities, the first wording's answer); a wording
        that failed is left out, and the verdict fails only if all did. Costs add up."""
        ok = [v for v in parts if v.error is None]
        cost = {
            name: sum(getattr(v, name) for v in parts)
            for name in ("calls", "prompt_tokens", "completion_tokens", "latency_s", "retries")
        }
        raw = " | ".join(f"{w}: {v.raw}" for w, v in zip(("main", "reworded"), parts, strict=False))
        first = parts[0]
        if not ok:
            return CriterionVerdict(first.criterion, None, raw=raw, error=first.error, **cost)
        ps = [v.p_yes for v in ok if v.p_yes is not None]
        p = sum(ps) / len(ps) if len(ps) == len(ok) else None
        value = p >= 0.5 if p is not None else bool(ok[0].value)
        reason = "; ".join(v.reason for v in ok if v.reason)
        return CriterionVerdict(first.criterion, value, p_yes=p, reason=reason, raw=raw, **cost)

    def _grade_extractive(
        self, question: str, chunk_text: str
    ) -> Generator[_Chat, Reply, CriterionVerdict]:
        """The "complete" criterion as evidence: the judge copies the sentence that answers, or says
        NONE; a copy not found in the passage counts as NONE. With a grammar (llama.cpp)
        the answer can only be NONE or one of the passage's sentences, and P(complete) is
        1 - P(NONE) from the first token's logprobs."""
        sentences = split_sentences(chunk_text)
        use_grammar = self.use_grammar and sentences
        longest = max((len(s) for s in sentences), default=0)
        a = yield from self._ask(
            build_messages_extract(question, chunk_text),
            lambda raw: parse_extract(raw, chunk_text),
            grammar=grammar_extract(sentences) if use_grammar else None,
            # a sentence copied whole: about 4 characters a token, with room to spare
            max_tokens=min(512, longest // 3 + 16),
            reminder=f"Answer with one sentence copied from the passage, or {NONE_ANSWER}.",
            top_logprobs=10,
        )
        if a.error:
            return CriterionVerdict("complete", None, raw=a.raw, error=a.error, **a.cost)
        answered, copy = a.parsed
        p_no = p_none(first_token_alternatives(a.tokens), sentences)
        reason = (
            "the judge copied a sentence that answers"
            if answered
            else "the judge's copy is not in the passage"
            if copy
            else "the judge found no sentence that answers"
        )
        return CriterionVerdict(
            "complete",
            answered,
            p_yes=None if p_no is None else 1.0 - p_no,
            evidence=copy if answered else None,
            reason=reason,
            raw=a.raw,
            **a.cost,
        )

    def grade_both(
        self, question: str, chunk_text: str, criteria: CriteriaConfig
    ) -> tuple[CriterionVerdict, CriterionVerdict]:
        """Both criteria in one call ("both": two yes/no lines; "graded": a 0-3 grade).
        The call's cost is booked on the relevant verdict."""
        return self._drive(self._grade_both(question, chunk_text, criteria))

    async def agrade_both(
        self, question: str, chunk_text: str, criteria: CriteriaConfig
    ) -> tuple[CriterionVerdict, CriterionVerdict]:
        """`grade_both` on the shared event loop."""
        return await self._adrive(self._grade_both(question, chunk_text, criteria))

    def _grade_both(
        self, question: str, chunk_text: str, criteria: CriteriaConfig
    ) -> Generator[_Chat, Reply, tuple[CriterionVerdict, CriterionVerdict]]:
        if self.mode == "graded":
            return (yield from self._grade_graded(question, chunk_text, criteria))
        a = yield from self._ask(
            build_messages_both(question, chunk_text, criteria),
            parse_both,
            grammar=GRAMMAR_BOTH if self.use_grammar else None,
            max_tokens=12,
        )
        if a.error:
            return (
                CriterionVerdict("relevant", None, raw=a.raw, error=a.error, **a.cost),
                CriterionVerdict("complete", None, raw=a.raw, error=a.error),
            )
        rel, comp = a.parsed
        return (
            CriterionVerdict("relevant", rel, p_yes=a.p(0), raw=a.raw, **a.cost),
            CriterionVerdict("complete", comp, p_yes=a.p(1), raw=a.raw),
        )

    def _grade_graded(
        self, question: str, chunk_text: str, criteria: CriteriaConfig
    ) -> Generator[_Chat, Reply, tuple[CriterionVerdict, CriterionVerdict]]:
        """A 0-3 grade; with logprobs, P(grade >= cut-off) per criterion from the grade
        distribution (the verdict is that P >= 0.5), else the answered grade decides."""
        a = yield from self._ask(
            build_messages_graded(question, chunk_text, criteria),
            parse_grade,
            grammar=GRAMMAR_GRADE if self.use_grammar else None,
            max_tokens=1 if self.use_grammar else 4,
            reminder="Answer with the grade alone: one digit, 0, 1, 2 or 3.",
            top_logprobs=10,  # all four digits, even where other tokens rank above some
        )
        if a.error:
            return (
                CriterionVerdict("relevant", None, raw=a.raw, error=a.error, **a.cost),
                CriterionVerdict("complete", None, raw=a.raw, error=a.error),
            )
        grade: int = a.parsed
        dist = grade_distribution(first_token_alternatives(a.tokens))
        out = []
        for name, cut in zip(("relevant", "complete"), self.grade_cuts, strict=True):
            p = sum(dist[cut:]) if dist is not None else None
            out.append(
                CriterionVerdict(
                    name,
                    p >= 0.5 if p is not None else grade >= cut,
                    p_yes=p,
                    distribution=tuple(dist) if dist is not None else None,
                    reason=f"grade {grade}",
                    raw=a.raw,
                    **(a.cost if name == "relevant" else {}),
                )
            )
        return out[0], out[1]

    def grade_list(
        self, question: str, chunk_texts: Sequence[str], criteria: CriteriaConfig
    ) -> list[tuple[CriterionVerdict, CriterionVerdict]]:
        """Every passage of a question in one call (listwise). The call's cost is booked on
        the first passage's relevant verdict."""
        return self._drive(self._grade_list(question, chunk_texts, criteria))

    async def agrade_list(
        self, question: str, chunk_texts: Sequence[str], criteria: CriteriaConfig
    ) -> list[tuple[CriterionVerdict, CriterionVerdict]]:
        """`grade_list` on the shared event loop."""
        return await self._adrive(self._grade_list(question, chunk_texts, criteria))

    def _grade_list(
        self, question: str, chunk_texts: Sequence[str], criteria: CriteriaConfig
    ) -> Generator[_Chat, Reply, list[tuple[CriterionVerdict, CriterionVerdict]]]:
        n = len(chunk_texts)
        a = yield from self._ask(
            build_messages_list(question, chunk_texts, criteria),
            lambda raw: parse_list(raw, n),
            grammar=grammar_list(n) if self.use_grammar else None,
            max_tokens=14 * n + 8,
        )
        out: list[tuple[CriterionVerdict, CriterionVerdict]] = []
        for i in range(n):
            cost = a.cost if i == 0 else {}
            if a.error:
                out.append((
                    CriterionVerdict("relevant", None, raw=a.raw, error=a.error, **cost),
                    CriterionVerdict("complete", None, raw=a.raw, error=a.error),
                ))  # fmt: skip
                continue
            rel, comp = a.parsed[i]
            out.append((
                CriterionVerdict("relevant", rel, p_yes=a.p(2 * i), raw=a.raw, **cost),
                CriterionVerdict("complete", comp, p_yes=a.p(2 * i + 1), raw=a.raw),
            ))  # fmt: skip
        return out


OpenAIJudge = ChatJudge
"""The name this judge had before the llm client moved out of it."""
