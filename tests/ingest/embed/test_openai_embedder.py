"""The OpenAI-compatible embedder against a real `/v1/embeddings` server on 127.0.0.1:
llama-cpp-python's server with `--embedding true` over the embedded 0.5B model (it answers one
vector per token, which the embedder averages and asks for one text at a time). Skips locally,
fails on CI, without llama.cpp or the model (`tests/needs.py`)."""

from __future__ import annotations

import importlib.util
import json
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import numpy as np
import pytest
from needs import skip_or_fail
from processes import die_with_parent, wait_for
from store_fixture import SETTINGS

from ingest.embed import EmbedderError, OpenAIEmbedder, make_embedder
from ingest.pipeline import ingest_corpus
from kg.errors import LLMError
from kg.lexicon import Lexicon
from kg.store import Store
from qa.api import Assistant
from qa.llm.prepare import DEFAULT_MODEL, prepare_model

MODEL = "kgqa-embed-test"
TEXTS = ["PyTorch runs on NVIDIA GPUs.", "OpenVINO targets Intel CPUs.", "边缘设备用 OpenVINO。"]


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def _up(url: str) -> bool:
    try:
        return httpx.get(f"{url}/models", timeout=2).status_code == 200
    except httpx.HTTPError:
        return False


@pytest.fixture(scope="module")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """llama.cpp's OpenAI-compatible server in embedding mode, on a free port."""
    if importlib.util.find_spec("llama_cpp") is None:
        skip_or_fail("llamacpp", "llama.cpp not installed: pip install 'kgqa[llm]'")
    try:
        gguf = prepare_model(DEFAULT_MODEL, SETTINGS.cache_dir / "models")
    except LLMError as err:
        skip_or_fail("llamacpp", f"model not available: {err}")
    port = _free_port()
    log = tmp_path_factory.mktemp("embed-server") / "server.log"
    command = [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf)]
    command += ["--model_alias", MODEL, "--embedding", "true", "--host", "127.0.0.1"]
    command += ["--port", str(port), "--n_ctx", "2048", "--n_threads", "1"]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            command, stdout=out, stderr=subprocess.STDOUT, preexec_fn=die_with_parent
        )
    url = f"http://127.0.0.1:{port}/v1"
    if wait_for(lambda: proc.poll() is not None or _up(url), 180, step_s=0.5) is None or (
        proc.poll() is not None
    ):
        proc.kill()
        skip_or_fail("llamacpp", f"the embedding server did not start:\n{log.read_text()[-2000:]}")
    yield url
    proc.terminate()
    proc.wait(timeout=30)


def test_vectors_are_normalised_and_in_order(server_url: str) -> None:
    embedder = make_embedder(f"openai:{MODEL}@{server_url}/")
    assert isinstance(embedder, OpenAIEmbedder)
    assert embedder.spec == f"openai:{MODEL}@{server_url}"
    many = [f"{text} ({n})" for n in range(4) for text in TEXTS]
    vectors = embedder.embed_passages(many)
    assert vectors.shape == (len(many), embedder.dim) and vectors.dtype == np.float32
    assert np.allclose(np.linalg.norm(vectors, axis=1), 1.0, atol=1e-5)
    alone = np.stack([embedder.embed_passages([text])[0] for text in many])
    assert np.array_equal(vectors, alone)  # the same vector whatever the batch, row for row
    assert embedder.id == f"openai:{MODEL}:{embedder.dim}"
    assert embedder.embed_queries([]).shape == (0, embedder.dim)


def test_a_store_embedded_at_the_server_answers_from_it(server_url: str, tmp_path: Path) -> None:
    corpus = tmp_path / "corpus"
    corpus.mkdir()
    (corpus / "engines.md").write_text(
        "# Engines\n\n- OpenVINO targets Intel CPUs.\n- TensorRT targets NVIDIA GPUs.\n",
        encoding="utf-8",
    )
    spec = f"openai:{MODEL}@{server_url}"
    report = ingest_corpus(
        [corpus], tmp_path / "store", make_embedder(spec), Lexicon.default(), embedder_spec=spec
    )
    assert report.ok and report.embedded_chunks > 0
    manifest = Store.open(tmp_path / "store").manifest
    assert manifest.embedder_spec == spec and manifest.embedder.startswith(f"openai:{MODEL}:")
    assistant = Assistant.open(tmp_path / "store", settings=SETTINGS, llm="none")
    answer = assistant.ask("Which engine targets Intel CPUs?")
    assert answer.recommendations and answer.recommendations[0].name == "OpenVINO"
    embedder = assistant.retriever._embedder_or_none()
    assert embedder is not None and embedder.id == manifest.embedder  # questions go there too
    assert json.loads(answer.model_dump_json())["citations"]


def test_a_server_that_does_not_answer_is_named() -> None:
    embedder = OpenAIEmbedder(f"http://127.0.0.1:{_free_port()}/v1", MODEL, timeout_s=5)
    with pytest.raises(EmbedderError, match=r"embedding server at http://127\.0\.0\.1:\d+/v1"):
        embedder.embed_passages(["x"])
