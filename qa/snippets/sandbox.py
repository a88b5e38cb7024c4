"""Run untrusted code in a separate, contained process.

Containment, from strongest to weakest (each layer reported in `SandboxResult.isolation`):

- a new network namespace (only a private loopback: nothing outside is reachable); where the kernel
  refuses, an audit hook in the interpreter that denies `socket.connect`/`bind`/`sendto`;
- a new mount namespace: a private tmpfs over `/tmp`, `/var/tmp` and `/dev/shm`, the scratch
  directory bound at `/tmp/sandbox`, and directories that only root may enter (e.g. `/root`)
  replaced by an empty tmpfs that shows only the interpreter's own tree;
- a dedicated unprivileged uid/gid per run (when the host runs as root); every process of that uid
  is killed after the run, so nothing it forked survives;
- resource limits: CPU seconds, address space, file size, open files, processes;
- its own session (process group), killed on wall-clock timeout or when output passes the cap;
- a minimal environment (PATH, HOME, LANG, TMPDIR): none of the caller's variables.
"""

from __future__ import annotations

import contextlib
import ctypes
import functools
import itertools
import os
import resource
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
from typing import IO

from pydantic import BaseModel, Field

from kg.errors import SnippetError

__all__ = [
    "SANDBOX_DIR",
    "SandboxResult",
    "SandboxedWorker",
    "live_processes_of",
    "run_sandboxed",
    "sandbox_capabilities",
]

SANDBOX_DIR = "/tmp/sandbox"
"""Where the scratch directory appears inside the sandbox (when a mount namespace is available)."""

_CLONE_NEWNS = 0x00020000
_CLONE_NEWNET = 0x40000000
_MS_NOSUID, _MS_NODEV, _MS_BIND, _MS_REC, _MS_PRIVATE = 2, 4, 4096, 16384, 1 << 18
_SIOCSIFFLAGS = 0x8914
_IFF_UP_LOOPBACK_RUNNING = 0x1 | 0x8 | 0x40
_UID_BASE = 200_000
_uid_counter = itertools.count()

# Used only when no network namespace can be made: deny sockets from Python code.
_AUDIT_HOOK = """
import sys as _s
def _kgqa_deny(event, args):
    if event in ("socket.connect", "socket.bind", "socket.sendto", "socket.sendmsg"):
        addr = args[1] if len(args) > 1 else None
        if not (isinstance(addr, (str, bytes))):
            raise PermissionError("network access is disabled in this sandbox")
_s.addaudithook(_kgqa_deny)
del _s, _kgqa_deny
import runpy
runpy.run_path("snippet.py", run_name="__main__")
"""


class SandboxResult(BaseModel):
    """What a sandboxed run did."""

    returncode: int | None = Field(description="exit status; negative: killed by that signal")
    stdout: str = ""
    stderr: str = ""
    timed_out: bool = False
    output_truncated: bool = False
    killed_reason: str | None = Field(default=None, description="'timeout' | 'output limit'")
    duration_s: float = 0.0
    network: str = Field(description="'netns' | 'audit-hook' | 'none'")
    isolation: list[str] = Field(default_factory=list, description="the layers that were applied")

    @property
    def ok(self) -> bool:
        """True when the process exited with status 0 on its own."""
        return self.returncode == 0 and not self.timed_out and self.killed_reason is None

    def summary(self) -> str:
        """One line: how it ended.

        >>> SandboxResult(returncode=0, network="netns", duration_s=0.25).summary()
        'exit 0 in 0.25 s'
        """
        if self.timed_out:
            return f"timed out after {self.duration_s:.2f} s"
        if self.killed_reason:
            return f"killed ({self.killed_reason}) after {self.duration_s:.2f} s"
        if self.returncode is not None and self.returncode < 0:
            name = signal.Signals(-self.returncode).name
            return f"killed by {name} after {self.duration_s:.2f} s"
        return f"exit {self.returncode} in {self.duration_s:.2f} s"


def _libc() -> ctypes.CDLL:
    return ctypes.CDLL(None, use_errno=True)


def _check(rc: int, what: str) -> None:
    if rc != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"{what}: {os.strerror(err)}")


@functools.cache
def sandbox_capabilities() -> frozenset[str]:
    """Which isolation layers this host allows: subset of {'netns', 'mountns', 'setuid'}.

    Probed once per process by forking a child that tries each one.
    """
    caps: set[str] = set()
    probes = {"netns": _CLONE_NEWNET, "mountns": _CLONE_NEWNS}
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


def _preexec(
    scratch: str,
    limits: dict[int, int],
    caps: frozenset[str],
    uid: int | None,
    tmpfs_mb: int,
) -> None:
    """Runs in the child between fork and exec: namespaces, limits, then drop privileges."""
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
    for which, value in limits.items():
        resource.setrlimit(which, (value, value))
    if uid is not None:
        os.setgroups([])
        os.setgid(uid)
        os.setuid(uid)


def live_processes_of(uid: int) -> list[int]:
    """Pids of processes running as `uid` that are not yet dead (zombies excluded)."""
    pids: list[int] = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            status = Path(entry.path, "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if int(fields["Uid"].split()[0]) == uid and not fields["State"].strip().startswith("Z"):
            pids.append(int(entry.name))
    return pids


def _reap_uid(uid: int, *, within_s: float = 5.0) -> None:
    """Kill every process that still runs as `uid` (forked children that left the group)."""
    deadline = time.monotonic() + within_s
    while True:
        pid = os.fork()
        if pid == 0:
            try:
                os.setuid(uid)
                for _ in range(100):  # a fork bomb may add processes while we sweep
                    os.kill(-1, signal.SIGKILL)
            except ProcessLookupError:
                pass
            finally:
                os._exit(0)
        os.waitpid(pid, 0)
        if not live_processes_of(uid) or time.monotonic() > deadline:
            return
        time.sleep(0.02)


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
    timeout_s: float = 10.0,
    memory_mb: int = 1024,
    cpu_s: int | None = None,
    fsize_mb: int = 64,
    nofile: int = 256,
    nproc: int = 64,
    output_limit: int = 64 * 1024,
) -> SandboxResult:
    """Run Python `code` (as `snippet.py` in a scratch directory) or a command `argv`, contained.

    `files` are written into the scratch directory first. `output_limit` caps the bytes kept from
    each of stdout and stderr; a process that writes more is killed. The host is never affected by
    what the code does; a failure to start the sandbox at all raises `SnippetError`.
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
        if code is not None:
            Path(scratch, "snippet.py").write_text(code, encoding="utf-8")
            if uid_or_none is not None:
                os.chown(os.path.join(scratch, "snippet.py"), uid, uid)
            argv = [sys.executable, "-I", "snippet.py"]
            if network == "audit-hook":
                argv = [sys.executable, "-I", "-c", _AUDIT_HOOK]
        elif network == "audit-hook":
            network = "none"  # a native program cannot be held by a Python audit hook
        assert argv is not None
        box_dir = SANDBOX_DIR if "mountns" in caps else scratch
        limits = {
            resource.RLIMIT_CPU: cpu_s if cpu_s is not None else max(1, int(timeout_s) + 1),
            resource.RLIMIT_AS: memory_mb * 1024 * 1024,
            resource.RLIMIT_FSIZE: fsize_mb * 1024 * 1024,
            resource.RLIMIT_NOFILE: nofile,
            resource.RLIMIT_CORE: 0,
        }
        if uid_or_none is not None:  # RLIMIT_NPROC counts per uid: only meaningful for our own
            limits[resource.RLIMIT_NPROC] = nproc
        isolation = [network] if network != "none" else []
        isolation += ["mountns"] if "mountns" in caps else []
        isolation += [f"uid {uid}"] if uid_or_none is not None else []
        isolation += ["rlimits", "session", "clean env"]
        return _run(
            argv,
            scratch,
            box_dir,
            limits,
            caps,
            uid_or_none,
            fsize_mb,
            timeout_s,
            output_limit,
            network,
            isolation,
        )
    finally:
        shutil.rmtree(base, ignore_errors=True)


def _run(
    argv: Sequence[str],
    scratch: str,
    box_dir: str,
    limits: dict[int, int],
    caps: frozenset[str],
    uid: int | None,
    fsize_mb: int,
    timeout_s: float,
    output_limit: int,
    network: str,
    isolation: list[str],
) -> SandboxResult:
    overflow = threading.Event()
    start = time.monotonic()
    try:
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=_env(box_dir),
            start_new_session=True,
            close_fds=True,
            preexec_fn=functools.partial(_preexec, scratch, limits, caps, uid, max(fsize_mb, 16)),
        )
    except (OSError, subprocess.SubprocessError) as exc:
        raise SnippetError(f"could not start the sandbox ({argv[0]}): {exc}") from exc
    assert proc.stdout is not None and proc.stderr is not None
    readers = [_CappedReader(s, output_limit, overflow) for s in (proc.stdout, proc.stderr)]
    for r in readers:
        r.start()
    killed_reason: str | None = None
    deadline = start + timeout_s
    while proc.poll() is None:
        if overflow.is_set():
            killed_reason = "output limit"
            break
        if time.monotonic() >= deadline:
            killed_reason = "timeout"
            break
        time.sleep(0.01)
    if killed_reason is not None:
        _kill_group(proc.pid)
    if uid is not None:
        _reap_uid(uid)
    proc.wait()
    duration = time.monotonic() - start
    for r in readers:
        r.join(timeout=2.0)
    proc.stdout.close()
    proc.stderr.close()
    return SandboxResult(
        returncode=proc.returncode,
        stdout=readers[0].data.decode("utf-8", "replace"),
        stderr=readers[1].data.decode("utf-8", "replace"),
        timed_out=killed_reason == "timeout",
        output_truncated=any(r.truncated for r in readers),
        killed_reason=killed_reason,
        duration_s=round(duration, 3),
        network=network,
        isolation=isolation,
    )


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
        limits = {
            resource.RLIMIT_AS: memory_mb * 1024 * 1024,
            resource.RLIMIT_FSIZE: 16 * 1024 * 1024,
            resource.RLIMIT_NOFILE: 256,
            resource.RLIMIT_CORE: 0,
        }
        if self._uid is not None:
            limits[resource.RLIMIT_NPROC] = nproc
        box_dir = SANDBOX_DIR if "mountns" in caps else scratch
        try:
            self._proc = subprocess.Popen(
                [sys.executable, "-I", "-c", script],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                env=_env(box_dir),
                start_new_session=True,
                close_fds=True,
                text=True,
                preexec_fn=functools.partial(_preexec, scratch, limits, caps, self._uid, 16),
            )
        except (OSError, subprocess.SubprocessError) as exc:
            shutil.rmtree(self._base, ignore_errors=True)
            raise SnippetError(f"could not start a sandboxed worker: {exc}") from exc
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
        """Kill the worker and everything it started; remove its scratch directory."""
        _kill_group(self._proc.pid)
        if self._uid is not None:
            _reap_uid(self._uid)
        self._proc.wait()
        for stream in (self._proc.stdin, self._proc.stdout):
            if stream is not None:
                with contextlib.suppress(OSError):
                    stream.close()
        shutil.rmtree(self._base, ignore_errors=True)
