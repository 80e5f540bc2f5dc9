"""Redaction by value: the keys this process holds, and credentials in every URL, never
leave it, in logs, result files, error lines or output.

Each kind of key the issue found leaking is tried: an `sk-` key, a JWT-like key with
dots (all of it must go, not just up to the first dot), a key that looks like nothing and
that an endpoint echoes raw in an error body, and `user:password@` and `?api-key=`
inside HARNESS_JUDGE_BASE_URL.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from harness import secrets
from harness.judge import ChatJudge
from harness.llm import safe_error
from harness.log.io import append_jsonl, write_json_atomic
from harness.testing import Act, FakeOpenAI, answer_any
from tests.conftest import DATA

ROOT = Path(__file__).resolve().parents[2]

SK_KEY = "sk-proj-T3stKey_0123456789abcdefXYZ"
JWT_KEY = "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiJoYXJuZXNzLXRlc3QifQ.c2lnbmF0dXJlLXBhcnQtNDI"
PLAIN_KEY = "Zq8v0plainKeyThatLooksLikeNothing42"


def parts(key: str) -> list[str]:
    """Pieces of a key that must not survive either (a JWT's parts after a dot)."""
    return [key, *(p for p in key.split(".") if len(p) >= 6)]


def assert_gone(key: str, text: str) -> None:
    for piece in parts(key):
        assert piece not in text, f"{piece!r} leaked in {text!r}"


def test_an_sk_key_goes_even_without_being_remembered():
    text = f"Error code: 401 - {{'error': {{'message': 'Incorrect API key provided: {SK_KEY}'}}}}"
    out = secrets.redact(text)
    assert_gone(SK_KEY, out)
    assert "Incorrect API key provided: sk-***" in out


def test_a_jwt_like_key_goes_whole_not_up_to_its_first_dot():
    for text in (f"Bearer {JWT_KEY}", f"key={JWT_KEY}.", f"token '{JWT_KEY}' refused"):
        out = secrets.redact(text)
        assert_gone(JWT_KEY, out)
    assert secrets.redact(f"Authorization: Bearer {JWT_KEY} refused") == (
        "Authorization: Bearer *** refused"
    )


def test_a_remembered_key_goes_in_every_form_an_endpoint_may_echo():
    secrets.remember(PLAIN_KEY)
    quoted = PLAIN_KEY + '"\\/'  # a key with characters JSON and URLs escape
    secrets.remember(quoted)
    body = json.dumps({"error": {"message": f"bad key {PLAIN_KEY}", "echo": quoted}})
    out = secrets.redact(f"Error code: 400 - {body} sent {quoted}")
    assert PLAIN_KEY not in out and "Zq8v0plain" not in out
    assert json.loads(out.split(" - ", 1)[1].rsplit(" sent ", 1)[0])  # still valid JSON
    short = "abc1234"  # shorter than MIN_LENGTH: never remembered, never masked
    secrets.remember(short)
    assert secrets.redact(f"value {short}") == f"value {short}"


def test_safe_error_cuts_after_redacting_so_no_prefix_survives():
    secrets.remember(PLAIN_KEY)
    for key in (PLAIN_KEY, SK_KEY, JWT_KEY):
        message = "x" * 290 + f" key {key} more"
        out = safe_error(message)
        assert len(out) <= 300
        assert key[:6] not in out[280:], out[280:]


@pytest.mark.parametrize(
    ("url", "secret_parts", "kept"),
    [
        (
            "http://judgeuser:pa55-Word-Secret@127.0.0.1:8080/v1",
            ["pa55-Word-Secret"],
            "http://judgeuser:***@127.0.0.1:8080/v1",
        ),
        (
            "https://h.example/v1?api-key=QuerySecret123&deployment=x",
            ["QuerySecret123"],
            "https://h.example/v1?api-key=***&deployment=***",
        ),
        (
            "https://u:p%40ss-w0rd@h.example/v1?api_key=k1k2k3k4k5&token=t1t2t3t4&sig=s1s2s3",
            ["p%40ss-w0rd", "k1k2k3k4k5", "t1t2t3t4", "s1s2s3"],
            "https://u:***@h.example/v1?api_key=***&token=***&sig=***",
        ),
        (
            "postgresql://user:db-pa55word@db.example:5432/optuna",
            ["db-pa55word"],
            "postgresql://user:***@db.example:5432/optuna",
        ),
        # every query value may be a key (#26): whatever its name
        ("http://127.0.0.1:9/v1?monkey=1", [], "http://127.0.0.1:9/v1?monkey=***"),
        (
            "https://fn.example/api?code=AzFnC0de-1234&auth=Au7h&x-functions-key=FnK3y-5678",
            ["AzFnC0de-1234", "Au7h", "FnK3y-5678"],
            "https://fn.example/api?code=***&auth=***&x-functions-key=***",
        ),
    ],
)
def test_credentials_in_urls_are_masked(url, secret_parts, kept):
    assert secrets.redact_url(url) == kept
    text = secrets.redact(f"judge endpoint {url} is unreachable")
    for piece in secret_parts:
        assert piece not in text


def test_every_query_value_of_a_remembered_url_is_masked_in_free_text():
    """A short value (under MIN_LENGTH) is masked as its `name=value` pair, so ordinary
    text holding the same word is left alone."""
    secrets.remember_url("https://gw.example/v1?code=Shrt1&region=eu-west-long-1")
    out = secrets.redact("POST https://gw.example/v1/chat?code=Shrt1&region=eu-west-long-1 401")
    assert "Shrt1" not in out and "eu-west-long-1" not in out
    assert out == "POST https://gw.example/v1/chat?code=***&region=*** 401"
    assert secrets.redact("the word Shrt1 alone") == "the word Shrt1 alone"


def test_the_judge_spec_and_messages_hold_no_url_credentials():
    url = "http://judgeuser:pa55-Word-Secret@127.0.0.1:9/v1?api-key=QuerySecret123"
    judge = ChatJudge(base_url=url, model="m", api_key="")
    assert judge.spec.args["base_url"] == "http://judgeuser:***@127.0.0.1:9/v1?api-key=***"
    assert "pa55" not in judge.client.describe() and "QuerySecret" not in judge.client.describe()
    # the URL's credentials are remembered: echoed on their own, they go too
    assert secrets.redact("denied for pa55-Word-Secret / QuerySecret123") == "denied for *** / ***"


def test_secret_named_environment_variables_are_remembered():
    env = {
        "SOME_SERVICE_API_KEY": "svc-value-0001-abcdef",
        "GH_TOKEN": "gh-value-0002-abcdef",
        "DB_PASSWORD": "db-value-0003-abcdef",
        "CLIENT_SECRET": "cs-value-0004-abcdef",
        "SSH_KEY_PATH": "/home/someone/projects",  # names where a key is, not the key
        "EDITOR": "not-a-secret-value",
    }
    secrets.remember_environment(env)
    text = " ".join(env.values())
    out = secrets.redact(text)
    for name in ("SOME_SERVICE_API_KEY", "GH_TOKEN", "DB_PASSWORD", "CLIENT_SECRET"):
        assert env[name] not in out
    assert "/home/someone/projects" in out and "not-a-secret-value" in out


def test_result_files_are_written_redacted_and_stay_valid_json(tmp_path):
    secrets.remember(PLAIN_KEY)
    record = {
        "error": f"BadRequestError: echoed {PLAIN_KEY} and Bearer {JWT_KEY}",
        "config": {"judge": {"base_url": "http://u:pa55-Word-Secret@h/v1?api-key=abcdefgh"}},
        "raw": ['quote " and backslash \\ stay', SK_KEY],
    }
    write_json_atomic(tmp_path / "header.json", record)
    append_jsonl(tmp_path / "questions.jsonl", record)
    for name in ("header.json", "questions.jsonl"):
        text = (tmp_path / name).read_text()
        for key in (PLAIN_KEY, JWT_KEY, SK_KEY, "pa55-Word-Secret", "abcdefgh"):
            assert_gone(key, text)
        back = json.loads(text)
        assert back["raw"][0] == 'quote " and backslash \\ stay'
        assert back["config"]["judge"]["base_url"] == "http://u:***@h/v1?api-key=***"


def test_every_query_value_of_an_endpoint_field_is_masked_when_written(tmp_path):
    """Never remembered, never secret-named: an endpoint field's query values go anyway."""
    record = {"judge": {"base_url": "http://h/v1?deployment=Dep1&code=C0d3"}, "note": "?x=1"}
    write_json_atomic(tmp_path / "header.json", record)
    back = json.loads((tmp_path / "header.json").read_text())
    assert back["judge"]["base_url"] == "http://h/v1?deployment=***&code=***"
    assert back["note"] == "?x=1"  # not an endpoint field: text stays as it was


# ------------------------------------------------------------- end to end, real CLI


def harness(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "harness", *args],
        capture_output=True,
        text=True,
        cwd=ROOT,
        env={**os.environ, "HF_HUB_OFFLINE": "1", **env},
        timeout=600,
    )


def _echo_some(n: int, prompt: str) -> Act:
    """Every third request answers; the others are errors that echo the key."""
    if n % 3 == 1:
        return Act("echo_key_400")
    if n % 3 == 0:
        return Act("echo_key_500")
    return answer_any(n, prompt)


# The variable's name has no KEY/TOKEN/SECRET/PASSWORD in it: only reading it as the
# judge's key makes the process remember its value.
KEY_VAR = "HARNESS_TEST_JUDGE_CREDENTIAL"


def _run(server: FakeOpenAI, tmp_path: Path, key: str, *extra: str, env=None):
    return harness(
        "run",
        str(DATA / "experiment.toml"),
        "--set",
        "judge.model=fake",
        "--set",
        f"judge.api_key_env={KEY_VAR}",
        "--set",
        "judge.max_retries=0",
        "--results-dir",
        str(tmp_path / "r"),
        "--cache-dir",
        str(tmp_path / "c"),
        *extra,
        env={KEY_VAR: key, **(env or {})},
    )


def _written(tmp_path: Path) -> str:
    (run_dir,) = (tmp_path / "r").iterdir()
    return (run_dir / "header.json").read_text() + (run_dir / "questions.jsonl").read_text()


@pytest.mark.parametrize("key", [JWT_KEY, PLAIN_KEY], ids=["jwt", "plain"])
def test_a_key_echoed_by_the_endpoint_is_nowhere_in_the_results_or_stderr(tmp_path, key):
    with FakeOpenAI(_echo_some) as server:
        proc = _run(server, tmp_path, key, "--set", f"judge.base_url={server.base_url}")
    assert proc.returncode == 0, proc.stderr
    assert f"Bearer {key}" in server.authorizations  # the key was sent, and echoed
    written = _written(tmp_path)
    assert "Incorrect API key provided: ***" in written  # the echo was recorded, masked
    for text in (written, proc.stderr, proc.stdout):
        assert_gone(key, text)


def test_a_key_echoed_until_the_run_stops_is_not_in_its_error_line(tmp_path):
    with FakeOpenAI(lambda n, p: Act("echo_key_400")) as server:
        proc = _run(server, tmp_path, JWT_KEY, "--set", f"judge.base_url={server.base_url}")
    assert proc.returncode == 2, proc.stderr
    (line,) = [x for x in proc.stderr.splitlines() if x.startswith("harness: error:")]
    assert "in a row" in line and "Incorrect API key provided" in line
    header = json.loads((next((tmp_path / "r").iterdir()) / "header.json").read_text())
    assert header["status"] == "failed"
    for text in (_written(tmp_path), proc.stderr, proc.stdout):
        assert_gone(JWT_KEY, text)


def test_credentials_in_the_judge_url_from_the_environment_are_not_written(tmp_path):
    with FakeOpenAI(_echo_some) as server:
        host = server.base_url.split("//", 1)[1]
        url = f"http://judgeuser:pa55-Word-Secret@{host}?api-key=QuerySecret123"
        proc = _run(server, tmp_path, SK_KEY, env={"HARNESS_JUDGE_BASE_URL": url})
    assert proc.returncode == 0, proc.stderr
    assert server.requests > 0
    written = _written(tmp_path)
    header = json.loads(written[: written.index("\n}\n") + 2])
    assert header["components"]["judge"]["args"]["base_url"] == (
        f"http://judgeuser:***@{host}?api-key=***"
    )
    for text in (written, proc.stderr, proc.stdout):
        for piece in ("pa55-Word-Secret", "QuerySecret123", *parts(SK_KEY)):
            assert piece not in text


GATEWAY_SECRETS = ("AzFnC0de-1234", "Au7h", "FnK3y-5678", "pa55-Word-Secret")


def test_query_secrets_in_the_judge_url_are_masked_in_everything_written_or_printed(tmp_path):
    """`?code=`, `?auth=` (short), `?x-functions-key=` and `user:password@` on
    judge.base_url (#26 item 3): header.json (config and component spec), the questions
    file, the log on stderr and `show` print them masked; the endpoint still got them."""
    with FakeOpenAI(_echo_some) as server:
        host = server.base_url.split("//", 1)[1]
        query = "code=AzFnC0de-1234&auth=Au7h&x-functions-key=FnK3y-5678"
        url = f"http://judgeuser:pa55-Word-Secret@{host}?{query}"
        proc = _run(server, tmp_path, SK_KEY, "--set", f"judge.base_url={url}")
    assert proc.returncode == 0, proc.stderr
    assert server.requests > 0
    masked = f"http://judgeuser:***@{host}?code=***&auth=***&x-functions-key=***"
    (run_dir,) = (tmp_path / "r").iterdir()
    header = json.loads((run_dir / "header.json").read_text())
    assert header["config"]["judge"]["base_url"] == masked
    assert header["components"]["judge"]["args"]["base_url"] == masked
    shown = [harness("show", str(run_dir), *fmt, env={}) for fmt in ((), ("--format", "json"))]
    for p in shown:
        assert p.returncode == 0, p.stderr
    for text in (_written(tmp_path), proc.stderr, proc.stdout, *(p.stdout for p in shown)):
        for piece in GATEWAY_SECRETS:
            assert piece not in text
