"""Process bookkeeping for the lifecycle tests: what a process started, and whether it still runs.

Processes are told apart by pid *and* start time (a pid can be reused). Zombies count as gone: they
run nothing and hold no port or memory; reaping them is their parent's (or init's) business.
"""

from __future__ import annotations

import ctypes
import os
import signal
import socket
import time
from collections.abc import Callable
from pathlib import Path

__all__ = [
    "die_with_parent",
    "port_is_free",
    "process_tree",
    "processes_naming",
    "processes_with_env",
    "sandbox_uid_block",
    "still_running",
    "uid_processes",
    "wait_for",
]

_PR_SET_PDEATHSIG = 1
_SANDBOX_UID_BASE = 200_000  # qa.snippets.sandbox._UID_BASE


def _stat(pid: int) -> tuple[str, int, str] | None:
    """(state, parent pid, start time) of ``pid``; None when it is gone."""
    try:
        raw = Path(f"/proc/{pid}/stat").read_bytes()
    except OSError:
        return None
    fields = raw.rsplit(b")", 1)[1].split()
    return fields[0].decode(), int(fields[1]), fields[19].decode()


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:160]
    except OSError:
        return "?"


def _pids() -> list[int]:
    return [int(name) for name in os.listdir("/proc") if name.isdigit()]


def process_tree(root: int) -> dict[int, str]:
    """``root`` and every live descendant, as pid -> start time."""
    parents: dict[int, int] = {}
    starts: dict[int, str] = {}
    for pid in _pids():
        stat = _stat(pid)
        if stat is not None and stat[0] != "Z":
            parents[pid], starts[pid] = stat[1], stat[2]
    tree, frontier = {}, [root]
    while frontier:
        pid = frontier.pop()
        if pid in starts:
            tree[pid] = starts[pid]
            frontier += [child for child, parent in parents.items() if parent == pid]
    return tree


def still_running(processes: dict[int, str]) -> list[str]:
    """Those of ``processes`` (pid -> start time) still running, as 'pid command line'."""
    out = []
    for pid, start in processes.items():
        stat = _stat(pid)
        if stat is not None and stat[0] != "Z" and stat[2] == start:
            out.append(f"{pid} {_cmdline(pid)}")
    return out


def processes_with_env(name: str, value: str) -> list[str]:
    """Running processes whose environment holds ``name=value`` (a tag the test set)."""
    needle = f"{name}={value}".encode()
    out = []
    for pid in _pids():
        try:
            environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        stat = _stat(pid)
        if needle in environ and stat is not None and stat[0] != "Z" and pid != os.getpid():
            out.append(f"{pid} {_cmdline(pid)}")
    return out


def sandbox_uid_block(kgqa_pid: int) -> range:
    """The uids the sandbox of the kgqa process ``kgqa_pid`` gives its runs."""
    first = _SANDBOX_UID_BASE + (kgqa_pid % 1000) * 1000
    return range(first, first + 1000)


def uid_processes(uids: range) -> list[str]:
    """Running processes whose real uid is in ``uids``."""
    out = []
    for pid in _pids():
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if int(fields["Uid"].split()[0]) in uids and not fields["State"].strip().startswith("Z"):
            out.append(f"{pid} {_cmdline(pid)}")
    return out


def port_is_free(port: int, host: str = "127.0.0.1") -> bool:
    """Could a server bind ``host:port`` now (as servers do, with SO_REUSEADDR)?"""
    with socket.socket() as sock:
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            sock.bind((host, port))
        except OSError:
            return False
        return True


def wait_for(condition: Callable[[], bool], within_s: float, step_s: float = 0.05) -> float | None:
    """Seconds until ``condition()`` held, or None if it did not within ``within_s``."""
    start = time.monotonic()
    while time.monotonic() - start < within_s:
        if condition():
            return time.monotonic() - start
        time.sleep(step_s)
    return None


def die_with_parent() -> None:
    """``preexec_fn`` for a process a test starts: SIGKILL it when the test process dies, and let
    it take SIGINT as from a terminal (a test run started in the background, as ``cmd &`` in a
    script, inherits SIGINT ignored, and Python then installs no KeyboardInterrupt handler)."""
    ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    signal.signal(signal.SIGINT, signal.SIG_DFL)


def processes_naming(text: str) -> list[str]:
    """Running processes whose command line contains ``text`` (e.g. ``"parent": PID`` in the
    configuration kgqa hands its sandbox supervisors and server keepers)."""
    needle = text.encode()
    out = []
    for pid in _pids():
        try:
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
        except OSError:
            continue
        stat = _stat(pid)
        if needle in cmdline and stat is not None and stat[0] != "Z" and pid != os.getpid():
            out.append(f"{pid} {_cmdline(pid)}")
    return out
