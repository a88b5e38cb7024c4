"""The sandbox contains hostile code, and the host (this test process) is unaffected.

Every test runs real code in a real subprocess; each asserts containment and that the host still
works afterwards (`host_ok`). Nothing here is timed by the wall clock: a limit is shown to hold by
the state it leaves (how the run ended, the CPU it used, what is left running), so the tests hold
on a busy machine.
"""

from __future__ import annotations

import json
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from needs import needs

from qa.snippets import sandbox
from qa.snippets.sandbox import (
    SandboxResult,
    live_processes_of,
    run_sandboxed,
    sandbox_capabilities,
)

REPO = Path(__file__).resolve().parents[3]
CAPS = sandbox_capabilities()


def _lacking(wanted: set[str], what: str) -> str | None:
    """Why the sandbox layers `wanted` are missing here (None: they are all available)."""
    return f"{what} (run as root)" if not wanted <= CAPS else None


needs_uid = needs("namespaces", _lacking({"setuid"}, "a dedicated uid per run"))
needs_fs_isolation = needs(
    "namespaces",
    _lacking(
        {"setuid", "mountns"},
        "file and /proc containment needs a dedicated uid and a mount namespace",
    ),
)
needs_pidns = needs(
    "namespaces",
    _lacking(
        {"setuid", "mountns", "pidns"}, "a PID namespace, a mount namespace and a dedicated uid"
    ),
)


def _uid(result: SandboxResult) -> int | None:
    for layer in result.isolation:
        if m := re.fullmatch(r"uid (\d+)", layer):
            return int(m.group(1))
    return None


def host_ok(result: SandboxResult | None = None) -> None:
    """The host can still run things, and nothing of the run is left behind."""
    assert os.getpid() > 0
    again = run_sandboxed("print(6 * 7)", timeout_s=60)
    assert again.ok and again.stdout.strip() == "42"
    if result is not None and (uid := _uid(result)) is not None:
        assert live_processes_of(uid) == []


@pytest.fixture()
def tcp_server() -> Iterator[tuple[int, list[bytes]]]:
    """A TCP server on the host's 127.0.0.1 that records whatever arrives."""
    received: list[bytes] = []
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen()
    srv.settimeout(0.2)
    stop = threading.Event()

    def serve() -> None:
        while not stop.is_set():
            try:
                conn, _ = srv.accept()
            except TimeoutError:
                continue
            with conn:
                received.append(b"<connected>" + conn.recv(100))

    t = threading.Thread(target=serve, daemon=True)
    t.start()
    yield srv.getsockname()[1], received
    stop.set()
    t.join()
    srv.close()


def _only_the_host_arrives(port: int, received: list[bytes]) -> None:
    """The host connects after the run: the server, which accepts in order, then holds that one
    connection and nothing before it (a connection from the sandbox would have come first)."""
    with socket.create_connection(("127.0.0.1", port), timeout=30) as c:
        c.sendall(b"host")
    deadline = time.monotonic() + 120  # only turns a hang into a failure
    while not received and time.monotonic() < deadline:
        time.sleep(0.05)
    assert received == [b"<connected>host"]


NET_CODE = """
import socket
s = socket.socket()
s.settimeout(2)
try:
    s.connect(("127.0.0.1", {port}))
    s.sendall(b"leak")
    print("CONNECTED")
except OSError as exc:
    print("BLOCKED", type(exc).__name__)
"""


def test_network_to_host_server_is_unreachable(tcp_server: tuple[int, list[bytes]]) -> None:
    port, received = tcp_server
    result = run_sandboxed(NET_CODE.format(port=port), timeout_s=60)
    assert "BLOCKED" in result.stdout and "CONNECTED" not in result.stdout
    _only_the_host_arrives(port, received)
    host_ok(result)


def test_audit_hook_fallback_denies_sockets(
    tcp_server: tuple[int, list[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where no network namespace can be made, the audit hook still denies connect()."""
    port, received = tcp_server
    caps = sandbox_capabilities() - {"netns"}
    monkeypatch.setattr(sandbox, "sandbox_capabilities", lambda: caps)
    result = run_sandboxed(NET_CODE.format(port=port), timeout_s=60)
    assert result.network == "audit-hook"
    assert "BLOCKED PermissionError" in result.stdout
    _only_the_host_arrives(port, received)
    monkeypatch.undo()
    host_ok(result)


@needs_fs_isolation
def test_cannot_read_a_private_file_outside_scratch(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("TOPSECRET-" + uuid.uuid4().hex)
    secret.chmod(0o600)
    code = f"""
try:
    print(open({str(secret)!r}).read())
except OSError as exc:
    print("DENIED", type(exc).__name__)
"""
    result = run_sandboxed(code, timeout_s=60)
    assert "TOPSECRET" not in result.stdout + result.stderr
    assert "DENIED" in result.stdout
    assert secret.read_text().startswith("TOPSECRET-")
    host_ok(result)


@needs_fs_isolation
def test_cannot_write_outside_scratch(tmp_path: Path) -> None:
    tmp_path.chmod(0o777)  # even a world-writable host directory is out of reach
    inside_tmp = Path("/tmp") / f"kgqa-pwned-{uuid.uuid4().hex}"
    targets = [tmp_path / "pwned", inside_tmp, Path("/work/main/.pwned")]
    code = "\n".join(
        f"try:\n    open({str(t)!r}, 'w').write('x')\n    print('WROTE')\n"
        f"except OSError as exc:\n    print('DENIED', type(exc).__name__)"
        for t in targets
    )
    code += "\nopen('inside.txt', 'w').write('fine')\nprint('SCRATCH OK')"
    result = run_sandboxed(code, timeout_s=60)
    assert "SCRATCH OK" in result.stdout
    for target in targets:
        assert not target.exists(), target
    host_ok(result)


@needs_uid  # RLIMIT_NPROC counts per uid
def test_fork_bomb_is_contained_and_reaped() -> None:
    code = """
import os
while True:
    try:
        if os.fork() == 0:
            os.setsid()
    except OSError:
        pass
"""
    result = run_sandboxed(code, timeout_s=3, nproc=32)
    assert result.timed_out or result.returncode != 0
    uid = _uid(result)
    assert uid is not None
    assert live_processes_of(uid) == []
    host_ok(result)


def test_allocating_10_gb_fails_inside() -> None:
    code = "b = bytearray(10 * 1024**3)\nprint('ALLOCATED')"
    result = run_sandboxed(code, timeout_s=60, memory_mb=512)
    assert "ALLOCATED" not in result.stdout
    assert "MemoryError" in result.stderr
    assert result.returncode == 1
    host_ok(result)


def test_a_run_that_waits_forever_is_stopped_at_the_wall_clock() -> None:
    result = run_sandboxed("import time\nwhile True:\n    time.sleep(1)", timeout_s=2)
    assert result.timed_out and result.killed_reason == "timeout"
    assert result.duration_s >= 2
    assert result.cpu_s is not None and result.runq_s is not None  # read before it was stopped
    assert result.summary().startswith("timed out after ")
    host_ok(result)


def test_a_runaway_loop_is_stopped_by_its_cpu_limit_not_the_wall_clock() -> None:
    result = run_sandboxed("while True:\n    pass", timeout_s=600, cpu_s=2)
    assert result.killed_reason == "cpu limit" and not result.timed_out
    assert result.returncode == -signal.SIGXCPU
    # CPU time: its 2 s, with the interpreter's start, rounded up to the limit's whole seconds
    assert result.cpu_s is not None and 2.0 <= result.cpu_s <= 3.5, result.cpu_s
    assert result.summary().startswith(
        "stopped at the CPU limit (2 s for the code, imports not counted) after "
    )
    host_ok(result)


SLOW_IMPORT = """
import time
start = time.process_time()
while time.process_time() - start < 4.0:  # 4 s of CPU, however busy the machine is
    pass
"""


def test_imports_are_timed_on_their_own() -> None:
    """A module that takes 4 s of CPU to import, then code that takes none: it passes under a
    2 s CPU limit for the code; the same 4 s in the code itself is stopped."""
    files = {"slow_module.py": SLOW_IMPORT}
    code = "import sys\nsys.path.insert(0, '.')\nimport slow_module\nprint('imported')"
    quick = run_sandboxed(code, files=files, timeout_s=600, cpu_s=2)
    assert quick.ok, quick.stderr
    assert quick.stdout.strip() == "imported"
    assert quick.cpu_s is not None and quick.cpu_s >= 4.0  # more than the code's limit
    inline = run_sandboxed(SLOW_IMPORT + "print('done')", timeout_s=600, cpu_s=2)
    assert inline.killed_reason == "cpu limit" and "done" not in inline.stdout
    host_ok(inline)


SLOW_EXIT = """
import atexit, time
def _spin(seconds):
    start = time.process_time()
    while time.process_time() - start < seconds:  # CPU seconds, however busy the machine is
        pass
_spin(3.9)  # a whole second's fraction left over: the limit's rounding must not eat the code's
atexit.register(_spin, 2.5)  # what finalising a big library costs at the interpreter's exit
"""


def test_a_module_slow_to_import_and_to_finalise_leaves_the_code_its_budget() -> None:
    """`import torch, transformers` takes seconds of CPU, and the interpreter's exit seconds
    more to finalise them: neither is the code's, which here takes none."""
    code = "import sys\nsys.path.insert(0, '.')\nimport slow_exit\nprint('imported')"
    result = run_sandboxed(code, files={"slow_exit.py": SLOW_EXIT}, timeout_s=600, cpu_s=2)
    assert result.ok, (result.killed_reason, result.stderr)
    assert result.stdout.strip() == "imported"
    assert result.cpu_s is not None and result.cpu_s >= 6.4  # the import's and the exit's


def test_printing_1_gb_is_truncated_and_stopped() -> None:
    code = "import sys\nchunk = 'x' * (1 << 20)\nfor _ in range(1024):\n    sys.stdout.write(chunk)"
    result = run_sandboxed(code, timeout_s=600, output_limit=64 * 1024)
    assert result.output_truncated and result.killed_reason == "output limit"
    assert len(result.stdout) == 64 * 1024
    host_ok(result)


@needs_fs_isolation
def test_caller_environment_is_not_visible(monkeypatch: pytest.MonkeyPatch) -> None:
    secret = "s3cr3t-" + uuid.uuid4().hex
    monkeypatch.setenv("KGQA_TEST_SECRET", secret)
    code = """
import os
print(sorted(os.environ))
print(os.environ.get("KGQA_TEST_SECRET"))
try:
    print(open(f"/proc/{os.getppid()}/environ", "rb").read())
except OSError as exc:
    print("DENIED", type(exc).__name__)
"""
    result = run_sandboxed(code, timeout_s=60)
    assert secret not in result.stdout + result.stderr
    assert "KGQA_TEST_SECRET" not in result.stdout
    assert os.environ["KGQA_TEST_SECRET"] == secret
    host_ok(result)


@needs_uid  # only a dedicated uid stops the signal
def test_killing_the_parent_fails() -> None:
    code = """
import os, signal
try:
    os.kill(os.getppid(), signal.SIGKILL)
    print("SENT")
except OSError as exc:
    print("DENIED", type(exc).__name__)
"""
    result = run_sandboxed(code, timeout_s=60)
    assert "DENIED PermissionError" in result.stdout
    host_ok(result)


def test_filling_the_disk_hits_the_file_size_limit() -> None:
    code = """
with open("fill.bin", "wb") as f:
    while True:
        f.write(b"0" * (1 << 20))
"""
    result = run_sandboxed(code, timeout_s=600, fsize_mb=8)
    assert result.returncode == -signal.SIGXFSZ or "File too large" in result.stderr
    assert not result.timed_out and result.killed_reason is None  # the limit stopped it
    host_ok(result)


# -- nothing a snippet starts outlives the run ---------------------------------------------------
def processes_of_uids(uids: range) -> list[str]:
    """Every process (zombies too) whose real uid is in `uids`, as 'pid state name'."""
    found = []
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            status = Path(entry.path, "status").read_text()
        except OSError:
            continue
        fields = dict(line.split(":", 1) for line in status.splitlines() if ":" in line)
        if int(fields["Uid"].split()[0]) in uids:
            found.append(f"{entry.name} {fields['State'].strip()} {fields['Name'].strip()}")
    return found


LEFTOVERS = {
    "fork": (
        """
import os, time
for _ in range(3):
    if os.fork() == 0:
        time.sleep(60)
        os._exit(0)
print("main done")
""",
        3,
    ),
    "double fork + setsid": (
        """
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        os.chdir("/")
        time.sleep(60)
        os._exit(0)
    os._exit(0)
os.wait()
print("main done")
""",
        1,
    ),
    "child ignores SIGTERM": (
        """
import os, signal, time
if os.fork() == 0:
    signal.signal(signal.SIGTERM, signal.SIG_IGN)
    os.setpgid(0, 0)
    while True:
        time.sleep(1)
print("main done")
""",
        1,
    ),
}


@needs_pidns
@pytest.mark.parametrize("case", list(LEFTOVERS))
def test_what_a_snippet_leaves_running_is_killed_and_fails_the_run(case: str) -> None:
    code, n = LEFTOVERS[case]
    result = run_sandboxed(code, timeout_s=600)
    assert not result.timed_out  # the run ended with the snippet, not when its leftovers did
    assert "main done" in result.stdout and result.returncode == 0
    assert result.leftover_killed == n and result.cleanup == "pidns"
    assert not result.ok
    assert result.summary().endswith(f"; {n} leftover process{'es' if n > 1 else ''} killed")
    uid = _uid(result)
    assert uid is not None and processes_of_uids(range(uid, uid + 1)) == []  # zombies too
    host_ok(result)


@needs_pidns
def test_a_child_sleeping_past_the_timeout_dies_with_the_run() -> None:
    code = """
import os, time
if os.fork() == 0:
    time.sleep(600)
    os._exit(0)
print("started", flush=True)
time.sleep(600)
"""
    result = run_sandboxed(code, timeout_s=2)
    assert result.timed_out and "started" in result.stdout
    assert result.leftover_killed == 1
    assert result.summary().endswith("; 1 leftover process killed")
    uid = _uid(result)
    assert uid is not None and processes_of_uids(range(uid, uid + 1)) == []
    host_ok(result)


@needs_pidns
def test_a_well_behaved_snippet_that_waits_for_its_children_passes() -> None:
    code = """
import multiprocessing as mp
def square(x):
    return x * x
if __name__ == "__main__":
    with mp.get_context("spawn").Pool(2) as pool:
        print(sum(pool.map(square, range(10))))
"""
    result = run_sandboxed(code, timeout_s=60)
    assert result.ok, result.stderr
    assert result.stdout.strip() == "285" and result.leftover_killed == 0
    host_ok(result)


@needs_pidns
def test_the_snippet_sees_only_its_own_processes() -> None:
    code = """
import os
print(os.getpid(), sorted(int(p) for p in os.listdir("/proc") if p.isdigit()))
print(open("/proc/1/cmdline", "rb").read().split(b"\\0")[0].decode())
"""
    result = run_sandboxed(code, timeout_s=60)
    first, second = result.stdout.splitlines()
    assert first == "2 [1, 2]"  # init is 1, the snippet 2, and no host process is visible
    assert "python" in second
    assert "pidns" in result.isolation
    host_ok(result)


@needs_uid
def test_without_a_pid_namespace_the_runs_uid_is_swept(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(sandbox, "sandbox_capabilities", lambda: CAPS - {"pidns"})
    code, n = LEFTOVERS["double fork + setsid"]
    result = run_sandboxed(code, timeout_s=60)
    assert "pidns" not in result.isolation
    assert result.cleanup == "uid" and result.leftover_killed == n and not result.ok
    uid = _uid(result)
    assert uid is not None and live_processes_of(uid) == []
    monkeypatch.undo()
    host_ok(result)


def test_with_neither_only_the_session_is_swept_and_the_result_says_so(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(sandbox, "sandbox_capabilities", lambda: CAPS - {"pidns", "setuid"})
    code = """
import os, time
for _ in range(2):
    pid = os.fork()
    if pid == 0:
        time.sleep(60)
        os._exit(0)
    print(pid, flush=True)
"""
    result = run_sandboxed(code, timeout_s=60)
    assert result.cleanup == "session" and result.leftover_killed == 2 and not result.ok
    for pid in map(int, result.stdout.split()):  # host pids: no PID namespace here
        stat = Path(f"/proc/{pid}/stat")
        assert not stat.exists() or stat.read_text().rsplit(")", 1)[1].split()[0] == "Z"
    monkeypatch.undo()
    host_ok(result)


def _kgqa_check(path: Path) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-m", "qa.cli", "snippets", "check", str(path), "--json"],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr  # a failed snippet: exit 1
    result: dict[str, object] = json.loads(done.stdout)
    return result


@needs_pidns
@pytest.mark.parametrize("case", list(LEFTOVERS))
def test_kgqa_snippets_check_leaves_no_process_behind(case: str, tmp_path: Path) -> None:
    code, n = LEFTOVERS[case]
    snippet = tmp_path / "leaves.py"
    snippet.write_text(code)
    result = _kgqa_check(snippet)
    assert result["status"] == "failed"
    reason = str(result["reason"])
    assert reason.startswith("run: failed — exit 0 in ")
    assert f"; {n} leftover process{'es' if n > 1 else ''} killed in the sandbox" in reason
    m = re.search(r"uid (\d+)", reason)
    assert m is not None
    uid = int(m.group(1))
    block = uid - (uid - sandbox._UID_BASE) % 1000  # every uid that kgqa process could use
    assert processes_of_uids(range(block, block + 1000)) == []
    host_ok()
