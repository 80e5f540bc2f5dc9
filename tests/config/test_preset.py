"""judge.criteria_preset: the reference-free guide's criteria, word for word (issue 15)."""

from __future__ import annotations

import pytest

from harness.config import (
    CRITERIA_PRESETS,
    DEFAULT_COMPLETE,
    DEFAULT_RELEVANT,
    experiment_from_dict,
    parse_experiment,
)
from harness.errors import ConfigError

BASE = {"corpus": {"sources": ["docs"]}, "questions": {"file": "q.jsonl"}}

# Typed from the issue, line breaks joined by single spaces.
GUIDE_RELEVANT = (
    "Does the response share significant domain overlap with the query, such as technical "
    "content for technical queries, even if it discusses different aspects or use cases "
    "within that domain? A response discussing a broader/narrower aspect of the same domain "
    "should be considered relevant."
)
GUIDE_COMPLETE = (
    "Does the response contain the specific information requested in the query? The "
    "response should contain an answer to the core information need expressed in the query, "
    "not just related information. For example, if asking about a specific code, price, or "
    "date, that exact information must be present. It is acceptable for the response to "
    "contain additional information as long as the core information need is met."
)


def test_the_guide_preset_gives_the_issue_texts_word_for_word():
    c = parse_experiment({**BASE, "judge": {"criteria_preset": "reference-free-guide"}})
    assert c.judge.criteria.relevant == GUIDE_RELEVANT
    assert c.judge.criteria.complete == GUIDE_COMPLETE
    assert CRITERIA_PRESETS["reference-free-guide"] == (GUIDE_RELEVANT, GUIDE_COMPLETE)


def test_the_default_preset_keeps_todays_texts_and_explicit_ones():
    c = parse_experiment(BASE)
    assert c.judge.criteria_preset == ""
    assert (c.judge.criteria.relevant, c.judge.criteria.complete) == (
        DEFAULT_RELEVANT,
        DEFAULT_COMPLETE,
    )
    own = parse_experiment({**BASE, "judge": {"criteria": {"relevant": "On topic?"}}})
    assert own.judge.criteria.relevant == "On topic?"
    assert own.judge.criteria.complete == DEFAULT_COMPLETE


def test_a_preset_by_override_and_its_resolved_config_round_trips():
    c = parse_experiment(BASE, overrides=["criteria_preset=reference-free-guide"])
    assert c.judge.criteria.complete == GUIDE_COMPLETE
    # a run header holds the resolved texts beside the preset: it reads back unchanged
    again = experiment_from_dict(c.to_dict())
    assert again.judge == c.judge
    # and a preset set on a recorded config that had the default texts
    plain = experiment_from_dict(
        parse_experiment(BASE).to_dict(), ["judge.criteria_preset=reference-free-guide"]
    )
    assert plain.judge.criteria.relevant == GUIDE_RELEVANT


@pytest.mark.parametrize("name", ["relevant", "complete"])
def test_a_preset_beside_texts_of_your_own_is_an_error_naming_the_field(name):
    data = {
        **BASE,
        "judge": {"criteria_preset": "reference-free-guide", "criteria": {name: "Mine?"}},
    }
    with pytest.raises(ConfigError) as exc:
        parse_experiment(data, path="exp.toml")
    assert exc.value.field == f"judge.criteria.{name}"
    assert "judge.criteria_preset" in str(exc.value) and "\n" not in str(exc.value)


def test_an_unknown_preset_is_an_error_naming_the_field():
    with pytest.raises(ConfigError) as exc:
        parse_experiment({**BASE, "judge": {"criteria_preset": "ragas"}})
    assert exc.value.field == "judge.criteria_preset"
    assert "reference-free-guide" in str(exc.value)
