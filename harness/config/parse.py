"""Reading experiment files: TOML into `ExperimentConfig`, with `--set` overrides.

Paths inside an experiment file are relative to that file. Every error names the file,
the field (dotted, e.g. `chunking.chunk_overlap`) and what was expected.
"""

from __future__ import annotations

import dataclasses
import os
import tomllib
import types
import typing
from pathlib import Path
from typing import Any

from harness.components.registry import KINDS, load
from harness.config.schema import (
    CRITERIA_PRESETS,
    DEFAULT_COMPLETE,
    DEFAULT_RELEVANT,
    CriteriaConfig,
    ExperimentConfig,
    JudgeConfig,
    SettingsTables,
)
from harness.config.validate import validate
from harness.errors import ConfigError

_SECTIONS = (
    "corpus",
    "questions",
    "chunking",
    "retrieval",
    "embedder",
    "judge",
    "sweep",
    "failures",
    "generate",
)


def _coerce(value: Any, tp: Any, where: str, name: str) -> Any:
    origin = typing.get_origin(tp)
    if origin is tuple:
        item = typing.get_args(tp)[0]
        if isinstance(value, tuple):  # a config dict built in process, not read from JSON
            value = list(value)
        if not isinstance(value, list):
            value = [value]
        return tuple(_coerce(v, item, where, name) for v in value)
    if origin in (typing.Union, types.UnionType):
        tp = next(a for a in typing.get_args(tp) if a is not type(None))
    if tp is bool:
        if not isinstance(value, bool):
            raise ConfigError(where, name, f"expected true or false, got {value!r}")
        return value
    if tp is int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(where, name, f"expected an integer, got {value!r}")
        return value
    if tp is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(where, name, f"expected a number, got {value!r}")
        return float(value)
    if tp is str:
        if not isinstance(value, str):
            raise ConfigError(where, name, f"expected a string, got {value!r}")
        return value
    raise TypeError(f"unsupported config type {tp}")


def _unwrap_optional(tp: Any) -> Any:
    if typing.get_origin(tp) in (typing.Union, types.UnionType):
        args = [a for a in typing.get_args(tp) if a is not type(None)]
        if len(args) == 1:
            return args[0]
    return tp


def _build(cls: type, data: Any, where: str, prefix: str) -> dict[str, Any]:
    if not isinstance(data, dict):
        raise ConfigError(where, prefix, f"expected a table, got {data!r}")
    hints = typing.get_type_hints(cls)
    fields = {f.name for f in dataclasses.fields(cls) if f.name != "path"}
    unknown = sorted(set(data) - fields)
    if unknown:
        key = f"{prefix}.{unknown[0]}" if prefix else unknown[0]
        raise ConfigError(where, key, f"unknown key; expected one of {sorted(fields)}")
    kwargs: dict[str, Any] = {}
    for name, value in data.items():
        dotted = f"{prefix}.{name}" if prefix else name
        tp = _unwrap_optional(hints[name])
        if tp is SettingsTables:
            kwargs[name] = _settings_tables(value, where, dotted)
        elif isinstance(tp, type) and dataclasses.is_dataclass(tp):
            kwargs[name] = tp(**_build(tp, value, where, dotted))
        else:
            kwargs[name] = _coerce(value, tp, where, dotted)
    return kwargs


_SETTINGS_KIND = {
    "retrieval.settings": "reranker",
    "embedder.settings": "embedder",
    "judge.settings": "judge",
}
"""The settings sub-tables -> the kind of component they configure."""


def _settings_tables(value: Any, where: str, dotted: str) -> SettingsTables:
    """`[<table>.settings.<name>]` tables: each read into its component module's own
    `Settings` (defaults filled in, types checked), kept as plain values."""
    if not isinstance(value, dict):
        raise ConfigError(where, dotted, f"expected a table, got {value!r}")
    kind = _SETTINGS_KIND.get(dotted)
    if kind is None:
        raise ConfigError(where, dotted, "unknown key")
    out = SettingsTables()
    for name, table in value.items():
        key = f"{dotted}.{name}"
        if name not in KINDS[kind]:
            raise ConfigError(
                where, key, f"expected a {kind} name ({', '.join(KINDS[kind])}), got {name!r}"
            )
        cls = getattr(load(kind, name), "Settings", None)
        if cls is None:
            raise ConfigError(where, key, f"the {kind} {name!r} takes no settings")
        out[name] = dataclasses.asdict(cls(**_build(cls, table, where, key)))
    return out


def _leaf_keys() -> dict[str, list[str]]:
    """Leaf name -> dotted keys, so `--set k=3` can stand for `retrieval.k=3`."""
    out: dict[str, list[str]] = {}

    def walk(cls: type, prefix: str) -> None:
        for f in dataclasses.fields(cls):
            tp = _unwrap_optional(typing.get_type_hints(cls)[f.name])
            dotted = f"{prefix}.{f.name}" if prefix else f.name
            if isinstance(tp, type) and dataclasses.is_dataclass(tp):
                walk(tp, dotted)
            else:
                out.setdefault(f.name, []).append(dotted)

    for section in _SECTIONS:
        # sweep and generate settings shadow leaf names; they take dotted keys
        if section not in ("sweep", "generate"):
            walk(typing.get_type_hints(ExperimentConfig)[section], section)
    return out


def _parse_override_value(raw: str) -> Any:
    try:
        return tomllib.loads(f"v = {raw}")["v"]
    except tomllib.TOMLDecodeError:
        return raw


Overrides = str | typing.Sequence[str] | typing.Mapping[str, Any]
"""Overrides of an experiment's settings: `key=value` strings as `--set` takes them (one
string is one override), or, from Python, a mapping of keys to values (`{"retrieval.k": 3}`
or `{"retrieval": {"k": 3}}`; a path may be a `Path`). Mappings nested under plain names
set those keys and keep the file's others (`{"sweep": {"space": {"k": [2, 3]}}}` changes
only the space's k); a mapping under a dotted key is that key's whole value, as `--set`'s
inline table is (`{"sweep.space.chunk_overlap": {"low": 0, "high": 40}}` keeps no `step`
of the file's)."""


def _override_items(overrides: Overrides) -> list[tuple[str, str, Any]]:
    """(where, key, value) of each override: `--set`'s strings parsed as TOML (falling back
    to a plain string), a mapping's values as given, mappings nested under plain names as
    dotted keys (see `Overrides`)."""
    if isinstance(overrides, str):
        overrides = [overrides]
    if isinstance(overrides, typing.Mapping):
        out: list[tuple[str, str, Any]] = []

        def flat(m: typing.Mapping[Any, Any], prefix: str) -> None:
            for k, v in m.items():
                name = str(k).strip()
                if "." not in name and isinstance(v, typing.Mapping) and v:
                    flat(v, f"{prefix}{name}.")  # a table's keys, given under its name
                else:
                    out.append(("overrides", prefix + name, _plain_value(v)))

        flat(overrides, "")
        return out
    items = []
    for item in overrides:
        if not isinstance(item, str) or "=" not in item:
            raise ConfigError(
                "--set", str(item), "expected key=value, e.g. chunking.chunk_size=500"
            )
        key, raw = item.split("=", 1)
        items.append(("--set", key.strip(), _parse_override_value(raw)))
    return items


def _plain_value(v: Any) -> Any:
    """A Python override value as TOML would give it: a path as its string (in lists too)."""
    if isinstance(v, os.PathLike):
        return os.fspath(v)
    if isinstance(v, (list, tuple)):
        return [_plain_value(x) for x in v]
    return v


def apply_overrides(data: dict[str, Any], overrides: Overrides) -> dict[str, Any]:
    """Return a copy of `data` with the overrides applied (`Overrides`: dotted keys or unique
    leaf names such as `k` for `retrieval.k`)."""
    out = {k: (dict(v) if isinstance(v, dict) else v) for k, v in data.items()}
    leaves = _leaf_keys()
    for where, key, value in _override_items(overrides):
        if "." not in key and key not in ("name",):
            matches = leaves.get(key, [])
            if len(matches) != 1:
                raise ConfigError(
                    where, key, "unknown key; use a dotted key such as chunking.chunk_size"
                )
            key = matches[0]
        parts = key.split(".")
        node = out
        for part in parts[:-1]:
            child = node.get(part, {})
            if not isinstance(child, dict):
                raise ConfigError(where, key, f"{part} is not a table")
            node[part] = child = dict(child)
            node = child
        node[parts[-1]] = value
    return out


def parse_experiment(
    data: dict[str, Any], path: str = "", overrides: Overrides = ()
) -> ExperimentConfig:
    """Validate a parsed TOML mapping (plus overrides) into an ExperimentConfig."""
    where = path or "<experiment>"
    data = apply_overrides(data, overrides)
    kwargs = _build(ExperimentConfig, data, where, "")
    kwargs.setdefault("name", Path(path).stem if path else "experiment")
    for section in ("corpus", "questions"):
        if section not in kwargs:
            raise ConfigError(where, section, f"missing [{section}] table")
    if "judge" in kwargs and kwargs["judge"].criteria_preset:
        kwargs["judge"] = _resolve_criteria_preset(kwargs["judge"], where)
    if "judge" in kwargs and kwargs["judge"].exam:
        # the judge reads the exam without the experiment at hand: resolved here
        base = Path(path).resolve().parent if path else Path.cwd()
        exam = Path(os.path.expanduser(kwargs["judge"].exam))
        exam_path = str(exam if exam.is_absolute() else (base / exam).resolve())
        kwargs["judge"] = dataclasses.replace(kwargs["judge"], exam=exam_path)
    config = ExperimentConfig(path=str(Path(path).resolve()) if path else "", **kwargs)
    validate(config)
    return config


def _resolve_criteria_preset(judge: JudgeConfig, where: str) -> JudgeConfig:
    """`judge` with its criteria set to the texts of `judge.criteria_preset`.

    A criterion text of the user's own beside a preset is an error naming the field
    rather than a silent choice: either wording could be what the user meant, and the
    verdicts (and the cache keys) differ. A text equal to the default or to the preset's
    own is not one of the user's own: that is how a resolved config (a run header's) reads
    back, so logs round-trip and `--set judge.criteria_preset=...` works on them.
    """
    preset = judge.criteria_preset
    if preset not in CRITERIA_PRESETS:
        raise ConfigError(
            where,
            "judge.criteria_preset",
            f"expected one of {', '.join(repr(p) for p in ('', *CRITERIA_PRESETS))}, "
            f"got {preset!r}",
        )
    texts = CRITERIA_PRESETS[preset]
    given = (judge.criteria.relevant, judge.criteria.complete)
    for name, text, default, preset_text in zip(
        ("relevant", "complete"), given, (DEFAULT_RELEVANT, DEFAULT_COMPLETE), texts, strict=True
    ):
        if text not in (default, preset_text):
            raise ConfigError(
                where,
                f"judge.criteria.{name}",
                f"expected no text of your own with judge.criteria_preset = {preset!r}, "
                "which sets it; remove one of the two",
            )
    return dataclasses.replace(judge, criteria=CriteriaConfig(relevant=texts[0], complete=texts[1]))


def experiment_from_dict(d: dict[str, Any], overrides: Overrides = ()) -> ExperimentConfig:
    """An ExperimentConfig back from `ExperimentConfig.to_dict()` (as a run header or
    sweep.json holds it), with optional `key=value` overrides on top."""

    def drop_none(x: Any) -> Any:  # an unset optional table is written as null
        return (
            {k: drop_none(v) for k, v in x.items() if v is not None} if isinstance(x, dict) else x
        )

    data = drop_none({k: v for k, v in d.items() if k != "path"})
    return parse_experiment(data, d.get("path", ""), overrides)


def load_experiment(path: str | os.PathLike[str], overrides: Overrides = ()) -> ExperimentConfig:
    """Read and validate an experiment file, with `overrides` on top (`Overrides`:
    `["retrieval.k=3"]` as `--set` takes them, or `{"retrieval.k": 3}`)."""
    p = Path(path)
    if not p.is_file():
        raise ConfigError(str(p), "", "experiment file not found")
    try:
        data = tomllib.loads(p.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(str(p), "", f"not valid TOML ({exc})") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(
            str(p), "", f"expected a UTF-8 text file (byte {exc.start} is not UTF-8)"
        ) from None
    return parse_experiment(data, str(p), overrides)


def as_experiment(config: ExperimentConfig | str | os.PathLike[str]) -> ExperimentConfig:
    """`config` itself, or the experiment file it names read by `load_experiment`: the
    public functions that take an experiment take either (`harness.run_experiment(
    "experiments/quickstart.toml")`)."""
    if isinstance(config, ExperimentConfig):
        return config
    if isinstance(config, (str, os.PathLike)):
        return load_experiment(config)
    raise TypeError(
        "expected an ExperimentConfig (harness.load_experiment(path)) or an experiment "
        f"file's path, got {type(config).__name__}"
    )
