"""Run untrusted code in a separate, contained process.

Containment, from strongest to weakest (each layer reported in `SandboxResult.isolation`):

- a new PID namespace whose init is ours (`qa.snippets.sandbox_init`): when the run ends (the
  snippet exits, times out or floods its output) init counts what the snippet left running and
  exits, and the kernel kills every process in the namespace: forks, double forks, setsid
  daemons and processes that ignore SIGTERM alike. Leftovers make the run fail
  (`SandboxResult.leftover_killed`). The namespace has its own /proc: no host process is visible;
- a new network namespace (only a private loopback: nothing outside is reachable); where the kernel
  refuses, an audit hook in the interpreter that denies `socket.connect`/`bind`/`sendto`;
- a new mount namespace: a private tmpfs over `/tmp`, `/var/tmp` and `/dev/shm`, the scratch
  directory bound at `/tmp/sandbox`, and directories that only root may enter (e.g. `/root`)
  replaced by an empty tmpfs that shows only the interpreter's own tree;
- a dedicated unprivileged uid/gid per run (when the host runs as root), with no new privileges
  (set-user-ID programs do not elevate); without a PID namespace, every process of that uid is
  killed after the run;
- resource limits: CPU seconds, address space, file size, open files, processes. A Python
  snippet's CPU limit counts its own code only: its runner (`runner_source`) times every import
  on its own, under a generous limit of its own, and gives the code its budget on top of what the
  imports took (``import torch`` may take seconds of CPU; ``while True: pass`` is stopped after
  the code's budget, `SandboxResult.killed_reason` "cpu limit");
- its own session, which is all that can be cleaned up where neither a PID namespace nor a
  dedicated uid is available (`SandboxResult.cleanup == "session"`: a process that calls setsid()
  then survives the run);
- a minimal environment (PATH, HOME, LANG, TMPDIR): none of the caller's variables.

If kgqa itself dies during a run, the run dies with it (parent-death signal, and the supervisor
watches its parent).
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import itertools
import json
import os
import resource
import select
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import IO, Any

from pydantic import BaseModel, Field

from kg.errors import SnippetError
from qa.snippets import sandbox_init

__all__ = [
    "AFTER_FILE",
    "SANDBOX_DIR",
    "SNIPPET_FILE",
    "SandboxResult",
    "SandboxedWorker",
    "live_processes_of",
    "run_sandboxed",
    "runner_source",
    "sandbox_capabilities",
]

SANDBOX_DIR = "/tmp/sandbox"
"""Where the scratch directory appears inside the sandbox (when a mount namespace is available)."""

_CLONE_NEWNS = 0x00020000
_CLONE_NEWPID = 0x20000000
_CLONE_NEWNET = 0x40000000
_MS_NOSUID, _MS_NODEV, _MS_BIND, _MS_REC, _MS_PRIVATE = 2, 4, 4096, 16384, 1 << 18
_SIOCSIFFLAGS = 0x8914
_IFF_UP_LOOPBACK_RUNNING = 0x1 | 0x8 | 0x40
_UID_BASE = 200_000
_uid_counter = itertools.count()
_LEFTOVER_GRACE_S = 0.5  # what a snippet left gets this long to end on its own before it counts
_STOP_GRACE_S = 5.0  # a stopped run's supervisor gets this long to report before SIGKILL

AFTER_FILE = "kgqa_after.py"
"""Run after the snippet, in its namespace (a post-run check); tracebacks name this file."""
SNIPPET_FILE = "snippet.py"

# Used only when no network namespace can be made: deny sockets from Python code.
_AUDIT_HOOK = """
def _kgqa_deny(event, args):
    if event in ("socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg"):
        addr = args[1] if len(args) > 1 else None
        if not (isinstance(addr, (str, bytes))):
            raise PermissionError("network access is disabled in this sandbox")
_s.addaudithook(_kgqa_deny)
del _kgqa_deny
"""

# The snippet's process: time imports on their own, then run the snippet, then the check.
_RUNNER = """
import builtins as _b, importlib as _il, math as _m, os as _os, resource as _r, runpy as _rp
import sys as _s, threading as _th, time as _t
_CODE_S, _HARD_S = {code_s!r}, {hard_s!r}
_imports = [_t.process_time()]  # the interpreter's start is not the code's either
_depth = _th.local()
def _limit(soft):
    soft = max(1, min(_m.ceil(soft), _HARD_S))  # whole seconds, never fewer than the code's
    try:
        _r.setrlimit(_r.RLIMIT_CPU, (soft, _HARD_S))
    except (ValueError, OSError):
        pass
def _timed(real, fast):
    def timed(*args, **kwargs):
        if getattr(_depth, "n", 0) or fast(*args, **kwargs):
            return real(*args, **kwargs)
        _depth.n = 1
        _limit(_HARD_S)
        start = _t.process_time()
        try:
            return real(*args, **kwargs)
        finally:
            _imports[0] += _t.process_time() - start
            _depth.n = 0
            _limit(_imports[0] + _CODE_S)
    return timed
def _loaded(name, globals=None, locals=None, fromlist=(), level=0):
    return not level and not fromlist and name in _s.modules
_b.__import__ = _timed(_b.__import__, _loaded)
_il.import_module = _timed(_il.import_module, lambda name, package=None: name in _s.modules)
_limit(_imports[0] + _CODE_S)
{audit}
_s.argv = [{snippet!r}]
try:
    _g = _rp.run_path({snippet!r}, run_name="__main__")
    if _os.path.exists({after!r}):
        with open({after!r}, encoding="utf-8") as _f:
            exec(compile(_f.read(), {after!r}, "exec"), _g)
finally:  # the interpreter's exit finalises what was imported (~1 s of CPU for torch): not code
    _limit(_t.process_time() + _imports[0] + _CODE_S)
"""


def runner_source(code_s: int, import_s: int, *, audit_hook: bool = False) -> str:
    """The program a Python snippet runs as: its imports timed on their own (each top-level
    import raises the CPU limit to the imports' ceiling while it runs, then sets it to what the
    interpreter's start and the imports took plus `code_s`, rounded up to whole seconds: the
    code gets at least its `code_s`), then `snippet.py`, then the after-check in its namespace,
    then the interpreter's exit with as much again as the imports and the code were allowed.

    >>> src = runner_source(10, 120)
    >>> compile(src, "runner", "exec") is not None and "_CODE_S, _HARD_S = 10, 130" in src
    True
    """
    return _RUNNER.format(
        code_s=code_s,
        hard_s=code_s + import_s,
        audit=_AUDIT_HOOK if audit_hook else "",
        snippet=SNIPPET_FILE,
        after=AFTER_FILE,
    )


class SandboxResult(BaseModel):
    """What a sandboxed run did."""

    returncode: int | None = Field(description="exit status; negative: killed by that signal")
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    output_truncated: bool = False
    killed_reason: str | None = Field(
        default=None, description="'timeout' | 'output limit' | 'cpu limit'"
    )
    duration_s: float = 0.0
    cpu_s: float | None = Field(
        default=None, description="CPU seconds the program used (imports included), if known"
    )
    runq_s: float | None = Field(
        default=None,
        description="of a run stopped from outside: seconds its threads were ready to run but "
        "waited for a CPU (the machine's load), if known",
    )
    cpu_limit_s: int | None = Field(
        default=None, description="CPU seconds its code was allowed (imports not counted)"
    )
    network: str = Field(description="'netns' | 'audit-hook' | 'none'")
    isolation: list[str] = Field(default_factory=list, description="the layers that were applied")
    leftover_killed: int = Field(
        default=0, description="processes the snippet left running, killed when the run ended"
    )
    cleanup: str = Field(
        default="pidns",
        description="how the run's processes were found and killed: 'pidns' (all of them: the "
        "kernel kills a PID namespace with its init), 'uid' (every process of the run's uid), "
        "'session' (only those that stayed in the run's session)",
    )

    @property
    def ok(self) -> bool:
        """True when the process exited with status 0 on its own and left nothing running."""
        return (
            self.returncode == 0
            and not self.timed_out
            and self.killed_reason is None
            and self.leftover_killed == 0
        )

    def summary(self) -> str:
        """One line: how it ended, and what it left running.

        >>> SandboxResult(returncode=0, network="netns", duration_s=0.25).summary()
        'exit 0 in 0.25 s'
        >>> left = SandboxResult(returncode=0, network="netns", duration_s=0.7, leftover_killed=3)
        >>> left.summary()
        'exit 0 in 0.70 s; 3 leftover processes killed'
        >>> SandboxResult(returncode=-24, network="netns", duration_s=10.3, cpu_s=10.02,
        ...               killed_reason="cpu limit", cpu_limit_s=10).summary()
        'stopped at the CPU limit (10 s for the code, imports not counted) after 10.02 s of CPU'
        """
        if self.timed_out:
            how = f"timed out after {self.duration_s:.2f} s"
            if self.cpu_s is not None:
                how += f" ({self.cpu_s:.2f} s of CPU"
                how += (
                    f", {self.runq_s:.2f} s waiting for a CPU)" if self.runq_s is not None else ")"
                )
        elif self.killed_reason == "cpu limit":
            limit = f" ({self.cpu_limit_s} s for the code, imports not counted)"
            used = f" after {self.cpu_s:.2f} s of CPU" if self.cpu_s is not None else ""
            how = f"stopped at the CPU limit{limit if self.cpu_limit_s else ''}{used}"
        elif self.killed_reason:
            how = f"killed ({self.killed_reason}) after {self.duration_s:.2f} s"
        elif self.returncode is not None and self.returncode < 0:
            name = signal.Signals(-self.returncode).name
            how = f"killed by {name} after {self.duration_s:.2f} s"
        else:
            how = f"exit {self.returncode} in {self.duration_s:.2f} s"
        if self.leftover_killed:
            n = self.leftover_killed
            how += f"; {n} leftover process{'es' if n > 1 else ''} killed"
        return how


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(rc: int, what: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


@functools.cache
def sandbox_capabilities() -> frozenset[str]:
    """Which isolation layers this host allows: subset of {'netns', 'mountns', 'pidns', 'setuid'}.

    Probed once per process by forking a child that tries each one.
    """
    caps: set[str] = set()
    probes = {"netns": _CLONE_NEWNET, "mountns": _CLONE_NEWNS, "pidns": _CLONE_NEWPID}
    for name, flag in probes.items():
        pid = os.fork()
        if pid == 0:  # child: try, report through the exit status, never return
            code = 1
            try:
                code = 0 if _libc().unshare(flag) == 0 else 1
            finally:
                os._exit(code)
        _, status = os.waitpid(pid, 0)
        if os.waitstatus_to_exitcode(status) == 0:
            caps.add(name)
    if os.geteuid() == 0:
        caps.add("setuid")
    return frozenset(caps)


def _loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        import fcntl

        fcntl.ioctl(s, _SIOCSIFFLAGS, struct.pack("16sh22x", b"lo", _IFF_UP_LOOPBACK_RUNNING))


def _hidden_ancestor(path: Path) -> Path | None:
    """The highest ancestor of `path` that others may not enter (e.g. /root, mode 700), if any."""
    for parent in reversed(path.parents):
        if parent != Path("/") and not os.stat(parent).st_mode & 0o001:
            return parent
    return None


def _runtime_roots() -> list[Path]:
    """Directories the interpreter needs to read: its installation and its virtualenv."""
    roots = {Path(sys.base_prefix).resolve(), Path(sys.prefix).resolve()}
    roots.add(Path(os.path.realpath(sys.executable)).parent)
    return sorted(roots)


def _setup_mounts(scratch: str, libc: ctypes.CDLL, tmpfs_mb: int) -> None:
    """In the child (root, new mount namespace): private /tmp, scratch at SANDBOX_DIR."""
    _check(libc.mount(None, b"/", None, _MS_REC | _MS_PRIVATE, None), "make / private")
    keep_fds: list[tuple[int, Path]] = [(os.open(scratch, os.O_RDONLY), Path(SANDBOX_DIR))]
    hidden: set[Path] = set()
    private = [Path("/tmp"), Path("/var/tmp"), Path("/dev/shm")]
    for root in _runtime_roots():
        anc = _hidden_ancestor(root)
        if anc is not None:
            hidden.add(anc)
        # an interpreter tree under a hidden directory, or under /tmp (a checkout there, as CI
        # may use), is bound back into the sandbox at the same path
        if anc is not None or any(root.is_relative_to(p.resolve()) for p in private):
            keep_fds.append((os.open(root, os.O_RDONLY), root))
    opts = f"size={tmpfs_mb}m,mode=1777".encode()
    for point in [*map(str, private), *map(str, sorted(hidden))]:
        if os.path.isdir(point):
            flags = _MS_NOSUID | _MS_NODEV
            _check(libc.mount(b"tmpfs", point.encode(), b"tmpfs", flags, opts), f"tmpfs {point}")
    for fd, target in keep_fds:
        os.makedirs(target, exist_ok=True)
        src = f"/proc/self/fd/{fd}".encode()
        _check(libc.mount(src, str(target).encode(), None, _MS_BIND | _MS_REC, None), "bind")
        os.close(fd)


def _preexec(scratch: str, caps: frozenset[str], tmpfs_mb: int) -> None:
    """Runs in the supervisor between fork and exec: the namespaces (limits and the uid are
    applied by `sandbox_init` to the snippet's process only)."""
    libc = _libc()
    if "netns" in caps:
        _check(libc.unshare(_CLONE_NEWNET), "unshare(CLONE_NEWNET)")
        _loopback_up()  # a private loopback, so in-process servers (gloo, TCPStore) still work
    if "mountns" in caps:
        _check(libc.unshare(_CLONE_NEWNS), "unshare(CLONE_NEWNS)")
        _setup_mounts(scratch, libc, tmpfs_mb)
        os.chdir(SANDBOX_DIR)
    else:
        os.chdir(scratch)
    if "pidns" in caps:  # the supervisor's children (init, and all it starts) live in it
        _check(libc.unshare(_CLONE_NEWPID), "unshare(CLONE_NEWPID)")


def live_processes_of(uid: int) -> list[int]:
    """Pids of processes running as `uid` that are not yet dead (zombies excluded)."""
    return sandbox_init.members("uid", uid, set())


def _reap_uid(uid: int) -> None:
    """Kill every process that still runs as `uid` (a fork bomb cannot outrun it)."""
    sandbox_init.kill_all("uid", uid, set())


@functools.cache
def _init_source() -> str:
    return Path(sandbox_init.__file__).read_text(encoding="utf-8")


def _read_report(fd: int, timeout_s: float = 2.0) -> dict[str, Any]:
    """The JSON line `sandbox_init` wrote on `fd` ({} when it wrote none); closes `fd`."""
    data = b""
    try:
        while select.select([fd], [], [], timeout_s)[0]:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            data += chunk
    finally:
        os.close(fd)
    try:
        report = json.loads(data.decode("utf-8", "replace").strip().splitlines()[-1])
    except (IndexError, ValueError):
        return {}
    return report if isinstance(report, dict) else {}


class _Supervised:
    """A process started under `sandbox_init` (supervisor -> init -> the program), and its report.

    `die_with_thread`: arm the parent-death signal, which the kernel ties to the *thread* that
    starts the process; only right when that thread waits for the run (`run_sandboxed`). The
    supervisor also watches its parent, so a long-lived worker dies with kgqa either way.
    """

    def __init__(
        self,
        argv: Sequence[str],
        *,
        scratch: str,
        limits: dict[int, int | list[int]],
        caps: frozenset[str],
        uid: int | None,
        tmpfs_mb: int,
        die_with_thread: bool,
        pipe_stdin: bool = False,
        stderr: int = subprocess.PIPE,
        text: bool = False,
    ) -> None:
        report_r, report_w = os.pipe()
        config = {
            "argv": list(argv),
            "limits": sorted(limits.items()),
            "uid": uid,
            "report_fd": report_w,
            "pidns": "pidns" in caps,
            "own_proc": {"pidns", "mountns"} <= caps,
            "parent": os.getpid(),
            "pdeathsig": die_with_thread,
            "grace_s": _LEFTOVER_GRACE_S,
        }
        box_dir = SANDBOX_DIR if "mountns" in caps else scratch
        try:
            self.process: subprocess.Popen[Any] = subprocess.Popen(
                [sys.executable, "-I", "-S", "-c", _init_source(), json.dumps(config)],
                stdin=subprocess.PIPE if pipe_stdin else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=stderr,
                env=_env(box_dir),
                start_new_session=True,
                close_fds=True,
                pass_fds=(report_w,),
                text=text,
                preexec_fn=functools.partial(_preexec, scratch, caps, tmpfs_mb),
            )
        except (OSError, subprocess.SubprocessError) as exc:
            os.close(report_r)
            raise SnippetError(f"could not start the sandbox ({argv[0]}): {exc}") from exc
        finally:
            os.close(report_w)
        self._report_fd = report_r
        self._report: dict[str, Any] | None = None
        cpu = limits.get(resource.RLIMIT_CPU)
        self.cpu_hard_s: int | None = cpu[-1] if isinstance(cpu, list) else cpu
        self.uid = uid
        self.cleanup = "pidns" if "pidns" in caps else ("uid" if uid is not None else "session")

    def stop(self) -> None:
        """End the run now: init counts and kills what runs, and reports; SIGKILL if it hangs."""
        if self.process.poll() is not None:
            return  # already reaped: its pid may belong to someone else now
        with contextlib.suppress(ProcessLookupError):
            os.kill(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=_STOP_GRACE_S)
        except subprocess.TimeoutExpired:
            _kill_group(self.process.pid)  # init dies with the supervisor: so does its namespace

    def finish(self) -> dict[str, Any]:
        """Wait for the end; init's report (`{}` if it could not report), with `leftover`
        counting any process of the run's uid that was still found (then killed) afterwards.
        Idempotent."""
        if self._report is None:
            self.process.wait()
            report = _read_report(self._report_fd)
            if self.uid is not None and (stray := live_processes_of(self.uid)):
                _reap_uid(self.uid)
                report["leftover"] = int(report.get("leftover") or 0) + len(stray)
            self._report = report
        return self._report


class _CappedReader(threading.Thread):
    """Reads a pipe to its end, keeping at most `cap` bytes; calls `on_overflow` once past it."""

    def __init__(self, stream: IO[bytes], cap: int, on_overflow: threading.Event) -> None:
        super().__init__(daemon=True)
        self.stream, self.cap, self.on_overflow = stream, cap, on_overflow
        self.data = bytearray()
        self.truncated = False

    def run(self) -> None:
        while chunk := os.read(self.stream.fileno(), 65536):
            room = self.cap - len(self.data)
            if room > 0:
                self.data += chunk[:room]
            if len(chunk) > room:
                self.truncated = True
                self.on_overflow.set()


def _env(scratch_in_box: str) -> dict[str, str]:
    bin_dir = os.path.dirname(sys.executable)
    return {
        "PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin",
        "HOME": scratch_in_box,
        "TMPDIR": scratch_in_box,
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        # thread pools count against RLIMIT_NPROC: keep them small
        "OMP_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }


def run_sandboxed(
    code: str | None = None,
    *,
    argv: Sequence[str] | None = None,
    files: dict[str, str] | None = None,
    after: str | None = None,
    timeout_s: float = 10.0,
    memory_mb: int = 1024,
    cpu_s: int | None = None,
    import_cpu_s: int = 120,
    fsize_mb: int = 64,
    nofile: int = 256,
    nproc: int = 64,
    output_limit: int = 64 * 1024,
) -> SandboxResult:
    """Run Python `code` (as `snippet.py` in a scratch directory) or a command `argv`, contained.

    `files` are written into the scratch directory first. Python code runs with `after` after it,
    in its namespace (as `AFTER_FILE`: tracebacks name it). Limits: `timeout_s` of
    wall clock; `cpu_s` CPU seconds (default: the wall clock's), which for Python code count its
    own code only: its imports are timed on their own, up to `import_cpu_s` more. `output_limit`
    caps the bytes kept from each of stdout and stderr; a process that writes more is killed. The
    host is never affected by what the code does; a failure to start the sandbox at all raises
    `SnippetError`.
    """
    if (code is None) == (argv is None):
        raise SnippetError("run_sandboxed needs exactly one of `code` or `argv`")
    caps = sandbox_capabilities()
    uid = _UID_BASE + (os.getpid() % 1000) * 1000 + next(_uid_counter) % 1000
    uid_or_none = uid if "setuid" in caps else None
    base = tempfile.mkdtemp(prefix="kgqa-sandbox-")
    scratch = os.path.join(base, "work")
    os.mkdir(scratch, 0o700)
    try:
        for name, text in (files or {}).items():
            Path(scratch, name).write_text(text, encoding="utf-8")
        if uid_or_none is not None:
            os.chmod(base, 0o711)
            for path in [scratch, *(os.path.join(scratch, n) for n in files or {})]:
                os.chown(path, uid, uid)
        network = "netns" if "netns" in caps else "audit-hook"
        code_cpu_s = cpu_s if cpu_s is not None else max(1, int(timeout_s) + 1)
        cpu_limit: int | list[int] = code_cpu_s
        if code is not None:
            parts: dict[str, str | None] = {SNIPPET_FILE: code, AFTER_FILE: after}
            for part, body in parts.items():
                if body is not None:
                    Path(scratch, part).write_text(body, encoding="utf-8")
                    if uid_or_none is not None:
                        os.chown(os.path.join(scratch, part), uid, uid)
            runner = runner_source(code_cpu_s, import_cpu_s, audit_hook=network == "audit-hook")
            argv = [sys.executable, "-I", "-c", runner]
            cpu_limit = [code_cpu_s, code_cpu_s + import_cpu_s]  # the runner moves the soft one
        elif network == "audit-hook":
            network = "none"  # a native program cannot be held by a Python audit hook
        assert argv is not None
        limits: dict[int, int | list[int]] = {
            resource.RLIMIT_CPU: cpu_limit,
            resource.RLIMIT_AS: memory_mb * 1024 * 1024,
            resource.RLIMIT_FSIZE: fsize_mb * 1024 * 1024,
            resource.RLIMIT_NOFILE: nofile,
            resource.RLIMIT_CORE: 0,
        }
        if uid_or_none is not None:  # RLIMIT_NPROC counts per uid: only meaningful for our own
            limits[resource.RLIMIT_NPROC] = nproc
        run = _Supervised(
            argv,
            scratch=scratch,
            limits=limits,
            caps=caps,
            uid=uid_or_none,
            tmpfs_mb=max(fsize_mb, 16),
            die_with_thread=True,  # this thread waits for the whole run
        )
        isolation = _isolation(network, caps, uid)
        result = _run(run, argv, timeout_s, output_limit, network, isolation)
        return result.model_copy(update={"cpu_limit_s": code_cpu_s})
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _isolation(network: str, caps: frozenset[str], uid: int) -> list[str]:
    """The layers a run gets, in `SandboxResult.isolation`'s words."""
    layers = [network] if network != "none" else []
    layers += ["mountns"] if "mountns" in caps else []
    layers += ["pidns"] if "pidns" in caps else []
    layers += [f"uid {uid}"] if "setuid" in caps else []
    return [*layers, "no new privileges", "rlimits", "session", "clean env"]


def _run(
    run: _Supervised,
    argv: Sequence[str],
    timeout_s: float,
    output_limit: int,
    network: str,
    isolation: list[str],
) -> SandboxResult:
    overflow = threading.Event()
    start = time.monotonic()
    proc = run.process
    assert proc.stdout is not None and proc.stderr is not None
    readers = [_CappedReader(s, output_limit, overflow) for s in (proc.stdout, proc.stderr)]
    for r in readers:
        r.start()
    killed_reason: str | None = None
    deadline = start + timeout_s
    try:
        while proc.poll() is None:
            if overflow.is_set():
                killed_reason = "output limit"
                break
            if time.monotonic() >= deadline:
                killed_reason = "timeout"
                break
            time.sleep(0.01)
    except BaseException:  # Ctrl-C, or a stop signal turned into an exception: the run ends too
        run.stop()
        run.finish()
        raise
    if killed_reason is not None:
        run.stop()
    report = run.finish()
    duration = time.monotonic() - start
    for r in readers:
        r.join(timeout=2.0)
    proc.stdout.close()
    proc.stderr.close()
    stderr = readers[1].data.decode("utf-8", "replace")
    if report.get("exec_error"):
        raise SnippetError(f"could not start the sandbox ({argv[0]}): {report['exec_error']}")
    if not report and killed_reason is None:
        raise SnippetError(
            f"the sandbox's init failed (exit {proc.returncode}): {stderr.strip()[-500:]}"
        )
    status = report.get("status")
    returncode = int(status) if status is not None else -signal.SIGKILL
    if killed_reason is None and returncode in (-signal.SIGXCPU, -signal.SIGKILL):
        cpu = report.get("cpu_s")
        # SIGXCPU: the soft limit; SIGKILL at the hard one (the kernel's, not ours: we stop
        # runs with SIGTERM to the supervisor)
        if returncode == -signal.SIGXCPU or (cpu is not None and _at_hard_cpu_limit(run, cpu)):
            killed_reason = "cpu limit"
    return SandboxResult(
        returncode=returncode,
        stdout=readers[0].data.decode("utf-8", "replace"),
        stderr=stderr,
        timed_out=killed_reason == "timeout",
        output_truncated=any(r.truncated for r in readers),
        killed_reason=killed_reason,
        duration_s=round(duration, 3),
        network=network,
        isolation=isolation,
        leftover_killed=int(report.get("leftover") or 0),
        cleanup=str(report.get("cleanup") or run.cleanup),
        cpu_s=_seconds(report.get("cpu_s")),
        runq_s=_seconds(report.get("runq_s")),
    )


def _seconds(value: object) -> float | None:
    """A number of seconds from init's report, None when it has none.

    >>> _seconds(1.5), _seconds(None), _seconds("x")
    (1.5, None, None)
    """
    return float(value) if isinstance(value, int | float) else None


def _at_hard_cpu_limit(run: _Supervised, cpu_s: object) -> bool:
    """Did a run killed by SIGKILL use its whole hard CPU limit (so the kernel killed it)?"""
    hard = run.cpu_hard_s
    return hard is not None and isinstance(cpu_s, int | float) and cpu_s >= hard - 1


def _kill_group(pgid: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, signal.SIGKILL)


class SandboxedWorker:
    """A long-lived process under the same containment, spoken to by JSON lines on stdin/stdout.

    Used for work that is slow to start and safe to reuse (importing torch once to check many
    signatures). No CPU limit: a request's wall-clock `timeout_s` bounds it instead.
    """

    def __init__(self, script: str, *, memory_mb: int = 4096, nproc: int = 64) -> None:
        caps = sandbox_capabilities()
        self._uid = (
            _UID_BASE + (os.getpid() % 1000) * 1000 + next(_uid_counter) % 1000
            if "setuid" in caps
            else None
        )
        self._base = tempfile.mkdtemp(prefix="kgqa-worker-")
        scratch = os.path.join(self._base, "work")
        os.mkdir(scratch, 0o700)
        if self._uid is not None:
            os.chmod(self._base, 0o711)
            os.chown(scratch, self._uid, self._uid)
        limits: dict[int, int | list[int]] = {
            resource.RLIMIT_AS: memory_mb * 1024 * 1024,
            resource.RLIMIT_FSIZE: 16 * 1024 * 1024,
            resource.RLIMIT_NOFILE: 256,
            resource.RLIMIT_CORE: 0,
        }
        if self._uid is not None:
            limits[resource.RLIMIT_NPROC] = nproc
        try:
            self._run = _Supervised(
                [sys.executable, "-I", "-c", script],
                scratch=scratch,
                limits=limits,
                caps=caps,
                uid=self._uid,
                tmpfs_mb=16,
                die_with_thread=False,  # shared across threads: it watches kgqa's pid instead
                pipe_stdin=True,
                stderr=subprocess.DEVNULL,
                text=True,
            )
        except SnippetError as exc:
            shutil.rmtree(self._base, ignore_errors=True)
            raise SnippetError(f"could not start a sandboxed worker: {exc}") from exc
        self._proc = self._run.process
        self._lock = threading.Lock()

    def request(self, line: str, *, timeout_s: float = 60.0) -> str:
        """Send one line, return the reply line; on timeout or death, close and raise."""
        with self._lock:
            proc = self._proc
            assert proc.stdin is not None and proc.stdout is not None
            reply: list[str] = []
            reader = threading.Thread(target=lambda: reply.append(proc.stdout.readline()))  # type: ignore[union-attr]
            try:
                proc.stdin.write(line.rstrip("\n") + "\n")
                proc.stdin.flush()
            except (BrokenPipeError, OSError) as exc:
                self.close()
                raise SnippetError(f"signature worker died: {exc}") from exc
            reader.start()
            reader.join(timeout_s)
            if reader.is_alive() or not reply or not reply[0]:
                self.close()
                raise SnippetError(f"signature worker gave no answer within {timeout_s:.0f} s")
            return reply[0]

    @property
    def alive(self) -> bool:
        """Whether the worker process is still running."""
        return self._proc.poll() is None

    def close(self) -> None:
        """Kill the worker and everything it started; remove its scratch directory. Idempotent."""
        self._run.stop()
        self._run.finish()
        for stream in (self._proc.stdin, self._proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        shutil.rmtree(self._base, ignore_errors=True)
