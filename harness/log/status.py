"""The statuses a run's header and a sweep's summary record, and what a status is now,
which its file may no longer say.

A process killed with SIGKILL (or by a power cut) never rewrites its header: the file says
"running" forever. Headers record the writer's pid and host, so a reader on the same host
can see that the process is gone and show the run as interrupted. The file itself is not
rewritten on read: reading stays free of side effects, and another host may know better.
"""

from __future__ import annotations

import functools
import os
import socket
import sys
from datetime import datetime
from typing import Protocol

STATUS_RUNNING = "running"
STATUS_DONE = "done"
STATUS_FAILED = "failed"
STATUS_INTERRUPTED = "interrupted"
STATUS_PRUNED = "pruned"

# A process that started this long after the record was written cannot have written it:
# the pid was reused (which takes a wrap of the pid space: hours, typically). The slack
# covers whole-second records and the wall clock being stepped since the process started.
_PID_REUSE_SLACK_S = 60.0


class _Status(Protocol):
    """What effective_status reads of a RunHeader or a SweepSummary (frozen records, so
    read-only properties here)."""

    @property
    def status(self) -> str: ...
    @property
    def pid(self) -> int | None: ...
    @property
    def host(self) -> str | None: ...


@functools.cache
def this_host() -> str:
    """The host name recorded in headers written by this machine."""
    return socket.gethostname()


def _proc_start_epoch(pid: int) -> float | None:
    """When process `pid` started (seconds since the epoch), on Linux; None elsewhere or
    when /proc cannot tell."""
    if not sys.platform.startswith("linux"):
        return None
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode("ascii", "replace")
        with open("/proc/stat", "rb") as f:
            boot = next(
                float(line.split()[1])
                for line in f.read().decode().splitlines()
                if line.startswith("btime ")
            )
        # The command name (field 2) may hold spaces and parentheses: fields after it
        # start after the last ')'. starttime is field 22, the 20th after the name.
        ticks = int(stat[stat.rindex(")") + 2 :].split()[19])
        return boot + ticks / os.sysconf("SC_CLK_TCK")
    except (OSError, ValueError, IndexError, StopIteration):
        return None


def _is_zombie(pid: int) -> bool:
    """True when `pid` has exited but its parent has not reaped it yet (Linux only)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read().decode("ascii", "replace")
        return stat[stat.rindex(")") + 2 :].split()[0] == "Z"
    except (OSError, ValueError, IndexError):
        return False


def process_alive(pid: int, since: str | None = None) -> bool:
    """Whether process `pid` of this host is still running, and (when `since` is a time
    written by that process, ISO 8601 with offset) started no later than that time.

    A pid we may not signal belongs to a live process of another user: alive."""
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    except (OSError, OverflowError):  # OverflowError: a pid no process can have (2**70)
        return False
    if _is_zombie(pid):
        return False
    if since:
        try:
            written = datetime.strptime(since, "%Y-%m-%dT%H:%M:%S%z").timestamp()
        except ValueError:
            return True
        started = _proc_start_epoch(pid)
        if started is not None and started > written + _PID_REUSE_SLACK_S:
            return False  # a later process that got the same pid
    return True


def effective_status(record: _Status) -> str:
    """A RunHeader's or SweepSummary's status as it is now: "interrupted" for one that says
    "running" but was written on this host by a process that is gone; else its status.

    The time the writer recorded (a run's started_at, a sweep's updated_at) tells a reused
    pid from the writer, on Linux."""
    if record.status != STATUS_RUNNING or record.pid is None or record.host != this_host():
        return record.status
    written_at = getattr(record, "started_at", None) or getattr(record, "updated_at", None)
    if process_alive(record.pid, written_at):
        return record.status
    return STATUS_INTERRUPTED
