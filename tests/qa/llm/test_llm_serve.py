"""`serve` and `kgqa llm serve` with real subprocesses: a server that dies at start-up is reported
with its log; the server never outlives kgqa (SIGTERM, SIGINT, SIGKILL of kgqa); a port already in
use is refused clearly. The keeper (`qa.llm.keeper`) is also tested on its own with small Python
programs standing in for a server that misbehaves the way servers can.
"""

from __future__ import annotations

import importlib.util
import json
import os
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from urllib.parse import urlparse

import pytest
from needs import missing_modules, needs
from processes import die_with_parent, port_is_free, process_tree, still_running, wait_for
from store_fixture import SETTINGS

from kg.errors import LLMError, LLMUnavailable
from qa.llm import keeper
from qa.llm.serve import PortInUse, ServerHandle, free_port, serve

REPO = Path(__file__).resolve().parents[3]
KEEPER = Path(keeper.__file__)
KGQA_SERVE = [sys.executable, "-m", "qa.cli", "llm", "serve", "--engine", "llamacpp"]


def test_free_port_is_bindable() -> None:
    port = free_port()
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", port))


@needs("llamacpp", missing_modules("llama_cpp"))
def test_dead_server_is_reported_with_its_log(tmp_path: Path) -> None:
    broken = tmp_path / "broken.gguf"
    broken.write_bytes(b"not a gguf file at all")
    t0 = time.monotonic()
    with pytest.raises(LLMUnavailable, match="exited with code") as caught:
        serve(
            "llamacpp",
            str(broken),
            port=0,
            settings=SETTINGS,
            environ=os.environ,
            log_dir=tmp_path,
            startup_timeout_s=60,
        )
    assert time.monotonic() - t0 < 60
    assert "log " in str(caught.value) and str(tmp_path) in str(caught.value)
    logs = list(tmp_path.glob("serve-llamacpp-*.log"))
    assert len(logs) == 1 and logs[0].read_text()


def test_missing_engine_says_how_to_install(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(importlib.util, "find_spec", lambda name, *a: None)
    with pytest.raises(LLMError, match="pip install 'llama-cpp-python"):
        serve("llamacpp", "x.gguf", port=0, settings=SETTINGS, environ=os.environ)


def test_handle_stops_its_server(llamacpp_server: ServerHandle) -> None:
    assert llamacpp_server.alive()
    assert llamacpp_server.instructions().startswith(
        f"export KGQA_LLM_BASE_URL={llamacpp_server.base_url}"
    )
    assert llamacpp_server.startup_s > 0


# -- the server never outlives kgqa --------------------------------------------------------------
def _kgqa_serve(port: int, log: Path) -> subprocess.Popen[bytes]:
    """`kgqa llm serve --engine llamacpp --port PORT`, up and answering."""
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*KGQA_SERVE, "--port", str(port)],
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=die_with_parent,  # a failed test leaves nothing behind either
        )
    up = wait_for(lambda: proc.poll() is not None or not port_is_free(port), 120, 0.1)
    assert up is not None and proc.poll() is None, log.read_text()
    assert wait_for(lambda: "Point kgqa at it" in log.read_text(), 60, 0.1) is not None
    return proc


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT], ids=["TERM", "INT"])
def test_a_stop_signal_to_kgqa_stops_its_server(
    sig: signal.Signals, llamacpp_gguf: Path, tmp_path: Path
) -> None:
    port, log = free_port(), tmp_path / "serve.log"
    proc = _kgqa_serve(port, log)
    started = process_tree(proc.pid)
    assert len(started) >= 3, started  # kgqa, the keeper, the server
    proc.send_signal(sig)
    freed = wait_for(lambda: port_is_free(port), 10)
    assert freed is not None, f"port {port} still taken 10 s after {sig.name}"
    assert proc.wait(timeout=10) == 0, log.read_text()
    assert wait_for(lambda: not still_running(started), 10) is not None, still_running(started)
    assert f"{sig.name}: stopping the server" in log.read_text()
    print(f"\n{sig.name}: port free after {freed:.2f} s")


def test_sigkill_of_kgqa_takes_its_server_down(llamacpp_gguf: Path, tmp_path: Path) -> None:
    port, log = free_port(), tmp_path / "serve.log"
    proc = _kgqa_serve(port, log)
    started = process_tree(proc.pid)
    assert len(started) >= 3, started
    proc.kill()
    proc.wait()
    gone = wait_for(lambda: not still_running(started), 10)
    assert gone is not None, still_running(started)
    assert port_is_free(port)
    print(f"\nKILL: server gone after {gone:.2f} s")


def test_a_port_already_served_is_refused_clearly(llamacpp_server: ServerHandle) -> None:
    port = urlparse(llamacpp_server.base_url).port
    assert port is not None
    t0 = time.monotonic()
    done = subprocess.run(
        [*KGQA_SERVE, "--port", str(port)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert f"port {port} on 127.0.0.1 is already served" in done.stderr
    assert f"export KGQA_LLM_BASE_URL={llamacpp_server.base_url}" in done.stderr
    assert "qwen2.5-coder-0.5b" in done.stderr and "pick another --port" in done.stderr
    assert time.monotonic() - t0 < 30  # refused before any model is loaded
    assert llamacpp_server.alive()


def test_a_port_held_by_another_program_is_refused() -> None:
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        holder.listen()
        port = holder.getsockname()[1]
        with pytest.raises(PortInUse, match=f"port {port} on 127.0.0.1 is already in use by"):
            serve("llamacpp", "x.gguf", port=port, settings=SETTINGS, environ=os.environ)


# -- the keeper on its own -----------------------------------------------------------------------
def _keeper(server_code: str, *, parent: int, grace_s: float = 0.5) -> subprocess.Popen[str]:
    config = {
        "argv": [sys.executable, "-c", server_code],
        "parent": parent,
        "grace_s": grace_s,
        "pdeathsig": True,
    }
    return subprocess.Popen(
        [sys.executable, "-I", "-S", str(KEEPER), json.dumps(config)],
        stdout=subprocess.PIPE,
        text=True,
        start_new_session=True,
    )


STUBBORN = """
import signal, time
signal.signal(signal.SIGTERM, signal.SIG_IGN)
print("up", flush=True)
time.sleep(60)
"""


def test_keeper_kills_a_server_that_ignores_sigterm_after_the_grace() -> None:
    kept = _keeper(STUBBORN, parent=os.getpid())
    assert kept.stdout is not None and kept.stdout.readline() == "up\n"
    started = process_tree(kept.pid)
    t0 = time.monotonic()
    kept.terminate()
    assert kept.wait(timeout=10) == 128 + signal.SIGKILL
    assert 0.4 < time.monotonic() - t0 < 5
    assert still_running(started) == []


LEAVES_A_DAEMON = """
import os, time
if os.fork() == 0:
    os.setsid()
    if os.fork() == 0:
        time.sleep(60)
        os._exit(0)
    os._exit(0)
os.wait()
print("done", flush=True)
"""


def test_keeper_kills_what_the_server_left_behind() -> None:
    kept = _keeper(LEAVES_A_DAEMON, parent=os.getpid())
    assert kept.stdout is not None and kept.stdout.readline() == "done\n"
    started = process_tree(kept.pid)
    assert kept.wait(timeout=10) == 0
    assert still_running(started) == []


@pytest.mark.parametrize("pdeathsig", [True, False], ids=["death-signal", "polling"])
def test_keeper_stops_the_server_when_its_parent_is_killed(pdeathsig: bool) -> None:
    owner_code = f"""
import json, os, subprocess, sys, time
config = {{"argv": [sys.executable, "-c", {STUBBORN!r}], "parent": os.getpid(),
          "grace_s": 0.5, "pdeathsig": {pdeathsig}}}
kept = subprocess.Popen([sys.executable, "-I", "-S", {str(KEEPER)!r}, json.dumps(config)],
                        start_new_session=True)
time.sleep(60)
"""
    owner = subprocess.Popen([sys.executable, "-c", owner_code], stdout=subprocess.PIPE, text=True)
    assert owner.stdout is not None and owner.stdout.readline() == "up\n"
    started = process_tree(owner.pid)
    assert len(started) == 3, started  # owner, keeper, server
    owner.kill()
    owner.wait()
    gone = wait_for(lambda: not still_running(started), 10)
    assert gone is not None, still_running(started)
    assert gone < 3  # SIGTERM, 0.5 s grace, SIGKILL
