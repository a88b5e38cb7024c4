"""The sandbox contains hostile code, and the host (this test process) is unaffected.

Every test runs real code in a real subprocess; each asserts containment and that the host still
works afterwards (`host_ok`).
"""

from __future__ import annotations

import os
import re
import signal
import socket
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

ROOTLESS = "setuid" not in sandbox_capabilities()
NO_FS_ISOLATION = not {"setuid", "mountns"} <= sandbox_capabilities()
needs_fs_isolation = needs(
    "namespaces",
    "file and /proc containment needs a dedicated uid and a mount namespace (run as root)"
    if NO_FS_ISOLATION
    else None,
)


def _uid(result: SandboxResult) -> int | None:
    for layer in result.isolation:
        if m := re.fullmatch(r"uid (\d+)", layer):
            return int(m.group(1))
    return None


def host_ok(result: SandboxResult | None = None) -> None:
    """The host can still run things, and nothing of the run is left behind."""
    assert os.getpid() > 0
    again = run_sandboxed("print(6 * 7)", timeout_s=10)
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
    result = run_sandboxed(NET_CODE.format(port=port), timeout_s=10)
    assert "BLOCKED" in result.stdout and "CONNECTED" not in result.stdout
    time.sleep(0.3)
    assert received == []
    # the server itself works: the host can reach it
    with socket.create_connection(("127.0.0.1", port), timeout=2) as c:
        c.sendall(b"host")
    time.sleep(0.5)
    assert received == [b"<connected>host"]
    host_ok(result)


def test_audit_hook_fallback_denies_sockets(
    tcp_server: tuple[int, list[bytes]], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Where no network namespace can be made, the audit hook still denies connect()."""
    port, received = tcp_server
    caps = sandbox_capabilities() - {"netns"}
    monkeypatch.setattr(sandbox, "sandbox_capabilities", lambda: caps)
    result = run_sandboxed(NET_CODE.format(port=port), timeout_s=10)
    assert result.network == "audit-hook"
    assert "BLOCKED PermissionError" in result.stdout
    time.sleep(0.3)
    assert received == []
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
    result = run_sandboxed(code, timeout_s=10)
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
    result = run_sandboxed(code, timeout_s=10)
    assert "SCRATCH OK" in result.stdout
    for target in targets:
        assert not target.exists(), target
    host_ok(result)


@pytest.mark.skipif(ROOTLESS, reason="RLIMIT_NPROC needs a dedicated uid (run as root)")
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
    start = time.monotonic()
    result = run_sandboxed(code, timeout_s=3, nproc=32)
    assert time.monotonic() - start < 15
    assert result.timed_out or result.returncode != 0
    uid = _uid(result)
    assert uid is not None
    assert live_processes_of(uid) == []
    host_ok(result)


def test_allocating_10_gb_fails_inside() -> None:
    code = "b = bytearray(10 * 1024**3)\nprint('ALLOCATED')"
    result = run_sandboxed(code, timeout_s=10, memory_mb=512)
    assert "ALLOCATED" not in result.stdout
    assert "MemoryError" in result.stderr
    assert result.returncode == 1
    host_ok(result)


def test_infinite_loop_is_killed_at_the_timeout() -> None:
    start = time.monotonic()
    result = run_sandboxed("while True:\n    pass", timeout_s=2)
    assert result.timed_out and result.killed_reason == "timeout"
    assert 1.9 <= result.duration_s < 5
    assert time.monotonic() - start < 6
    host_ok(result)


def test_printing_1_gb_is_truncated_and_stopped() -> None:
    code = "import sys\nchunk = 'x' * (1 << 20)\nfor _ in range(1024):\n    sys.stdout.write(chunk)"
    start = time.monotonic()
    result = run_sandboxed(code, timeout_s=20, output_limit=64 * 1024)
    assert result.output_truncated and result.killed_reason == "output limit"
    assert len(result.stdout) == 64 * 1024
    assert time.monotonic() - start < 10
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
    result = run_sandboxed(code, timeout_s=10)
    assert secret not in result.stdout + result.stderr
    assert "KGQA_TEST_SECRET" not in result.stdout
    assert os.environ["KGQA_TEST_SECRET"] == secret
    host_ok(result)


@pytest.mark.skipif(ROOTLESS, reason="only a dedicated uid stops the signal (run as root)")
def test_killing_the_parent_fails() -> None:
    code = """
import os, signal
try:
    os.kill(os.getppid(), signal.SIGKILL)
    print("SENT")
except OSError as exc:
    print("DENIED", type(exc).__name__)
"""
    result = run_sandboxed(code, timeout_s=10)
    assert "DENIED PermissionError" in result.stdout
    host_ok(result)


def test_filling_the_disk_hits_the_file_size_limit() -> None:
    code = """
with open("fill.bin", "wb") as f:
    while True:
        f.write(b"0" * (1 << 20))
"""
    start = time.monotonic()
    result = run_sandboxed(code, timeout_s=20, fsize_mb=8)
    assert time.monotonic() - start < 5
    assert result.returncode == -signal.SIGXFSZ or "File too large" in result.stderr
    assert not result.timed_out
    host_ok(result)
