"""The search space of a sweep, defined once.

`SearchSpace.settings(choose)` is the only description of which dimensions exist, in
which order, and how they depend on each other (chunk_overlap is searched below each
chunk size; fetch_k only where something reranks). Optuna's define-by-run suggestion,
the grid's enumeration and the baseline trial all walk it with a different `choose`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

import optuna

from harness.config import ExperimentConfig, embedder_id, parse_embedder_id
from harness.errors import ConfigError

Choose = Callable[[str, Sequence[Any]], Any]
"""Picks one of a dimension's values: `choose(name, values)`."""


class NoOverlap(Exception):
    """No overlap of the searched range lies below this chunk size."""


class _Outside(Exception):
    """The experiment's own value lies outside the searched values."""


class _Branch(Exception):
    """Enumeration reached a dimension it has not chosen yet."""

    def __init__(self, n: int) -> None:
        self.n = n


def overlap_high(size: int, low: int, high: int, step: int) -> int | None:
    """The largest overlap low + n*step that is <= high and < size; None if even low isn't."""
    top = min(high, size - 1)
    if top < low:
        return None
    return low + ((top - low) // step) * step


class SearchSpace:
    """The settings a sweep may try, from the experiment's `[sweep.space]`; a dimension
    without values keeps the experiment's own setting."""

    def __init__(self, config: ExperimentConfig) -> None:
        self.config = config

    def overlaps(self, size: int) -> range:
        """The searched overlaps below `size` (empty when none is)."""
        o = self.config.sweep.space.chunk_overlap
        assert o is not None
        high = overlap_high(size, o.low, o.high, o.step)
        return range(0) if high is None else range(o.low, high + 1, o.step)

    def settings(self, choose: Choose) -> dict[str, Any]:
        """One setting of the space, each searched dimension picked by `choose`, in the
        order chunk_size, chunk_overlap, k, reranker, fetch_k, embedder. Raises NoOverlap
        when a chunk size leaves no overlap to choose."""
        sp, c = self.config.sweep.space, self.config
        params: dict[str, Any] = {}
        size = choose("chunk_size", sp.chunk_size) if sp.chunk_size else c.chunking.chunk_size
        params["chunk_size"] = size
        if sp.chunk_overlap is not None:
            overlaps = self.overlaps(size)
            if not overlaps:
                o = sp.chunk_overlap
                raise NoOverlap(f"no overlap in {o.low}..{o.high} is below chunk size {size}")
            params["chunk_overlap"] = choose("chunk_overlap", overlaps)
        else:
            params["chunk_overlap"] = min(c.chunking.chunk_overlap, size - 1)
        params["k"] = choose("k", sp.k) if sp.k else c.retrieval.k
        params["reranker"] = (
            choose("reranker", sp.reranker) if sp.reranker else c.retrieval.reranker
        )
        if params["reranker"] != "none":  # fetch_k only matters when something reranks
            params["fetch_k"] = choose("fetch_k", sp.fetch_k) if sp.fetch_k else c.retrieval.fetch_k
        params["embedder"] = (
            choose("embedder", sp.embedder) if sp.embedder else embedder_id(c.embedder)
        )
        return params

    def suggest(self, trial: optuna.Trial) -> dict[str, Any]:
        """Define-by-run: the trial's settings (overlap as an integer range, the rest
        categorical). Raises optuna.TrialPruned where no overlap fits the chunk size."""

        def choose(name: str, values: Sequence[Any]) -> Any:
            if isinstance(values, range):
                return trial.suggest_int(name, values.start, values[-1], step=values.step)
            value = trial.suggest_categorical(name, list(values))
            return int(value) if name in ("chunk_size", "k", "fetch_k") else value

        try:
            return self.settings(choose)
        except NoOverlap as exc:
            raise optuna.TrialPruned(str(exc)) from None

    def enumerate(self) -> list[dict[str, Any]]:
        """Every setting the space holds, in the order a grid visits them."""
        return self._walk()[0]

    def grid_trials(self) -> int:
        """The trials a grid takes to visit the whole space: every setting, and one
        (pruned) for each chunk size no overlap of the searched range fits."""
        listed, dead_ends = self._walk()
        return len(listed) + dead_ends

    def _walk(self) -> tuple[list[dict[str, Any]], int]:
        """The settings in grid order, and the chunk sizes that leave no overlap."""
        out: list[dict[str, Any]] = []
        dead_ends = 0

        def explore(prefix: list[int]) -> None:
            nonlocal dead_ends
            depth = 0

            def choose(name: str, values: Sequence[Any]) -> Any:
                nonlocal depth
                if depth < len(prefix):
                    depth += 1
                    return values[prefix[depth - 1]]
                raise _Branch(len(values))

            try:
                out.append(self.settings(choose))
            except _Branch as branch:
                for i in range(branch.n):
                    explore([*prefix, i])
            except NoOverlap:
                dead_ends += 1

        explore([])
        return out, dead_ends

    def check(self) -> int:
        """The trials a grid takes over the space (`grid_trials`), refused with one line
        naming the experiment file when the space holds fewer than two settings: every
        trial would run the same one (no `[sweep.space]`, or one value per dimension), or
        none fits."""
        listed, dead_ends = self._walk()
        where = self.config.path or "<experiment>"
        if not listed:
            o = self.config.sweep.space.chunk_overlap
            span = f" {o.low}..{o.high}" if o is not None else ""
            raise ConfigError(
                where,
                "sweep.space",
                f"no setting fits: no chunk_overlap{span} lies below a chunk_size searched",
            )
        if len(listed) == 1:
            only = " ".join(f"{k}={v}" for k, v in listed[0].items())
            raise ConfigError(
                where,
                "sweep.space",
                f"searches nothing, so every trial would run {only}; give a dimension two "
                "or more values, e.g. chunk_size = [400, 800, 1200] and k = [2, 3, 4] "
                "(harness run runs one setting)",
            )
        return len(listed) + dead_ends

    def baseline(self) -> dict[str, Any] | None:
        """The experiment's own settings on the searched dimensions, or None when one of
        them lies outside the space (then there is no baseline trial to enqueue)."""
        c = self.config
        own = {
            "chunk_size": c.chunking.chunk_size,
            "chunk_overlap": c.chunking.chunk_overlap,
            "k": c.retrieval.k,
            "reranker": c.retrieval.reranker,
            "fetch_k": c.retrieval.fetch_k,
            "embedder": embedder_id(c.embedder),
        }
        searched: dict[str, Any] = {}

        def choose(name: str, values: Sequence[Any]) -> Any:
            if own[name] not in values:
                raise _Outside
            searched[name] = own[name]
            return own[name]

        try:
            self.settings(choose)
        except (_Outside, NoOverlap):
            return None
        return searched

    def trial_config(self, params: dict[str, Any]) -> ExperimentConfig:
        """The experiment with a trial's settings in place."""
        config = self.config
        name, model = parse_embedder_id(params["embedder"])
        return replace(
            config,
            chunking=replace(
                config.chunking,
                chunk_size=params["chunk_size"],
                chunk_overlap=params["chunk_overlap"],
            ),
            retrieval=replace(
                config.retrieval,
                k=params["k"],
                reranker=params["reranker"],
                fetch_k=params.get("fetch_k", config.retrieval.fetch_k),
            ),
            embedder=replace(config.embedder, name=name, model=model),
            # A trial is for comparing settings: judging a wider pool per failed question
            # would pay for it in every trial. Its failures are labelled from their
            # source spans only (free); run the recommended configuration (harness
            # export-config, failures.judge_pool = true) to see why the rest fail.
            failures=replace(config.failures, judge_pool=False),
        )
