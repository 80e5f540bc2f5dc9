"""Where a credential goes: the endpoint fields of every component, in one table.

An endpoint field is a URL a request (with a key) is sent to, or the name of the
environment variable whose value is sent as that key. A results folder (a run's
header.json, a sweep's sweep.json) is shared and editable, so these fields are never
taken from one (`strip_endpoints`); they come from the user's experiment, `--set` or
environment. A component's own settings (`[<table>.settings.<name>]`) follow the naming
rule instead: a setting called `base_url` / `api_key_env`, or ending `_base_url` /
`_api_key_env`, is an endpoint field too.
"""

from __future__ import annotations

import copy
import urllib.parse
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

URL_SUFFIX = "base_url"
KEY_SUFFIX = "api_key_env"


@dataclass(frozen=True)
class EndpointFields:
    """One component's endpoint in the experiment: table, URL field, key-variable field."""

    component: str
    """What calls it: judge, generate, llm reranker, embedder, batch."""
    table: str
    url: str
    key_env: str

    @property
    def dotted(self) -> str:
        """The URL field as `--set` takes it."""
        return f"{self.table}.{self.url}"


ENDPOINTS: tuple[EndpointFields, ...] = (
    EndpointFields("judge", "judge", "base_url", "api_key_env"),
    EndpointFields("generate", "generate", "base_url", "api_key_env"),
    EndpointFields("llm reranker", "retrieval", "llm_base_url", "llm_api_key_env"),
    EndpointFields("embedder", "embedder", "base_url", "api_key_env"),
    EndpointFields("batch", "batch", "base_url", "api_key_env"),
)
"""Every component's endpoint fields (a table that does not exist yet, such as batch,
is simply absent from a config)."""

SETTINGS_TABLES = ("retrieval", "embedder", "judge")
"""Tables whose `settings` sub-tables hold components' own settings."""


def endpoint_fields() -> tuple[EndpointFields, ...]:
    """The endpoint fields of every component: the one list strippers and checks use."""
    return ENDPOINTS


URL_EXPECTED = "expected an http:// or https:// URL with a host"
"""What a base URL must be (`is_http_url`), for the error that refuses one."""


def is_http_url(url: str) -> bool:
    """Whether `url` can be an endpoint's base URL: an http:// or https:// URL with a host
    ("localhost:8000/v1", without its scheme, is not; nor is a port that is no number)."""
    try:
        parts = urllib.parse.urlsplit(url)
        _ = parts.port  # raises for a port that is no number
    except ValueError:
        return False
    return parts.scheme in ("http", "https") and bool(parts.hostname)


def is_endpoint_setting(name: str) -> bool:
    """Whether a component setting of this name routes a request or a key."""
    return name.endswith((URL_SUFFIX, KEY_SUFFIX))


def _settings_paths(data: dict[str, Any]) -> Iterator[tuple[str, str, str]]:
    """(table, component, setting) of every endpoint setting in the settings sub-tables."""
    for table in SETTINGS_TABLES:
        section = data.get(table)
        settings = section.get("settings") if isinstance(section, dict) else None
        if not isinstance(settings, dict):
            continue
        for component, values in settings.items():
            if isinstance(values, dict):
                for name in values:
                    if isinstance(name, str) and is_endpoint_setting(name):
                        yield table, component, name


def strip_endpoints(data: dict[str, Any]) -> dict[str, Any]:
    """A deep copy of a config mapping (`ExperimentConfig.to_dict()` form) without any
    endpoint field: the `ENDPOINTS` table's and the components' own."""
    out = copy.deepcopy(data)
    for e in ENDPOINTS:
        table = out.get(e.table)
        if isinstance(table, dict):
            table.pop(e.url, None)
            table.pop(e.key_env, None)
    for table, component, name in list(_settings_paths(out)):
        out[table]["settings"][component].pop(name, None)
    return out


def replace_endpoints(data: dict[str, Any], source: Any | None, defaults: Any) -> dict[str, Any]:
    """`data` with every endpoint field taken from `source` (an ExperimentConfig, the
    user's) or, when None, from `defaults` (an ExperimentConfig of defaults); a
    component's own endpoint settings are dropped (its defaults apply unless the user's
    `source` sets them)."""
    out = strip_endpoints(data)
    origin = source if source is not None else defaults
    for e in ENDPOINTS:
        table = out.get(e.table)
        given = getattr(origin, e.table, None)
        if not isinstance(table, dict) or given is None:
            continue
        table[e.url] = getattr(given, e.url)
        table[e.key_env] = getattr(given, e.key_env)
    if source is not None:
        user = source.to_dict()
        for table, component, name in list(_settings_paths(user)):
            values = out.setdefault(table, {}).setdefault("settings", {})
            values.setdefault(component, {})[name] = user[table]["settings"][component][name]
    return out
