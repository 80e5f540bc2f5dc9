"""The PostgreSQL engine against a real server (tests/postgres.py): the store, signed rows,
schema versions, claims with expiry, and one-line errors without the password."""

from __future__ import annotations

import threading
import time

import psycopg
import pytest

from harness.errors import HarnessError
from harness.stores import VerdictCache, open_storage
from harness.stores.base import SignedStore
from harness.stores.postgres import SCHEMA_VERSION, PostgresStore
from harness.stores.verdicts import FILE as VERDICTS_FILE
from harness.types import CriterionVerdict
from tests.postgres import PASSWORD

YES = CriterionVerdict(criterion="relevant", value=True, reason="says so", raw="yes")


def test_store_round_trip_and_tables_with_a_schema_version(pg_url):
    store = PostgresStore(pg_url, "harness_verdicts")
    store.put_many({"a": b"\x00one", "b": b"two"})
    store.put_many({"a": b"uno"})
    assert store.get_many(["a", "b", "c"]) == {"a": b"uno", "b": b"two"}
    assert store.get_many([]) == {}
    assert store.count() == 2
    store.close()
    with psycopg.connect(pg_url) as conn:
        versions = dict(conn.execute("SELECT component, version FROM harness_schema").fetchall())
    assert versions["harness_verdicts"] == SCHEMA_VERSION


def test_a_newer_schema_is_refused_in_one_line(pg_url):
    PostgresStore(pg_url, "harness_verdicts").close()
    with psycopg.connect(pg_url, autocommit=True) as conn:
        conn.execute("UPDATE harness_schema SET version = 99 WHERE component = 'harness_verdicts'")
    with pytest.raises(HarnessError) as err:
        PostgresStore(pg_url, "harness_verdicts")
    message = str(err.value)
    assert "schema version 99" in message and "upgrade harness" in message
    assert PASSWORD not in message and "\n" not in message


def test_cache_rows_are_signed_in_the_database_and_a_forged_one_is_not_believed(pg_url):
    storage = open_storage(pg_url, cache_dir=None)  # type: ignore[arg-type]
    cache = storage.verdict_cache()
    assert isinstance(cache.store, SignedStore)
    cache.put("k", YES)
    assert cache.get("k") == YES
    cache.flush()  # puts are written behind
    with psycopg.connect(pg_url, autocommit=True) as conn:
        raw = bytes(conn.execute("SELECT value FROM harness_verdicts").fetchone()[0])
        assert raw.startswith(b"hm1:")  # tagged, not the bare verdict
        forged = raw[:-3] + b"xyz"
        conn.execute("UPDATE harness_verdicts SET value = %s", (forged,))
    assert cache.get("k") is None and cache.rejected == 1
    cache.close()


def test_two_workers_needing_one_verdict_pay_once(pg_url):
    storage = open_storage(pg_url, cache_dir=None)  # type: ignore[arg-type]
    first, second = storage.verdict_cache(), storage.verdict_cache()
    assert first.claim("k") is None  # first pays
    got: list[CriterionVerdict | None] = []
    waiter = threading.Thread(target=lambda: got.append(second.claim("k")))
    waiter.start()
    time.sleep(0.5)
    assert waiter.is_alive()  # second waits for first's verdict rather than paying
    first.put("k", YES)
    waiter.join(10)
    assert got == [YES] and second.waited == 1
    first.close()
    second.close()


def test_a_dead_claimants_claim_expires_and_a_failed_payment_is_released(pg_url):
    storage = open_storage(pg_url, cache_dir=None, claim_ttl_s=1.0)  # type: ignore[arg-type]
    dead, live = storage.verdict_cache(), storage.verdict_cache()
    assert dead.claim("k") is None
    dead._stop.set()  # as after kill -9: nothing renews its claims any more
    t0 = time.monotonic()
    assert live.claim("k") is None  # taken over once the claim expired
    assert 0.5 < time.monotonic() - t0 < 10
    live.release("k")  # paying failed: another may try at once
    assert dead.claim("x") is None and dead.claim("x") is None  # its own claim again
    live.close()
    dead.close()


def test_claims_in_a_cache_folder_serve_processes_of_one_machine(tmp_path):
    first = VerdictCache(tmp_path / VERDICTS_FILE)
    second = VerdictCache(tmp_path / VERDICTS_FILE)
    assert first.claim("k") is None
    done = threading.Event()
    threading.Thread(target=lambda: (second.claim("k"), done.set())).start()
    time.sleep(0.3)
    assert not done.is_set()
    first.put("k", YES)
    assert done.wait(10)
    first.close()
    second.close()


@pytest.mark.parametrize("problem", ["wrong password", "unreachable", "no such database"])
def test_connection_errors_are_one_line_without_the_password(postgres, problem):
    url = {
        "wrong password": postgres.url("postgres", password="wrong-password-4471"),
        "unreachable": postgres.url("postgres").replace(f":{postgres.port}/", ":9/"),
        "no such database": postgres.url("no_such_db"),
    }[problem]
    with pytest.raises(HarnessError) as err:
        open_storage(url, cache_dir=None)  # type: ignore[arg-type]
    message = str(err.value)
    assert "\n" not in message and "cannot connect to PostgreSQL" in message
    assert PASSWORD not in message and "wrong-password-4471" not in message
    assert "harness:***@127.0.0.1" in message
