"""Building the configured judge: the backend `judge.backend` names, from the registry.

Each backend is one module (`harness.judge.backends`, listed in
`harness.components.registry.JUDGES`) providing `check`, `identity` and `open`; the
default, `chat`, asks an OpenAI-compatible endpoint or the packaged local model.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from pathlib import Path

from harness.components.registry import load
from harness.config import JudgeConfig
from harness.judge.backends.chat import judge_settings
from harness.judge.protocol import Judge

__all__ = ["check_endpoint", "judge_identity", "judge_settings", "open_judge"]


def check_endpoint(config: JudgeConfig, where: str) -> None:
    """Refuse, before anything is loaded, indexed or paid, a judge that cannot judge
    (e.g. an endpoint without a model); the error names `where` and the field."""
    load("judge", config.backend).check(config, where)


def judge_identity(config: JudgeConfig, cache_dir: Path) -> str:
    """The verdict-cache identity of the configured judge, without starting or calling it."""
    return str(load("judge", config.backend).identity(config, cache_dir))


@contextlib.contextmanager
def open_judge(
    config: JudgeConfig, *, cache_dir: Path, log_dir: Path | None = None
) -> Iterator[Judge]:
    """The judge a config asks for, ready to grade, for as long as the context lasts
    (a local server it started is stopped on exit)."""
    with load("judge", config.backend).open(config, cache_dir=cache_dir, log_dir=log_dir) as j:
        yield j
