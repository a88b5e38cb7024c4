"""Keeps a model server on a leash: it stops whenever kgqa stops, however kgqa ends.

`qa.llm.serve.serve` starts the server through this script (standard library only, so that it
starts in a few milliseconds and holds no model):

    python -I -S keeper.py CONFIG_JSON

    kgqa ─► keeper (this script, its own session) ─► server (its own session: llama.cpp, vLLM)
                                                        └─► the server's workers

- SIGTERM, SIGINT or SIGHUP to the keeper: SIGTERM to the server's process group, SIGKILL after
  ``grace_s``; SIGUSR1: SIGKILL at once.
- kgqa gone, even by SIGKILL: the same stop. The parent-death signal (SIGTERM) brings the news at
  once where kgqa started the keeper from its main thread (the kernel ties the signal to the
  starting *thread*); the keeper also polls its parent, which covers every other case.
- The keeper is a child subreaper: whatever the server started and left behind when it exited
  (a worker, a daemonised helper) is reparented to the keeper, which kills it before exiting.
- The server dies by SIGKILL if the keeper itself is SIGKILLed (its own parent-death signal).

The keeper exits with the server's status (128 + N when the server died of signal N).
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import select
import signal
import sys
import time
from typing import Any, NoReturn

_PR_SET_PDEATHSIG = 1
_PR_SET_CHILD_SUBREAPER = 36
_POLL_S = 0.2


def _log(line: str) -> None:
    print(f"kgqa keeper: {line}", file=sys.stderr, flush=True)


def _signal_group(pid: int, sig: int) -> None:
    """``sig`` to the group led by ``pid`` (or to ``pid`` alone, before it has made its group)."""
    try:
        os.killpg(pid, sig)
    except ProcessLookupError:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, sig)


def _children() -> list[int]:
    """Live children of this process (the server's orphans, reparented here: we subreap)."""
    me, found = str(os.getpid()), []
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[1].decode() == me and fields[0] != b"Z":
            found.append(int(name))
    return found


def _reap_orphans(within_s: float = 5.0) -> int:
    """SIGKILL and collect every child left; returns how many were killed."""
    killed: set[int] = set()
    deadline = time.monotonic() + within_s
    while (left := _children()) and time.monotonic() < deadline:
        for pid in left:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            killed.add(pid)
        time.sleep(0.01)
        with contextlib.suppress(ChildProcessError):
            while os.waitpid(-1, os.WNOHANG)[0] > 0:
                pass
    return len(killed)


def _exec_server(argv: list[str]) -> NoReturn:
    """In the server's process: its own session, death with the keeper, default signals."""
    try:
        os.setsid()
        ctypes.CDLL(None).prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP, signal.SIGUSR1):
            signal.signal(sig, signal.SIG_DFL)
        for sig in (signal.SIGPIPE, signal.SIGXFSZ):  # as subprocess does
            signal.signal(sig, signal.SIG_DFL)
        os.execvp(argv[0], argv)
    except BaseException as exc:
        _log(f"cannot start {argv[0]}: {exc}")
    os._exit(127)


def keep(argv: list[str], parent: int, grace_s: float, pdeathsig: bool) -> int:
    """Run ``argv`` as the kept server until it exits; returns the exit code to leave with."""
    libc = ctypes.CDLL(None)
    if pdeathsig:
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGTERM, 0, 0, 0)
    libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)
    state: dict[str, Any] = {"server": None, "deadline": None}

    def stop(signum: int, frame: object) -> None:
        if state["deadline"] is None:
            state["deadline"] = time.monotonic() + grace_s
            if state["server"] is not None:
                _signal_group(state["server"], signal.SIGTERM)

    def kill_now(signum: int, frame: object) -> None:
        state["deadline"] = 0.0
        if state["server"] is not None:
            _signal_group(state["server"], signal.SIGKILL)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, stop)
    signal.signal(signal.SIGUSR1, kill_now)
    if os.getppid() != parent:  # kgqa died before the death signal was armed
        return 1
    server = os.fork()
    if server == 0:
        _exec_server(argv)
    state["server"] = server
    if state["deadline"] is not None:  # asked to stop while starting
        _signal_group(server, signal.SIGTERM)
    try:
        exited = os.pidfd_open(server)
    except OSError:  # kernels before 5.3: poll
        exited = -1
    while (done := os.waitpid(server, os.WNOHANG))[0] == 0:
        if state["deadline"] is None and os.getppid() != parent:
            _log(f"kgqa (pid {parent}) is gone: stopping the server")
            stop(signal.SIGTERM, None)
        if state["deadline"] is not None and time.monotonic() >= state["deadline"]:
            _signal_group(server, signal.SIGKILL)
        if exited >= 0:
            select.select([exited], [], [], _POLL_S)
        else:
            time.sleep(_POLL_S / 10)
    _signal_group(server, signal.SIGKILL)  # what is left of its process group
    if n := _reap_orphans():
        _log(f"killed {n} process(es) the server left behind")
    code = os.waitstatus_to_exitcode(done[1])
    return code if code >= 0 else 128 - code


def main(argv: list[str]) -> NoReturn:
    """Entry point: ``argv[0]`` is the JSON configuration (argv, parent, grace_s, pdeathsig)."""
    cfg = json.loads(argv[0])
    sys.exit(keep(cfg["argv"], int(cfg["parent"]), float(cfg["grace_s"]), bool(cfg["pdeathsig"])))


if __name__ == "__main__":
    main(sys.argv[1:])
