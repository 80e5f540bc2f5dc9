"""The judge behind any OpenAI-compatible chat endpoint (OpenAI, vLLM, Ollama, llama.cpp).

Each criterion is one call answered "yes" or "no" (optionally with a one-sentence
reason); when the endpoint returns logprobs, P(yes) is kept as the judge's confidence.
Transport (retries, budgets, logprobs, tokens, reply caps) is `harness.llm.ChatClient`'s;
this module owns what is the judge's own: prompts, parsing, a re-ask after malformed
output, and declaring the endpoint down after too many failures in a row. Grading is
asynchronous (`agrade`, `agrade_both`, `agrade_list`); `BaseJudge` gives the blocking
methods.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from harness.config import CriteriaConfig
from harness.errors import JudgeUnavailable
from harness.judge.criteria import grade_criteria
from harness.judge.fewshot import FewShotExample, few_shot_settings, with_examples
from harness.judge.markdown import strip_markdown
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
    parse_short_answer,
    split_sentences,
)
from harness.judge.prompts import (
    GRAMMAR_BOTH,
    GRAMMAR_GRADE,
    GRAMMAR_REASON,
    GRAMMAR_SHORT,
    NONE_ANSWER,
    STRICT_REMINDER,
    build_messages,
    build_messages_both,
    build_messages_extract,
    build_messages_graded,
    build_messages_list,
    extract_max_tokens,
    grammar_extract,
    grammar_list,
    prompt_version,
)
from harness.judge.protocol import BaseJudge, Pair
from harness.llm.client import (
    MAX_CONSECUTIVE_FAILURES,
    MAX_REPLY_BYTES,
    ChatClient,
    ChatFailed,
    FailureStreak,
)
from harness.llm.ratelimit import RateLimiter
from harness.secrets import redact_url
from harness.types import ComponentSpec, Cost, CriterionVerdict

RAW_KEPT_CHARS = 4000
"""The most of an answer's text a verdict keeps in `raw` (the log and the verdict cache);
a longer one is cut there, the cut said at its end."""


def kept_raw(text: str, limit: int = RAW_KEPT_CHARS) -> str:
    """`text` as a verdict keeps it: whole up to `limit` characters, else cut there with
    the number of characters left out said at the end."""
    if len(text) <= limit:
        return text
    return f"{text[:limit]}[... {len(text) - limit} more characters not kept]"


@dataclass(frozen=True)
class _Asked:
    """A parsed answer (or the error that replaced it), with what it cost."""

    parsed: Any
    p_yes: list[float | None]
    raws: list[str]
    cost: Cost
    error: str | None
    tokens: list[tuple[str, list[tuple[str, float]]]] = field(default_factory=list)
    """The answer's tokens with their alternatives (graded and extractive modes read them)."""

    @property
    def raw(self) -> str:
        return kept_raw("\n---\n".join(self.raws))

    @property
    def costs(self) -> dict[str, Any]:
        """The cost as a verdict's keyword arguments."""
        return self.cost.to_dict()

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
        base_url: str | Callable[[], str],
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
        max_consecutive_failures: int = MAX_CONSECUTIVE_FAILURES,
        limiter: RateLimiter | None = None,
        retry_base_s: float = 0.5,
        retry_cap_s: float = 30.0,
        max_retry_after_s: float = 300.0,
        prompt_cache: bool = False,
        max_reply_bytes: int = MAX_REPLY_BYTES,
        slots: int = 0,
        few_shot: Sequence[FewShotExample] = (),
    ) -> None:
        """`prompt_cache`: the server keeps a prompt cache across requests (the local
        llama.cpp server), so `judge_pairs` judges the pairs sharing a chunk back to back,
        and with `slots` (the server's slot count) each worker on a slot of its own.
        `timeout_s` is each request's deadline as a whole; `max_reply_bytes` caps a
        reply's body (see `ChatClient`). `few_shot`: worked examples shown in the system
        message of the modes that take them (`harness.judge.fewshot`)."""
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
            max_reply_bytes=max_reply_bytes,
            slots=slots,
        )
        self.model, self.reasons = model, reasons
        self.temperature = temperature
        self.max_tokens = 60 if reasons else 2
        # llama.cpp servers accept a GBNF grammar that makes a malformed answer impossible;
        # other endpoints may reject the unknown field, so it is opt-in.
        self.use_grammar = grammar
        self.grammar = (GRAMMAR_REASON if reasons else GRAMMAR_SHORT) if grammar else None
        self.answer_tokens = 1 if self.grammar == GRAMMAR_SHORT else self.max_tokens
        """The tokens a yes/no call asks for. Under the short grammar the answer is one
        token (each casing of yes and no is one token for the packaged model), so the
        second is always the end; asking for it cost the local server a decode pass of
        about 50 ms a call. The answer is the same, so `max_tokens` in the identity (and
        the verdict cache) is unchanged."""
        self.mode, self.variant, self.concurrency = mode, variant, concurrency
        self.prompt_cache = prompt_cache
        self.grade_cuts = (relevant_grade, complete_grade)
        self.few_shot = tuple(few_shot)
        self._streak = FailureStreak(max_consecutive_failures)
        self.spec = ComponentSpec(
            name="openai-chat",
            args={
                # the spec is logged: no password in it
                "base_url": redact_url(self.client.base_url),
                **self._answer_settings(),
                "prompt_variant": variant,
                **self._graded_settings(),
                **(spec_extra or {}),
            },
        )

    def _answer_settings(self) -> dict[str, Any]:
        """What shapes an answer besides the inputs, as both `spec` and `identity` say it."""
        return {
            "model": self.model,
            "prompt_version": prompt_version(self.mode),
            "reasons": self.reasons,
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
            "grammar": self.grammar,
            "mode": self.mode,
            **few_shot_settings(self.few_shot, self.mode),
        }

    def _graded_settings(self) -> dict[str, Any]:
        # the cut-offs decide a graded verdict's value and p_yes, which are cached
        graded = self.mode in ("graded", "criteria")
        return {"grade_cuts": list(self.grade_cuts)} if graded else {}

    def identity(self) -> str:
        """Model (and its file hash), prompt version, sampling settings and mode, as sorted JSON.

        The main prompt variant is left out so verdicts cached before variants existed stay valid.
        """
        return json.dumps(
            {
                **self._answer_settings(),
                "model_sha256": self.spec.args.get("model_sha256"),
                **self._graded_settings(),
                **({"variant": self.variant} if self.variant != "main" else {}),
            },
            sort_keys=True,
        )

    def with_options(self, *, mode: str | None = None, variant: str | None = None) -> ChatJudge:
        """The same endpoint, model and key with another mode or prompt variant."""
        other = super().with_options(mode=mode, variant=variant)
        assert isinstance(other, ChatJudge)
        other._streak = self._streak.fork()
        return other

    def warm(self, calls: int) -> None:
        """See `Judge.warm`: the endpoint's connections start opening."""
        self.client.warm(calls)

    def _count_failure(self, error: str) -> None:
        """One more verdict failed in a row; past the limit the endpoint is declared down."""
        failures = self._streak.failed()
        if failures >= self._streak.limit:
            raise JudgeUnavailable(
                f"{self.client.describe()} failed {failures} verdicts in a row; last error: {error}"
            ) from None

    async def _ask(
        self,
        messages: list[dict[str, str]],
        parse: Callable[[str], Any],
        *,
        grammar: str | None,
        max_tokens: int,
        reminder: str = STRICT_REMINDER,
        top_logprobs: int = 5,
    ) -> _Asked:
        """One answer, parsed; a malformed answer is re-asked once with a stricter
        instruction (`reminder`). Endpoint failures come back as an error (and count toward
        the consecutive-failure limit, past which the judge is declared down). Every HTTP
        request is booked in the cost, failed ones included."""
        messages = with_examples(messages, self.few_shot, self.mode)
        raws: list[str] = []
        cost = Cost()
        for attempt in range(2):
            try:
                reply = await self.client.achat(
                    messages, grammar=grammar, max_tokens=max_tokens, top_logprobs=top_logprobs
                )
            except ChatFailed as exc:
                # the client already retried what is worth retrying (a malformed 200 too)
                self._count_failure(exc.error)
                return _Asked(None, [], raws, cost + exc.cost, exc.error)
            self._streak.answered()  # the endpoint answered; what it said is another matter
            cost += reply.cost
            raws.append(reply.text)
            try:
                parsed = parse(reply.text)
            except MalformedOutput as exc:
                if attempt == 0:
                    messages = [
                        *messages,
                        {"role": "assistant", "content": kept_raw(reply.text)},
                        {"role": "user", "content": reminder},
                    ]
                    continue
                return _Asked(None, [], raws, cost, str(exc))
            return _Asked(parsed, p_yes_per_answer(reply.tokens), raws, cost, None, reply.tokens)
        raise AssertionError("unreachable")

    async def agrade(
        self, question: str, chunk_text: str, criterion: str, criterion_text: str
    ) -> CriterionVerdict:
        """One criterion: one yes/no call (re-asked once if malformed); in extractive mode
        "complete" asks for the answering sentence; in ensemble mode the main and the
        reworded prompt are both asked and their P(yes) averaged."""
        if self.mode == "extractive" and criterion == "complete":
            return await self._grade_extractive(question, chunk_text)
        if self.mode == "ensemble":
            parts = [
                await self._grade_yes_no(question, chunk_text, criterion, criterion_text, v)
                for v in ("main", "reworded")
            ]
            return self._ensemble(parts)
        return await self._grade_yes_no(
            question, chunk_text, criterion, criterion_text, self.variant
        )

    async def _grade_yes_no(
        self, question: str, chunk_text: str, criterion: str, criterion_text: str, variant: str
    ) -> CriterionVerdict:
        a = await self._ask(
            build_messages(
                question, chunk_text, criterion_text, reasons=self.reasons, variant=variant
            ),
            parse_short_answer if self.answer_tokens == 1 else parse_answer,
            grammar=self.grammar,
            max_tokens=self.answer_tokens,
        )
        if a.error:
            return CriterionVerdict(criterion, None, raw=a.raw, error=a.error, **a.costs)
        value, reason = a.parsed
        return CriterionVerdict(criterion, value, p_yes=a.p(0), reason=reason, raw=a.raw, **a.costs)

    @staticmethod
    def _ensemble(parts: Sequence[CriterionVerdict]) -> CriterionVerdict:
        """One verdict from several wordings: P(yes) is the mean of their P(yes), the
        verdict P >= 0.5 (without probabilities, the first wording's answer); a wording
        that failed is left out, and the verdict fails only if all did. Costs add up."""
        ok = [v for v in parts if v.error is None]
        cost = sum((v.cost for v in parts), Cost()).to_dict()
        raw = " | ".join(f"{w}: {v.raw}" for w, v in zip(("main", "reworded"), parts, strict=False))
        first = parts[0]
        if not ok:
            return CriterionVerdict(first.criterion, None, raw=raw, error=first.error, **cost)
        ps = [v.p_yes for v in ok if v.p_yes is not None]
        p = sum(ps) / len(ps) if len(ps) == len(ok) else None
        value = p >= 0.5 if p is not None else bool(ok[0].value)
        reason = "; ".join(v.reason for v in ok if v.reason)
        return CriterionVerdict(first.criterion, value, p_yes=p, reason=reason, raw=raw, **cost)

    async def _grade_extractive(self, question: str, chunk_text: str) -> CriterionVerdict:
        """The "complete" criterion as evidence: the judge copies the sentence that answers, or says
        NONE; a copy not found in the passage counts as NONE. With a grammar (llama.cpp)
        the answer can only be NONE or one of the passage's sentences, and P(complete) is
        1 - P(NONE) from the first token's logprobs."""
        # the judge sees (and its grammar allows) the passage without markdown markup; the
        # copy is located in the passage itself by parse_extract
        shown = strip_markdown(chunk_text).text
        sentences = split_sentences(shown)
        use_grammar = self.use_grammar and sentences
        a = await self._ask(
            build_messages_extract(question, shown),
            lambda raw: parse_extract(raw, chunk_text),
            grammar=grammar_extract(sentences) if use_grammar else None,
            max_tokens=extract_max_tokens(sentences),
            reminder=f"Answer with one sentence copied from the passage, or {NONE_ANSWER}.",
            top_logprobs=10,
        )
        if a.error:
            return CriterionVerdict("complete", None, raw=a.raw, error=a.error, **a.costs)
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
            **a.costs,
        )

    @staticmethod
    def _failed_pair(a: _Asked) -> Pair:
        """Both criteria failed with one call's error, its cost on the relevant verdict."""
        return (
            CriterionVerdict("relevant", None, raw=a.raw, error=a.error, **a.costs),
            CriterionVerdict("complete", None, raw=a.raw, error=a.error),
        )

    async def agrade_both(self, question: str, chunk_text: str, criteria: CriteriaConfig) -> Pair:
        """Both criteria in one call ("both": two yes/no lines; "graded": a 0-3 grade;
        "criteria": four 0-3 grades, `harness.judge.criteria`).
        The call's cost is booked on the relevant verdict. (Other modes never ask for
        both at once: `judge_pairs` asks them one criterion at a time.)"""
        if self.mode == "graded":
            return await self._grade_graded(question, chunk_text, criteria)
        if self.mode == "criteria":
            return await grade_criteria(self, question, chunk_text)
        a = await self._ask(
            build_messages_both(question, chunk_text, criteria),
            parse_both,
            grammar=GRAMMAR_BOTH if self.use_grammar else None,
            max_tokens=12,
        )
        if a.error:
            return self._failed_pair(a)
        rel, comp = a.parsed
        return (
            CriterionVerdict("relevant", rel, p_yes=a.p(0), raw=a.raw, **a.costs),
            CriterionVerdict("complete", comp, p_yes=a.p(1), raw=a.raw),
        )

    async def _grade_graded(self, question: str, chunk_text: str, criteria: CriteriaConfig) -> Pair:
        """A 0-3 grade; with logprobs, P(grade >= cut-off) per criterion from the grade
        distribution (the verdict is that P >= 0.5), else the answered grade decides."""
        a = await self._ask(
            build_messages_graded(question, chunk_text, criteria),
            parse_grade,
            grammar=GRAMMAR_GRADE if self.use_grammar else None,
            max_tokens=1 if self.use_grammar else 4,
            reminder="Answer with the grade alone: one digit, 0, 1, 2 or 3.",
            top_logprobs=10,  # all four digits, even where other tokens rank above some
        )
        if a.error:
            return self._failed_pair(a)
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
                    **(a.costs if name == "relevant" else {}),
                )
            )
        return out[0], out[1]

    async def agrade_list(
        self, question: str, chunk_texts: Sequence[str], criteria: CriteriaConfig
    ) -> list[Pair]:
        """Every passage of a question in one call (listwise). The call's cost is booked on
        the first passage's relevant verdict."""
        n = len(chunk_texts)
        a = await self._ask(
            build_messages_list(question, chunk_texts, criteria),
            lambda raw: parse_list(raw, n),
            grammar=grammar_list(n) if self.use_grammar else None,
            max_tokens=14 * n + 8,
        )
        if a.error:
            failed = self._failed_pair(a)
            return [failed if i == 0 else self._failed_pair(_no_cost(a)) for i in range(n)]
        out: list[Pair] = []
        for i, (rel, comp) in enumerate(a.parsed):
            costs = a.costs if i == 0 else {}
            out.append((
                CriterionVerdict("relevant", rel, p_yes=a.p(2 * i), raw=a.raw, **costs),
                CriterionVerdict("complete", comp, p_yes=a.p(2 * i + 1), raw=a.raw),
            ))  # fmt: skip
        return out


def _no_cost(a: _Asked) -> _Asked:
    """The same answer at no cost (booked once, on the first verdict of a shared call)."""
    return _Asked(a.parsed, a.p_yes, a.raws, Cost(), a.error, a.tokens)
