"""A judge calibration: per criterion, a map from the judge's raw P(yes) to a probability
that means what it says (fitted by `harness calibrate`, harness/analysis/calibrate.py).

The map is Platt scaling on the logit of P(yes): calibrated = sigmoid(a * logit(p) + b),
fitted by maximum likelihood with Platt's smoothed targets (n+ + 1) / (n+ + 2) and
1 / (n- + 2). Two parameters, so 30-60 labelled pairs (an afternoon of `harness label`)
already fit it without overfitting, where isotonic regression needs hundreds; and it is
monotone, so it never reorders chunks: it moves the cut between yes and no (the raw
P(yes) at which the calibrated probability crosses 0.5) and spreads or squeezes the
probabilities that soft metrics average. A small local judge's problem is exactly a cut
in the wrong place ("complete" said of almost everything), which this fixes.

Applying a calibration changes no cached verdict and makes no judge call: the cache
keeps the raw P(yes); the run log keeps both (p_raw, and p_yes / value calibrated) and
names the calibration file and its hash.
"""

from __future__ import annotations

import hashlib
import json
import math
import os
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.errors import ConfigError
from harness.types import ComponentSpec, CriterionVerdict, Verdict

CALIBRATION_VERSION = 1
_EPS = 1e-4


def logit(p: float) -> float:
    """log(p / (1 - p)), with p clipped to [1e-4, 1 - 1e-4]."""
    p = min(max(p, _EPS), 1 - _EPS)
    return math.log(p / (1 - p))


@dataclass(frozen=True)
class PlattMap:
    """calibrated = sigmoid(a * logit(p) + b) for one criterion."""

    a: float
    b: float
    n: int
    """Labelled pairs it was fitted on."""
    positives: int
    """Of those, labelled yes."""

    def __call__(self, p: float) -> float:
        """The calibrated probability of a raw P(yes)."""
        z = self.a * logit(p) + self.b
        return 1 / (1 + math.exp(-z)) if z > -700 else 0.0

    @property
    def threshold(self) -> float | None:
        """The raw P(yes) above which the calibrated verdict is yes (None if a <= 0: the
        judge's probability did not rank the labels, and the map is a constant)."""
        if self.a <= 0:
            return None
        return 1 / (1 + math.exp(self.b / self.a))


@dataclass(frozen=True)
class Calibration:
    """Per-criterion maps from the judge's raw P(yes) to a calibrated probability."""

    criteria: dict[str, PlattMap]
    judge: str = ""
    """`judge_key` of the judge whose probabilities were fitted ("" if several)."""
    relevant_grade: int = 1
    complete_grade: int = 2
    created_at: str = ""
    source: dict[str, Any] = field(default_factory=dict)
    """Where the labels and the judged pairs came from."""
    sha256: str = ""
    """Of the file it was read from (set on read)."""
    path: str = ""

    def apply(self, v: CriterionVerdict) -> CriterionVerdict:
        """The verdict with P(yes) calibrated and its value re-cut at 0.5; the raw P(yes)
        kept in p_raw. A verdict without a probability, failed, or never asked is
        returned unchanged."""
        m = self.criteria.get(v.criterion)
        if m is None or v.p_yes is None or v.error is not None or not v.asked:
            return v
        raw = v.p_raw if v.p_raw is not None else v.p_yes
        p = m(raw)
        return replace(v, p_yes=p, p_raw=raw, value=p >= 0.5)

    def apply_verdict(self, v: Verdict) -> Verdict:
        """Both criteria of a verdict calibrated."""
        return Verdict(relevant=self.apply(v.relevant), complete=self.apply(v.complete))

    def spec(self) -> ComponentSpec:
        """The calibration as logged with a run: the file, its hash and the maps."""
        return ComponentSpec(
            name="platt",
            args={
                "file": self.path,
                "sha256": self.sha256,
                "judge": self.judge,
                "criteria": {
                    k: {"a": m.a, "b": m.b, "n": m.n, "threshold": m.threshold}
                    for k, m in self.criteria.items()
                },
            },
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON written by `harness calibrate`."""
        return {
            "calibration_version": CALIBRATION_VERSION,
            "method": "platt",
            "judge": self.judge,
            "relevant_grade": self.relevant_grade,
            "complete_grade": self.complete_grade,
            "created_at": self.created_at,
            "source": self.source,
            "criteria": {
                k: {
                    "a": m.a,
                    "b": m.b,
                    "n": m.n,
                    "positives": m.positives,
                    "threshold": m.threshold,
                }
                for k, m in self.criteria.items()
            },
        }


def write_calibration(cal: Calibration, path: str | os.PathLike[str]) -> Path:
    """Write the calibration file (JSON)."""
    out = Path(path)
    out.write_text(json.dumps(cal.to_dict(), indent=2) + "\n", encoding="utf-8")
    return out


def read_calibration(path: str | os.PathLike[str]) -> Calibration:
    """A calibration file, checked: one ConfigError naming the file and field otherwise."""
    p = Path(path)
    where = str(p)
    try:
        raw = p.read_bytes()
        d = json.loads(raw.decode("utf-8"))
    except FileNotFoundError:
        raise ConfigError(where, "judge.calibration", "calibration file not found") from None
    except (UnicodeDecodeError, json.JSONDecodeError):
        raise ConfigError(where, "", "expected a JSON calibration file") from None
    if not isinstance(d, dict) or not isinstance(d.get("criteria"), dict):
        raise ConfigError(where, "criteria", "expected an object of per-criterion maps")
    if d.get("calibration_version", 0) > CALIBRATION_VERSION:
        raise ConfigError(where, "calibration_version", "written by a newer harness")
    maps: dict[str, PlattMap] = {}
    for name, m in d["criteria"].items():
        try:
            maps[name] = PlattMap(float(m["a"]), float(m["b"]), int(m["n"]), int(m["positives"]))
        except (KeyError, TypeError, ValueError):
            raise ConfigError(where, f"criteria.{name}", "expected a, b, n, positives") from None
        if not (math.isfinite(maps[name].a) and math.isfinite(maps[name].b)):
            raise ConfigError(where, f"criteria.{name}", "expected finite a and b")
    return Calibration(
        criteria=maps,
        judge=str(d.get("judge", "")),
        relevant_grade=int(d.get("relevant_grade", 1)),
        complete_grade=int(d.get("complete_grade", 2)),
        created_at=str(d.get("created_at", "")),
        source=d.get("source", {}) if isinstance(d.get("source"), dict) else {},
        sha256=hashlib.sha256(raw).hexdigest(),
        path=str(p),
    )


def judge_key(spec: ComponentSpec) -> str:
    """What a calibration is tied to: the judge's model (and file hash), prompt version,
    mode and grade cut-offs, from its logged spec (never its endpoint or key)."""
    keep = ("model", "model_sha256", "prompt_version", "mode", "grade_cuts", "reasons")
    return json.dumps(
        {"name": spec.name, **{k: spec.args.get(k) for k in keep if k in spec.args}},
        sort_keys=True,
    )
