"""The engine check (`qa.llm.selfcheck`) with real servers: the real llama.cpp server and the
embedded model in process pass it; a stand-in server process (`standin_llm.py`) shows the failures
of a llama.cpp built for another CPU (answers that are not language, a segmentation fault on the
first chat), which `serve`, `kgqa llm serve`, `kgqa llm prepare` and `kgqa ask` must report with
the CPU flags and the fix."""

from __future__ import annotations

import importlib
import os
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from processes import die_with_parent, port_is_free
from store_fixture import SETTINGS, article_store

from qa.config import LLMSettings
from qa.llm.selfcheck import (
    PROBE_QUESTION,
    EngineBroken,
    check_gguf,
    diagnose_server,
)
from qa.llm.serve import ServerHandle, free_port, start_server

REPO = Path(__file__).resolve().parents[3]
STANDIN = Path(__file__).with_name("standin_llm.py")
ALIAS = "standin"

Standin = Callable[..., str]


@pytest.fixture()
def standin() -> Iterator[Standin]:
    """Start `standin_llm.py` (mode, owned_by, crash_at); returns its base URL."""
    started: list[subprocess.Popen[str]] = []

    def start(mode: str, owned_by: str = "me", crash_at: int = 0, port: int = 0) -> str:
        argv = [sys.executable, str(STANDIN), str(port), ALIAS, owned_by, mode, str(crash_at)]
        proc = subprocess.Popen(argv, stdout=subprocess.PIPE, text=True, preexec_fn=die_with_parent)
        started.append(proc)
        assert proc.stdout is not None
        line = proc.stdout.readline()
        assert line.startswith("port "), line
        return f"http://127.0.0.1:{line.split()[1]}/v1"

    yield start
    for proc in started:
        proc.kill()
        proc.wait()


def _broken_message_is_complete(message: str) -> None:
    assert "llama.cpp engine is broken on this machine" in message
    assert "CPU flags (/proc/cpuinfo): " in message
    assert "rm -rf" in message and "wheels && bash scripts/setup.sh --tests" in message
    assert 'CMAKE_ARGS="-DGGML_NATIVE=OFF -DGGML_AVX2=ON' in message


# -- serve: the check before it says it is up ----------------------------------------------------
def test_the_real_server_passes_the_check(llamacpp_server: ServerHandle) -> None:
    assert "NVIDIA" in llamacpp_server.checked.upper()


def test_a_server_answering_garbage_is_stopped_with_the_flags_and_the_fix(tmp_path: Path) -> None:
    port = free_port()
    argv = [sys.executable, str(STANDIN), str(port), ALIAS, "me", "garbage"]
    with pytest.raises(EngineBroken) as caught:
        start_server(
            argv, "llamacpp", ALIAS, "127.0.0.1", port, settings=SETTINGS, environ=os.environ,
            limit_s=120, log_dir=tmp_path,
        )  # fmt: skip
    message = str(caught.value)
    assert "it answered 'ationsations" in message and PROBE_QUESTION in message
    _broken_message_is_complete(message)
    assert port_is_free(port)  # stopped before the error was raised


def test_a_server_that_segfaults_on_the_check_is_reported_the_same_way(tmp_path: Path) -> None:
    port = free_port()
    argv = [sys.executable, str(STANDIN), str(port), ALIAS, "me", "good", "1"]
    with pytest.raises(EngineBroken) as caught:
        start_server(
            argv, "llamacpp", ALIAS, "127.0.0.1", port, settings=SETTINGS, environ=os.environ,
            limit_s=120, log_dir=tmp_path,
        )  # fmt: skip
    message = str(caught.value)
    assert "the server died with exit code 139 (SIGSEGV: a segmentation fault)" in message
    _broken_message_is_complete(message)
    assert f"server log: {tmp_path}" in message


def test_kgqa_llm_serve_exits_3_on_a_broken_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """`kgqa llm serve` builds the real llama.cpp command; the stand-in takes its place here."""
    from qa.cli import main

    serving = importlib.import_module("qa.llm.serve")  # `qa.llm.serve` the attribute is serve()

    def standin_command(model: str, alias: str, host: str, port: int, settings: Any) -> list[str]:
        return [sys.executable, str(STANDIN), str(port), alias, "me", "garbage"]

    monkeypatch.setattr(serving, "_llamacpp_command", standin_command)
    code = main(["llm", "serve", "--engine", "llamacpp", "--port", str(free_port())])
    err = capsys.readouterr().err
    assert code == 3, err
    assert err.startswith("kgqa llm serve: the llama.cpp engine is broken") and "stopped" in err


# -- prepare: the assembled model in process (in a child) ---------------------------------------
def test_the_embedded_model_passes_the_in_process_check(llamacpp_gguf: Path) -> None:
    checked = check_gguf(llamacpp_gguf, threads=2)
    assert "NVIDIA" in checked.content.upper()


@pytest.mark.parametrize(
    ("script", "expected"),
    [
        ("kill -SEGV $$", "ended with exit code 139 (SIGSEGV: a segmentation fault)"),
        ("""echo '{"content": "Intel"}'""", "it answered 'Intel'"),
    ],
    ids=["segfault", "wrong"],
)
def test_an_engine_that_crashes_or_answers_wrongly_in_process_is_reported(
    tmp_path: Path, script: str, expected: str
) -> None:
    """``python`` is a script standing in for an interpreter whose llama_cpp is broken."""
    python = tmp_path / "python"
    python.write_text(f"#!/bin/sh\n{script}\n")
    python.chmod(0o755)
    with pytest.raises(EngineBroken, match="engine is broken") as caught:
        check_gguf(tmp_path / "model.gguf", python=str(python))
    assert expected in str(caught.value)
    assert "CPU flags (/proc/cpuinfo)" in str(caught.value)


# -- ask: says why it answered without the LLM, first ---------------------------------------------
ARTICLE = """# 部署选型

| 引擎 | 特点 |
|---|---|
| TensorRT | NVIDIA GPU 上延迟最低 |
| OpenVINO | Intel CPU 与边缘设备 |
"""


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return article_store(tmp_path_factory, {"guide.md": ARTICLE})


def _ask(store: Path, url: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "qa.cli", "ask", "--store", str(store), "--no-dense"]
    argv += ["--llm", url, "在 NVIDIA GPU 上延迟最低的推理引擎是什么？"]
    env = {**os.environ, "PYTHONPATH": str(REPO), "KGQA_LLM_MODEL": ALIAS}
    return subprocess.run(argv, cwd=REPO, env=env, capture_output=True, text=True, timeout=600)


def test_ask_with_a_broken_engine_says_so_first(store: Path, standin: Standin) -> None:
    done = _ask(store, standin("garbage"))
    assert done.returncode == 0, done.stderr
    first = done.stderr.splitlines()[0]
    assert first.startswith("kgqa ask: answered without the LLM (llm-bad-response)"), done.stderr
    assert "kgqa ask: the llama.cpp engine is broken on this machine" in done.stderr
    _broken_message_is_complete(done.stderr)
    assert "TensorRT" in done.stdout  # the graph's answer, all the same


def test_ask_whose_server_dies_on_the_question_says_so_first(store: Path, standin: Standin) -> None:
    done = _ask(store, standin("good", crash_at=1))
    assert done.returncode == 0, done.stderr
    assert done.stderr.startswith("kgqa ask: answered without the LLM (llm-"), done.stderr
    assert "nothing answers at http://127.0.0.1:" in done.stderr
    assert "TensorRT" in done.stdout


def test_diagnose_a_healthy_server_finds_nothing(standin: Standin) -> None:
    assert diagnose_server(LLMSettings(base_url=standin("good"), model=ALIAS)) is None
