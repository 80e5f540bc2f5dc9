"""Which decision mattered: parameter importances over a sweep's complete trials.

Optuna's PED-ANOVA evaluator, not fANOVA: our space is conditional (chunk_overlap's
range depends on the chunk size, fetch_k exists only where something reranks), and
fANOVA (in Optuna 5) evaluates only the intersection search space, so it silently drops
chunk_overlap as soon as two chunk sizes give it different ranges, and fetch_k whenever
one trial does not rerank. PED-ANOVA scores each parameter over the trials that have it.
It also needs no random forest (deterministic, fast on a handful of trials) and does not
fail when every trial scores the same, which fANOVA does.
"""

from __future__ import annotations

import math

import optuna

from harness.sweep.shared import REPEAT_ATTR

IMPORTANCE_METHOD = "PED-ANOVA"
"""The evaluator named in show and the report."""


def param_importances(study: optuna.Study, objective: str = "") -> tuple[dict[str, float], str]:
    """(parameter -> share of the first objective's variation, summing to 1; a note).

    Over the study's complete trials, each setting once (a repeat, a complete trial's
    settings proposed again, is left out), and only the parameters that took more than
    one value among them. The note says why the importances are empty (fewer than 2
    complete trials, fewer than 2 parameters that varied, every trial scoring the same,
    or the evaluator's error), or is "" when they are not. With two objectives the importances
    are those of the first; `objective`, its metric id, is only used in the note.
    """
    done = [
        t
        for t in study.get_trials(deepcopy=False, states=(optuna.trial.TrialState.COMPLETE,))
        if REPEAT_ATTR not in t.user_attrs
    ]
    if len(done) < 2:
        return {}, f"fewer than 2 complete trials ({len(done)})"
    varied = sorted(
        {
            n
            for t in done
            for n in t.params
            if len({repr(u.params[n]) for u in done if n in u.params}) > 1
        }
    )
    if len(varied) < 2:
        which = f"only {varied[0]}" if varied else "no parameter"
        return {}, f"{which} varied over the complete trials: nothing to attribute"
    values = [float(t.values[0]) for t in done]
    if len(set(values)) == 1:
        return {}, f"every complete trial scored the same ({objective or 'objective'})"
    # A single-objective copy in memory: PED-ANOVA then knows the direction of the first
    # objective without a `target`, and the study's storage is only read.
    copy = optuna.create_study(direction=study.directions[0])
    for t, v in zip(done, values, strict=True):
        copy.add_trial(
            optuna.trial.create_trial(params=t.params, distributions=t.distributions, value=v)
        )
    try:
        raw = optuna.importance.get_param_importances(
            copy,
            evaluator=optuna.importance.PedAnovaImportanceEvaluator(),
            params=varied,
            normalize=False,
        )
    except Exception as exc:  # the evaluator's errors come in many types
        return {}, f"PED-ANOVA failed: {type(exc).__name__}: {exc}"
    clipped = {k: max(0.0, float(v)) for k, v in raw.items() if math.isfinite(float(v))}
    total = sum(clipped.values())
    if total <= 0:
        return {}, "no parameter explains any of the objective's variation"
    return {k: v / total for k, v in sorted(clipped.items(), key=lambda kv: -kv[1])}, ""
