"""Test helpers for our tests and for users' own: a scripted judge and a misbehaving
OpenAI-compatible server on 127.0.0.1.

    ScriptedJudge(questions_file)   deterministic verdicts from a script
    FakeOpenAI(behave, latency_s)   a chat endpoint that answers, fails, hangs or floods on cue
"""

from harness.testing.fake_openai import Act, FakeOpenAI, answer_any, answer_yes
from harness.testing.scripted import ScriptedJudge

__all__ = ["Act", "FakeOpenAI", "ScriptedJudge", "answer_any", "answer_yes"]
