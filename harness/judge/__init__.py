"""The LLM judge: the Judge protocol, prompts, parsing, grading many pairs, estimates.

Judge, BaseJudge       the complete interface, async first (judge/protocol.py)
ChatJudge              any OpenAI-compatible endpoint (judge/chat.py)
open_judge(config)     the configured judge, local llama.cpp server included
judge_pairs(...)       verdicts for many pairs, cache first, as the mode says
estimate_calls(...)    what judging would still cost
"""

from harness.judge.chat import ChatJudge
from harness.judge.estimate import CallEstimate, estimate_calls, judge_cost, judge_estimator
from harness.judge.factory import check_endpoint, judge_identity, judge_settings, open_judge
from harness.judge.grading import (
    NOT_JUDGED,
    JudgeStats,
    LazyPlan,
    cached_pair,
    grade_cached,
    judge_pair,
    judge_pairs,
    not_judged,
)
from harness.judge.parsing import (
    MalformedOutput,
    p_yes_from_logprobs,
    parse_answer,
    parse_both,
    parse_list,
    parse_short_answer,
)
from harness.judge.prompts import CRITERIA, PROMPT_VERSION, build_messages
from harness.judge.protocol import BaseJudge, Judge

__all__ = [
    "CRITERIA",
    "NOT_JUDGED",
    "PROMPT_VERSION",
    "BaseJudge",
    "CallEstimate",
    "ChatJudge",
    "Judge",
    "JudgeStats",
    "LazyPlan",
    "MalformedOutput",
    "build_messages",
    "cached_pair",
    "check_endpoint",
    "estimate_calls",
    "grade_cached",
    "judge_cost",
    "judge_estimator",
    "judge_identity",
    "judge_pair",
    "judge_pairs",
    "judge_settings",
    "not_judged",
    "open_judge",
    "p_yes_from_logprobs",
    "parse_answer",
    "parse_both",
    "parse_list",
    "parse_short_answer",
]
