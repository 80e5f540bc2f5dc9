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
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from harness.errors import ConfigError
from harness.types import ComponentSpec, CriterionVerdict, Verdict

CALIBRATION_VERSION = 3
"""2 added `basis` and the judge's measured error rates (`rates`); 3 added `applies`.
Version 1 and 2 files read (as `applies` "verdicts")."""
APPLIES = ("verdicts", "rates")
"""What a calibration changes in a run: "verdicts" re-cuts each verdict at the fitted
threshold (and reports the re-cut verdicts' error rates); "rates" leaves the judge's
verdicts as it gave them and uses the error rates it measured of *those* verdicts for
the run's corrected rates and trust statement."""
CRITERIA = ("relevant", "complete")
"""The criteria a calibration may hold."""
PARAM_LIMIT = 100.0
"""Largest |a| or |b| a calibration file may hold. logit(p) lies within +-9.2 (p is
clipped to 1e-4), so a slope past this turns the map into a step at one raw P(yes): a
degenerate fit (constant probabilities), never a calibration."""
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
class ErrorRates:
    """How often the judge's (calibrated) verdict on one criterion is right, measured on
    pairs whose truth is known: the judge exam or labels. For "complete" the verdict is
    the one the metrics count, relevant and complete (grade 2)."""

    tpr: float
    """True-positive rate: share of the true answers judged yes."""
    fpr: float
    """False-positive rate: share of the non-answers judged yes."""
    positives: int
    """True answers it was measured on (effective count when pairs are weighted)."""
    negatives: int
    """Non-answers it was measured on (effective count when pairs are weighted)."""
    basis: str = "labels"
    """"exam" (generated questions and corpus negatives) or "labels" (qrels)."""
    extra: dict[str, Any] = field(default_factory=dict)
    """What else was measured (near misses' yes-rate, unrelated passages' FPR...)."""

    def to_dict(self) -> dict[str, Any]:
        """Its JSON object in the calibration file."""
        return {
            "tpr": self.tpr,
            "fpr": self.fpr,
            "positives": self.positives,
            "negatives": self.negatives,
            "basis": self.basis,
            **({"extra": self.extra} if self.extra else {}),
        }


@dataclass(frozen=True)
class Calibration:
    """Per-criterion maps from the judge's raw P(yes) to a calibrated probability,
    (version 2) the measured error rates of the verdicts runs report, and (version 3)
    whether runs re-cut their verdicts or only correct their rates (`applies`)."""

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
    rates: dict[str, ErrorRates] = field(default_factory=dict)
    """Criterion -> the judge's error rates with this calibration applied (empty in a
    version 1 file). A judge without logprobs gets rates and no map."""
    basis: str = "labels"
    """What the truth came from: "labels" (qrels) or "exam" (the corpus itself)."""
    applies: str = "verdicts"
    """One of `APPLIES`: whether runs re-cut their verdicts with the maps ("verdicts") or
    keep them as judged and use only the measured error rates ("rates"; `harness
    calibrate --exam` writes this by default: on real queries an exam's cut moved the
    verdicts away from people's labels, see docs/pages/judging.md)."""

    def apply(self, v: CriterionVerdict) -> CriterionVerdict:
        """The verdict with P(yes) calibrated and its value re-cut at 0.5; the raw P(yes)
        kept in p_raw. A verdict without a probability, failed, or never asked is
        returned unchanged, and so is every verdict when the calibration applies to the
        rates only."""
        if self.applies == "rates":
            return v
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
        """The calibration as logged with a run: the file, its hash, the maps and the
        measured error rates (what the run's trust statement rests on)."""
        return ComponentSpec(
            name="platt",
            args={
                "file": self.path,
                "sha256": self.sha256,
                "judge": self.judge,
                "basis": self.basis,
                "applies": self.applies,
                "criteria": {
                    k: {"a": m.a, "b": m.b, "n": m.n, "threshold": m.threshold}
                    for k, m in self.criteria.items()
                },
                **(
                    {"rates": {k: r.to_dict() for k, r in self.rates.items()}} if self.rates else {}
                ),
            },
        )

    def to_dict(self) -> dict[str, Any]:
        """The JSON written by `harness calibrate`."""
        return {
            "calibration_version": CALIBRATION_VERSION,
            "method": "platt",
            "basis": self.basis,
            "applies": self.applies,
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
            "rates": {k: r.to_dict() for k, r in self.rates.items()},
        }


def write_calibration(cal: Calibration, path: str | os.PathLike[str]) -> Path:
    """Write the calibration file (JSON)."""
    out = Path(path)
    out.write_text(json.dumps(cal.to_dict(), indent=2) + "\n", encoding="utf-8")
    return out


class _Fields:
    """Typed reads of a calibration file's JSON, each failure one ConfigError naming the
    file and the field (never a TypeError, ValueError or OverflowError)."""

    def __init__(self, where: str) -> None:
        self.where = where

    def fail(self, name: str, expected: str) -> ConfigError:
        return ConfigError(self.where, name, expected)

    def number(self, d: dict[str, Any], key: str, name: str, limit: float = math.inf) -> float:
        v = d.get(key)
        # bool is an int to Python, never a number to a user
        if isinstance(v, bool) or not isinstance(v, (int, float)):
            raise self.fail(_at(name, key), f"expected a number, got {_shown(v)}")
        try:
            x = float(v)
        except OverflowError:  # an integer too large for a float
            raise self.fail(_at(name, key), "expected a finite number") from None
        if not math.isfinite(x) or abs(x) > limit:
            raise self.fail(
                _at(name, key), f"expected a finite number within +-{limit:g}, got {_shown(v)}"
            )
        return x

    def count(self, d: dict[str, Any], key: str, name: str, default: int | None = None) -> int:
        v = d.get(key, default)
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise self.fail(_at(name, key), f"expected a whole number >= 0, got {_shown(v)}")
        return v

    def share(self, d: dict[str, Any], key: str, name: str) -> float:
        x = self.number(d, key, name)
        if not 0 <= x <= 1:
            raise self.fail(_at(name, key), f"expected a rate between 0 and 1, got {x:g}")
        return x

    def text(self, d: dict[str, Any], key: str) -> str:
        v = d.get(key, "")
        if not isinstance(v, str):
            raise self.fail(key, f"expected a string, got {_shown(v)}")
        return v


def _at(name: str, key: str) -> str:
    return f"{name}.{key}" if name else key


def _shown(v: Any) -> str:
    """A JSON value as an error message shows it: short, whatever its size."""
    text = json.dumps(v)[:40] if not isinstance(v, float) else repr(v)
    return f"{type(v).__name__} {text}"


@dataclass(frozen=True)
class _File:
    """A calibration file's bytes and its top-level JSON object, fields not yet checked."""

    path: Path
    raw: bytes
    obj: dict[str, Any]


@dataclass(frozen=True)
class _Tables:
    """A calibration file's per-criterion tables, each name a known criterion."""

    criteria: dict[str, Any]
    rates: dict[str, Any]


def read_calibration(path: str | os.PathLike[str]) -> Calibration:
    """A calibration file, checked field by field before anything uses it: a missing,
    empty, BOM-prefixed or non-JSON file, a number that is a string, huge or infinite,
    a grade that is not a whole number, an unknown criterion or none of the known ones
    each raise one ConfigError naming the file and the field."""
    file = _read_file(Path(path))
    f = _Fields(str(file.path))
    d = file.obj
    tables = _tables(d, f)
    maps = {name: _platt_map(m, f"criteria.{name}", f) for name, m in tables.criteria.items()}
    rates = {name: _error_rates(r, f"rates.{name}", f) for name, r in tables.rates.items()}
    grades = {}
    for key, default in (("relevant_grade", 1), ("complete_grade", 2)):
        grades[key] = f.count(d, key, "", default=default)
    source = d.get("source", {})
    if not isinstance(source, dict):
        raise f.fail("source", "expected an object")
    return Calibration(
        criteria=maps,
        judge=f.text(d, "judge"),
        relevant_grade=grades["relevant_grade"],
        complete_grade=grades["complete_grade"],
        created_at=f.text(d, "created_at"),
        source=source,
        sha256=hashlib.sha256(file.raw).hexdigest(),
        path=str(file.path),
        rates=rates,
        basis=f.text(d, "basis") or "labels",
        applies=_applies(d, f),
    )


def _applies(d: dict[str, Any], f: _Fields) -> str:
    """The file's `applies` ("verdicts" when absent: what older files meant)."""
    applies = f.text(d, "applies") or "verdicts"
    if applies not in APPLIES:
        raise f.fail("applies", f"expected {' or '.join(repr(a) for a in APPLIES)}")
    return applies


def _read_file(p: Path) -> _File:
    """The file's bytes and JSON object: ConfigError for a missing, unreadable, empty,
    BOM-prefixed or non-JSON file, or JSON that is not an object."""
    where = str(p)
    try:
        raw = p.read_bytes()
    except FileNotFoundError:
        raise ConfigError(where, "judge.calibration", "calibration file not found") from None
    except IsADirectoryError:
        raise ConfigError(where, "judge.calibration", "expected a file, got a folder") from None
    except OSError as exc:
        raise ConfigError(where, "judge.calibration", exc.strerror or "unreadable") from None
    if not raw.strip():
        raise ConfigError(where, "judge.calibration", "the calibration file is empty")
    if raw.startswith(b"\xef\xbb\xbf"):
        raise ConfigError(
            where,
            "judge.calibration",
            "starts with a byte-order mark: save it as UTF-8 without BOM",
        )
    try:
        d = json.loads(raw.decode("utf-8"))
    except (ValueError, RecursionError):  # bad UTF-8, bad JSON, a 5000-digit integer
        raise ConfigError(where, "", "expected a JSON calibration file") from None
    if not isinstance(d, dict):
        raise ConfigError(where, "", "expected a JSON object (written by harness calibrate)")
    return _File(p, raw, d)


def _tables(d: dict[str, Any], f: _Fields) -> _Tables:
    """The file's version checked and its `criteria` and `rates` tables: objects, naming
    only known criteria, not both empty."""
    version = f.count(d, "calibration_version", "", default=1)
    if version > CALIBRATION_VERSION:
        raise f.fail("calibration_version", "written by a newer harness")
    criteria = d.get("criteria")
    rates = d.get("rates", {})
    if not isinstance(criteria, dict):
        raise f.fail("criteria", "expected an object of per-criterion maps")
    if not isinstance(rates, dict):
        raise f.fail("rates", "expected an object of per-criterion rates")
    for section, table in (("criteria", criteria), ("rates", rates)):
        for name in table:
            if name not in CRITERIA:
                raise f.fail(
                    f"{section}.{name}", f"unknown criterion: expected {' or '.join(CRITERIA)}"
                )
    if not criteria and not rates:
        raise f.fail("criteria", f"expected a map (or rates) for {' and/or '.join(CRITERIA)}")
    return _Tables(criteria, rates)


def _platt_map(m: Any, field_: str, f: _Fields) -> PlattMap:
    """One criterion's map, `field_` its name in the file (criteria.NAME)."""
    if not isinstance(m, dict):
        raise f.fail(field_, "expected an object {a, b, n, positives}")
    n = f.count(m, "n", field_)
    positives = f.count(m, "positives", field_)
    if positives > n:
        raise f.fail(f"{field_}.positives", f"expected at most n = {n}")
    return PlattMap(
        f.number(m, "a", field_, PARAM_LIMIT), f.number(m, "b", field_, PARAM_LIMIT), n, positives
    )


def _error_rates(r: Any, field_: str, f: _Fields) -> ErrorRates:
    """One criterion's measured error rates, `field_` its name in the file (rates.NAME)."""
    if not isinstance(r, dict):
        raise f.fail(field_, "expected an object {tpr, fpr, positives, negatives}")
    extra = r.get("extra", {})
    return ErrorRates(
        tpr=f.share(r, "tpr", field_),
        fpr=f.share(r, "fpr", field_),
        positives=f.count(r, "positives", field_),
        negatives=f.count(r, "negatives", field_),
        basis=f.text(r, "basis") or "labels",
        extra=extra if isinstance(extra, dict) else {},
    )


def judge_key(spec: ComponentSpec) -> str:
    """What a calibration is tied to: the judge's model (and file hash), prompt version,
    mode and grade cut-offs, from its logged spec (never its endpoint or key)."""
    keep = ("model", "model_sha256", "prompt_version", "mode", "grade_cuts", "reasons")
    return json.dumps(
        {"name": spec.name, **{k: spec.args.get(k) for k in keep if k in spec.args}},
        sort_keys=True,
    )


UNTRUSTED_HINT = (
    "run harness generate (it writes the judge exam beside the questions), then harness "
    "calibrate --exam QUESTIONS.exam.jsonl --experiment EXPERIMENT, and set "
    "judge.calibration to the file it writes"
)
"""What to run when a run's judge has no measured error rates."""


MIN_MEASURED = 20
"""Answers and non-answers each that error rates must rest on before a run's rates are
called trusted: with fewer, a rate of 1.0 may be one lucky pair."""
MIN_TPR = 0.5
"""A judge that finds fewer of the exam's (or labels') answers than this says "no" of
most answers: its corrected rate rests on the few it finds, and is not called trusted."""
MAX_WIDTH = 0.5
"""Widest interval of a corrected rate that is called trusted: a rate somewhere between
8% and 100% tells a reader nothing, even when the raw rate lies inside it."""


_CORRECTED = (("complete_rate", "complete", 1), ("relevant_rate", "relevant", 0))
"""(stats["trust"] key, criterion, its column in `per_question`) of each corrected rate."""
_VERDICTS = ("trusted", "biased", "untrusted")
"""A run's trust verdicts, best first: a run gets its worst rate's."""


@dataclass(frozen=True)
class _RateCheck:
    """One judged rate against the judge's measured error rates."""

    name: str
    """Its key in stats["trust"]: complete_rate or relevant_rate."""
    entry: dict[str, Any]
    """Raw and corrected rate, interval and undefined share, as logged."""
    line: str
    """Its part of the trust statement."""
    verdict: str
    """One of _VERDICTS, for this rate alone."""


def trust_summary(
    per_question: Sequence[tuple[int, int, int]],
    cal: Calibration | None,
    *,
    lazy: bool = False,
    guessing: float | None = None,
) -> tuple[dict[str, Any], str | None]:
    """How far a run's judged rates can be trusted: (the run header's `stats["trust"]`,
    a warning line or None).

    `per_question` holds (chunks judged relevant, chunks judged relevant and complete,
    chunks judged) per question, after calibration. With a calibration that carries the
    judge's measured error rates (`Calibration.rates`, from the exam or labels), each
    judged rate comes with its Rogan-Gladen correction and interval
    (`metrics.trust.corrected_rate`) and a one-line statement; "trusted" when the raw
    rate lies inside the corrected rate's interval, "biased" when it does not,
    "untrusted" when the rates rest on fewer than MIN_MEASURED answers or non-answers,
    the judge finds fewer than MIN_TPR of the answers, the interval is wider than
    MAX_WIDTH, or the rates cannot correct (TPR <= FPR), or when the judge is guessing
    on this run's own chunks: `guessing`, the share of its probabilities between 0.4 and
    0.6 when the run found it too high (`pipeline.run.VerdictTally.guessing`). Error
    rates measured on an exam (or on labels of other questions) need not hold for a run
    the judge cannot decide: on CISI's abstracts, where the small judge agrees with the
    labels at kappa 0.24, two of three runs had more than half their probabilities
    there, and none of the TREC DL or handbook runs, where it agrees at 0.44-0.86.
    Without rates, the warning says what to run. Hit rate and MRR are not corrected:
    they are maxima over k chunks, not a share of chunks, and Rogan-Gladen does not
    apply to them. A lazily judged run's rates are over the chunks it chose to judge (it
    stops at the first answer), a biased sample: they are reported uncorrected, with a
    note.
    """
    if cal is None or not cal.rates:
        return _without_rates(cal)
    out: dict[str, Any] = {
        "basis": cal.basis,
        "calibration": cal.path,
        "rates": {c: r.to_dict() for c, r in cal.rates.items()},
    }
    if sum(n for _, _, n in per_question) == 0:
        out["statement"] = "untrusted: no chunk was judged"
        return out, None
    if lazy:
        out["statement"] = (
            "not corrected: lazy judging stopped at each question's first answer, so the "
            "judged chunks are not a sample of the retrieved ones"
        )
        return out, None
    checks = [
        _check_rate(name, cal.rates[crit], [(q[col], q[2]) for q in per_question])
        for name, crit, col in _CORRECTED
        if crit in cal.rates
    ]
    out.update({c.name: c.entry for c in checks})
    lines = [c.line for c in checks]
    verdict = max((c.verdict for c in checks), key=_VERDICTS.index, default="trusted")
    if guessing is not None:
        out["guessing"] = round(guessing, 4)
        lines.append(
            f"the judge is guessing on this run ({guessing:.0%} of its probabilities lie "
            "between 0.4 and 0.6), so error rates measured elsewhere need not hold here"
        )
        verdict = "untrusted"
    out["verdict"] = verdict
    out["statement"] = f"{verdict}: " + "; ".join(lines)
    return out, None if verdict == "trusted" else out["statement"]


def _without_rates(cal: Calibration | None) -> tuple[dict[str, Any], str]:
    """`trust_summary` of a run whose judge has no measured error rates: untrusted, and
    the warning says what to run."""
    why = (
        "the judge's error rates are unknown, so its complete-rate and hit rate carry no error bar"
        if cal is None
        else f"the calibration {cal.path} holds no measured error rates (written by an "
        "older harness)"
    )
    return {"basis": None, "statement": f"untrusted: {why}"}, f"{why}: {UNTRUSTED_HINT}"


def _check_rate(name: str, r: ErrorRates, counts: Sequence[tuple[int, int]]) -> _RateCheck:
    """The judged rate `name` over (judged yes, judged) per question, corrected with the
    judge's error rates `r`."""
    from harness.metrics.trust import corrected_rate

    c = corrected_rate(counts, r.tpr, r.fpr, r.positives, r.negatives)
    entry = {
        "raw": round(c.raw, 4),
        "corrected": None if c.corrected is None else round(c.corrected, 4),
        "low": None if c.low is None else round(c.low, 4),
        "high": None if c.high is None else round(c.high, 4),
        "undefined_share": round(c.undefined_share, 4),
    }
    label = name.replace("_", "-")
    if c.corrected is None or c.low is None or c.high is None:
        line = f"{label} {c.raw:.0%} cannot be corrected (TPR {r.tpr:.2f} <= FPR {r.fpr:.2f})"
        return _RateCheck(name, entry, line, "untrusted")
    doubts = []
    if r.positives < MIN_MEASURED or r.negatives < MIN_MEASURED:
        doubts.append(f"only {r.positives} answers and {r.negatives} non-answers")
    if r.tpr < MIN_TPR:
        doubts.append(f"it finds only {r.tpr:.0%} of the answers")
    if c.high - c.low > MAX_WIDTH:
        doubts.append("the interval is too wide to read")
    line = (
        f"judged {label} {c.raw:.0%}, corrected {c.corrected:.0%} "
        f"[{c.low:.0%}, {c.high:.0%}] (TPR {r.tpr:.2f}, FPR {r.fpr:.2f}, {r.basis}"
        + "".join(f"; {d}" for d in doubts)
        + ")"
    )
    verdict = "untrusted" if doubts else "trusted" if c.low <= c.raw <= c.high else "biased"
    return _RateCheck(name, entry, line, verdict)


def trust_statement(trust: dict[str, Any] | None) -> str:
    """The line a reader sees first about a run's numbers: its trust summary's statement
    (`trust_summary`, the run header's `stats.trust`), and, when the judge's error rates
    are unknown, what to run to measure them. A run recorded without a trust summary (an
    older harness, or one that stopped before judging) says so."""
    if not trust or not isinstance(trust.get("statement"), str):
        return f"untrusted: this run records no trust summary; {UNTRUSTED_HINT}"
    statement: str = trust["statement"]
    if not trust.get("rates") and UNTRUSTED_HINT not in statement:
        statement = f"{statement}; {UNTRUSTED_HINT}"
    return statement


def is_trust_warning(warning: str, trust: dict[str, Any] | None) -> bool:
    """Whether a run warning only repeats its trust statement (shown on its own line)."""
    statement = trust.get("statement") if trust else None
    return warning.endswith(UNTRUSTED_HINT) or (isinstance(statement, str) and warning == statement)
