"""The sandbox's first process: runs a snippet and makes sure nothing it started outlives the run.

`run_sandboxed` starts this file as ``python -I -S -c <its source> CONFIG_JSON`` (the package may
not be visible inside the sandbox's mount namespace, so only the standard library is imported):

    kgqa ─► supervisor: this script; root; new network and mount namespaces; unshared PID namespace
              └─► init: PID 1 of the new PID namespace; root; mounts its own /proc
                    └─► snippet: resource limits, no new privileges, unprivileged uid, exec'd

Only the children of the process that unshares a PID namespace live in it, hence the supervisor.
When the snippet exits, init gives what it left behind a short grace to end on its own (a
resource tracker that sees its parent gone), counts what is still there, writes a one-line JSON
report to ``report_fd`` and exits. The kernel then kills every process left in the namespace
(forked, double-forked, setsid, ignoring SIGTERM: PID namespaces cannot be left) and refuses new
forks there; the supervisor's wait for init returns only once the namespace is empty.

Where no PID namespace can be made (not root), init is an ordinary process: it finds the run's
processes by the run's dedicated uid (killed with ``kill(-1)`` from that uid, which no fork race
escapes) or, without one, by session (a process that calls setsid() is then out of reach; the
report says which of the three held the run).

SIGTERM to the supervisor (timeout, output limit, close) stops the run the same way at once. The
supervisor dies with its parent: ``PR_SET_PDEATHSIG`` where the caller asks for it, and in any
case it watches its parent and kills init when the parent is gone; init dies with the supervisor.
"""

from __future__ import annotations

import contextlib
import ctypes
import json
import os
import resource
import select
import signal
import sys
import time
from typing import Any, NoReturn

_PR_SET_PDEATHSIG = 1
_PR_SET_NO_NEW_PRIVS = 38
_MS_NOSUID, _MS_NODEV, _MS_NOEXEC = 2, 4, 8


class _Stop(Exception):
    """Raised by init's SIGTERM handler: stop the run now."""


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _die_with_parent(lifeline: int | None = None) -> None:
    """SIGKILL this process when its parent dies; exit now if the parent is already gone.

    ``lifeline`` is the read end of a pipe whose write end only the parent holds: readable
    (end of file) means the parent died before the death signal was armed.
    """
    _libc().prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if lifeline is not None and select.select([lifeline], [], [], 0)[0]:
        os._exit(1)


def _state(pid: int) -> str | None:
    """One-letter state of ``pid`` (``Z`` for a zombie), None when it is gone."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            stat = f.read()
    except OSError:
        return None
    return stat[stat.rfind(b")") + 2 :][:1].decode()


def _field(pid: int, name: str) -> int | None:
    """An integer field of /proc/PID/status (the first number of ``Uid:``), None when gone."""
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith(name + ":"):
                    return int(line.split()[1])
    except (OSError, ValueError):
        return None
    return None


def _session(pid: int) -> int | None:
    try:
        return os.getsid(pid)
    except OSError:
        return None


def _ns(pid: int | str) -> str | None:
    try:
        return os.readlink(f"/proc/{pid}/ns/pid")
    except OSError:
        return None


def members(mode: str, key: int | str, exclude: set[int]) -> list[int]:
    """Live processes of the run: in PID namespace ``key``, of uid ``key`` or in session ``key``."""
    out: list[int] = []
    for name in os.listdir("/proc"):
        if not name.isdigit() or int(name) in exclude:
            continue
        pid = int(name)
        if mode == "pidns":
            belongs = _ns(pid) == key
        elif mode == "uid":
            belongs = _field(pid, "Uid") == key
        else:
            belongs = _session(pid) == key
        if belongs and _state(pid) not in (None, "Z"):
            out.append(pid)
    return out


def _reap_children() -> None:
    """Collect exited children (orphans are reparented to init: it must wait for them)."""
    try:
        while os.waitpid(-1, os.WNOHANG)[0] > 0:
            pass
    except ChildProcessError:
        pass


def kill_all(mode: str, key: int | str, exclude: set[int], within_s: float = 5.0) -> None:
    """Outside a PID namespace: SIGKILL the run's processes until none is left (or time is up)."""
    deadline = time.monotonic() + within_s
    while members(mode, key, exclude) and time.monotonic() < deadline:
        if mode == "uid":  # as that uid, kill(-1) reaches all of them, even those forked meanwhile
            killer = os.fork()
            if killer == 0:
                try:
                    os.setgroups([])
                    os.setgid(int(key))
                    os.setuid(int(key))
                    for _ in range(100):
                        os.kill(-1, signal.SIGKILL)
                finally:
                    os._exit(0)
            os.waitpid(killer, 0)
        else:
            for pid in members(mode, key, exclude):
                with contextlib.suppress(ProcessLookupError):
                    os.kill(pid, signal.SIGKILL)
        time.sleep(0.01)


def _exec_snippet(cfg: dict[str, Any], errors: int) -> NoReturn:
    """In the snippet's process: limits, no new privileges, drop to the uid, exec.

    A limit is one value (soft and hard alike) or a [soft, hard] pair: the CPU limit of a Python
    snippet is a pair, whose soft limit the snippet's runner raises while it imports."""
    try:
        os.close(cfg["report_fd"])
        for which, value in cfg["limits"]:
            soft, hard = value if isinstance(value, list) else (value, value)
            resource.setrlimit(which, (soft, hard))
        _libc().prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
        if cfg["uid"] is not None:
            os.setgroups([])
            os.setgid(cfg["uid"])
            os.setuid(cfg["uid"])
        _libc().prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)  # cleared by setuid: re-arm
        # as subprocess does: Python ignores SIGPIPE and SIGXFSZ; the snippet gets the defaults
        for sig in (signal.SIGPIPE, signal.SIGXFSZ, signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            signal.signal(sig, signal.SIG_DFL)
        os.execvp(cfg["argv"][0], cfg["argv"])
    except BaseException as exc:
        os.write(errors, f"{type(exc).__name__}: {exc}".encode()[:1000])
    os._exit(127)


def _mount_proc() -> bool:
    """A /proc of this PID namespace: the snippet sees its own processes, none of the host's."""
    flags = _MS_NOSUID | _MS_NODEV | _MS_NOEXEC
    return bool(_libc().mount(b"proc", b"/proc", b"proc", flags, None) == 0)


def _cpu_of(pid: int) -> dict[str, float]:
    """What a still-running ``pid`` used: CPU seconds (its own and its waited-for children's)
    and seconds its threads spent runnable but waiting for a CPU (the machine's load); {} when
    it is gone or /proc does not tell."""
    out: dict[str, float] = {}
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        ticks = os.sysconf("SC_CLK_TCK")
        out["cpu_s"] = sum(int(x) for x in fields[11:15]) / ticks
    except (OSError, ValueError, IndexError):
        return {}
    waited = 0
    try:
        for task in os.listdir(f"/proc/{pid}/task"):
            with open(f"/proc/{pid}/task/{task}/schedstat") as f:
                waited += int(f.read().split()[1])
        out["runq_s"] = waited / 1e9
    except (OSError, ValueError, IndexError):
        pass
    return out


def _settle(mode: str, key: int | str, exclude: set[int], grace_s: float) -> list[int]:
    """Wait up to ``grace_s`` for the run's other processes to end; return those still running."""
    deadline = time.monotonic() + grace_s
    while True:
        _reap_children()
        left = members(mode, key, exclude)
        if not left or time.monotonic() >= deadline:
            return left
        time.sleep(0.01)


def _init(cfg: dict[str, Any], lifeline: int) -> NoReturn:
    """The run's init: start the snippet, wait for it, count and kill what is left, report."""
    _die_with_parent(lifeline)
    os.close(lifeline)
    own_proc = bool(cfg["own_proc"]) and _mount_proc()
    me = os.getpid()
    key: int | str
    if cfg["pidns"]:
        mode, key, exclude = "pidns", _ns("self") or "", {me}
    elif cfg["uid"] is not None:
        mode, key, exclude = "uid", int(cfg["uid"]), {me}
    else:
        mode, key, exclude = "session", os.getsid(0), {me, os.getppid()}
    report: dict[str, Any] = {"status": None, "exec_error": None, "leftover": 0}
    report.update(cleanup=mode, own_proc=own_proc)

    armed = [True]  # a stop request raises once, and only while the run is being waited for

    def stop(signum: int, frame: object) -> None:
        if armed[0]:
            armed[0] = False
            raise _Stop

    signal.signal(signal.SIGTERM, stop)
    errors_r, errors_w = os.pipe2(os.O_CLOEXEC)
    snippet = -1
    try:
        snippet = os.fork()
        if snippet == 0:
            os.close(errors_r)
            _exec_snippet(cfg, errors_w)
        os.close(errors_w)
        failure = os.read(errors_r, 1000)
        if failure:
            report["exec_error"] = failure.decode("utf-8", "replace")
        while True:
            pid, status, usage = os.wait4(-1, 0)
            if pid == snippet:
                report["status"] = os.waitstatus_to_exitcode(status)
                report["cpu_s"] = round(usage.ru_utime + usage.ru_stime, 3)
                break
        left = _settle(mode, key, exclude, cfg["grace_s"])
        armed[0] = False
    except _Stop:
        if snippet > 0:  # stopped from outside (time, output): what it used until now
            report.update({k: round(v, 3) for k, v in _cpu_of(snippet).items()})
        left = members(mode, key, exclude)
    report["leftover"] = len([p for p in left if p != snippet])
    if mode != "pidns":
        kill_all(mode, key, exclude)
    os.write(cfg["report_fd"], (json.dumps(report) + "\n").encode())
    os._exit(0)  # as PID 1: the kernel kills every process left in the namespace


def _supervise(cfg: dict[str, Any]) -> NoReturn:
    """Start init, forward SIGTERM to it, and kill it if our parent goes away."""
    if cfg["pdeathsig"]:
        _die_with_parent()
    if os.getppid() != cfg["parent"]:
        os._exit(1)
    lifeline_r, lifeline_w = os.pipe()
    init = os.fork()
    if init == 0:
        os.close(lifeline_w)
        _init(cfg, lifeline_r)
    os.close(lifeline_r)

    def forward(signum: int, frame: object) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.kill(init, signal.SIGTERM)

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
        signal.signal(sig, forward)
    try:
        exited = os.pidfd_open(init)
    except OSError:  # kernels before 5.3: poll
        exited = -1
    while os.waitpid(init, os.WNOHANG)[0] == 0:
        if os.getppid() != cfg["parent"]:  # nobody to report to: end the run the hard way
            os.kill(init, signal.SIGKILL)
        if exited >= 0:
            select.select([exited], [], [], 0.5)
        else:
            time.sleep(0.01)
    os._exit(0)


def main(argv: list[str]) -> NoReturn:
    """Entry point: ``argv[0]`` is the JSON configuration `run_sandboxed` wrote."""
    _supervise(json.loads(argv[0]))


if __name__ == "__main__":
    main(sys.argv[1:])
