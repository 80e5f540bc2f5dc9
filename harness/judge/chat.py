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
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from harness.config import CriteriaConfig
from harness.errors import JudgeUnavailable
from harness.judge.parsing import (
    MalformedOutput,
    p_yes_per_answer,
    parse_answer,
    parse_both,
    parse_list,
)
from harness.judge.prompts import (
    GRAMMAR_BOTH,
    GRAMMAR_REASON,
    GRAMMAR_SHORT,
    PROMPT_VERSION,
    STRICT_REMINDER,
    build_messages,
    build_messages_both,
    build_messages_list,
    grammar_list,
)
from harness.judge.protocol import BaseJudge
from harness.llm.client import ChatClient, safe_error
from harness.llm.ratelimit import RateLimiter
from harness.types import ComponentSpec, CriterionVerdict


@dataclass(frozen=True)
class _Asked:
    """A parsed answer (or the error that replaced it), with what it cost."""

    parsed: Any
    p_yes: list[float | None]
    raws: list[str]
    cost: dict[str, Any]
    error: str | None

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
        spec_extra: dict[str, Any] | None = None,
        max_consecutive_failures: int = 8,
        limiter: RateLimiter | None = None,
        retry_base_s: float = 0.5,
        retry_cap_s: float = 30.0,
    ) -> None:
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
        self._failures = 0
        self._max_failures = max_consecutive_failures
        self._fail_lock = threading.Lock()
        self.spec = ComponentSpec(
            name="openai-chat",
            args={
                "base_url": base_url,
                "model": model,
                "prompt_version": PROMPT_VERSION,
                "reasons": reasons,
                "temperature": temperature,
                "max_tokens": self.max_tokens,
                "grammar": self.grammar,
                "mode": mode,
                "prompt_variant": variant,
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

    def _ask(
        self,
        messages: list[dict[str, str]],
        parse: Callable[[str], Any],
        *,
        grammar: str | None,
        max_tokens: int,
    ) -> _Asked:
        """One answer, parsed; a malformed answer is re-asked once with a stricter
        instruction. Endpoint failures come back as an error (and count toward the
        consecutive-failure limit, past which the judge is declared down)."""
        import openai

        raws: list[str] = []
        cost: dict[str, Any] = {
            "calls": 0,
            "prompt_tokens": 0,
            "completion_tokens": 0,
            "latency_s": 0.0,
            "retries": 0,
        }
        for attempt in range(2):
            try:
                reply = self.client.chat(messages, grammar=grammar, max_tokens=max_tokens)
            except openai.APIError as exc:
                # the client already retried what is worth retrying.
                error = f"{type(exc).__name__}: {safe_error(str(exc))}"
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
            for name in ("prompt_tokens", "completion_tokens", "latency_s", "retries"):
                cost[name] += getattr(reply, name)
            cost["calls"] += 1
            raws.append(reply.text)
            try:
                parsed = parse(reply.text)
            except MalformedOutput as exc:
                if attempt == 0:
                    messages = [
                        *messages,
                        {"role": "assistant", "content": reply.text},
                        {"role": "user", "content": STRICT_REMINDER},
                    ]
                    continue
                return _Asked(None, [], raws, cost, str(exc))
            return _Asked(parsed, p_yes_per_answer(reply.tokens), raws, cost, None)
        raise AssertionError("unreachable")

    def grade(
        self, question: str, chunk_text: str, criterion: str, criterion_text: str
    ) -> CriterionVerdict:
        """One call for the criterion, re-asked once if the answer is malformed."""
        a = self._ask(
            build_messages(
                question, chunk_text, criterion_text, reasons=self.reasons, variant=self.variant
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

    def grade_both(
        self, question: str, chunk_text: str, criteria: CriteriaConfig
    ) -> tuple[CriterionVerdict, CriterionVerdict]:
        """Both criteria in one call. The call's cost is booked on the relevant verdict."""
        a = self._ask(
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

    def grade_list(
        self, question: str, chunk_texts: Sequence[str], criteria: CriteriaConfig
    ) -> list[tuple[CriterionVerdict, CriterionVerdict]]:
        """Every passage of a question in one call (listwise). The call's cost is booked on
        the first passage's relevant verdict."""
        n = len(chunk_texts)
        a = self._ask(
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
