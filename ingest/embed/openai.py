"""Embeddings from any OpenAI-compatible `/v1/embeddings` server: vLLM serving an embedding model
on GPUs (`vllm serve MODEL --task embed`), llama.cpp's server with `--embedding true`, a hosted
API.

`make_embedder("openai:MODEL@BASE_URL")` builds one (`openai:intfloat/multilingual-e5-small@
http://gpu-box:8000/v1`); the spec is what the store's manifest keeps, so `kgqa ask` embeds its
questions at the same server. Passages go in batches, concurrently (`concurrency` requests at
once: a GPU server batches them); vectors come back L2-normalised, in order. Models of the e5
family expect `query: ` and `passage: ` before their texts: for a model whose name says e5 the
embedder adds them (`E5_PREFIXES`), for others nothing unless told. A server that answers one
vector per token (llama-cpp-python's for a model without a pooling type) has them averaged
(`pooled`) and is sent one text per request from then on: in its batches the texts' tokens
mix (the same text came back different in a batch and alone), and a store's vectors must not
depend on the batch.
"""

from __future__ import annotations

import re
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import numpy as np

from ingest.embed.protocol import EmbedderError, Vectors, normalised

__all__ = ["E5_PREFIXES", "OpenAIEmbedder", "parse_openai_spec", "pooled"]

#: The query and passage prefixes of the e5 models (their model cards' convention).
E5_PREFIXES = ("query: ", "passage: ")
_SPEC = re.compile(r"(?P<model>[^@]+)@(?P<url>https?://\S+)")


def parse_openai_spec(arg: str) -> tuple[str, str]:
    """(model, base URL) of the part of an `openai:` spec after the colon.

    >>> parse_openai_spec("intfloat/multilingual-e5-small@http://127.0.0.1:8000/v1/")
    ('intfloat/multilingual-e5-small', 'http://127.0.0.1:8000/v1')
    """
    match = _SPEC.fullmatch(arg.strip())
    if match is None:
        raise EmbedderError(
            f"openai:{arg} is no embedding server: write openai:MODEL@http://HOST:PORT/v1"
        )
    return match["model"], match["url"].rstrip("/")


def pooled(embedding: Any) -> list[float]:
    """One vector for an input: the vector itself, or the mean of its per-token vectors.

    >>> pooled([1.0, 2.0]), pooled([[1.0, 2.0], [3.0, 4.0]])
    ([1.0, 2.0], [2.0, 3.0])
    """
    if embedding and isinstance(embedding[0], list):
        mean: list[float] = np.asarray(embedding, dtype=np.float64).mean(axis=0).tolist()
        return mean
    return list(embedding)


class OpenAIEmbedder:
    """An `Embedder` over an OpenAI-compatible `/v1/embeddings` endpoint (see the module
    docstring). Thread-safe; the dimension is learnt from the server's first answer."""

    def __init__(
        self,
        base_url: str,
        model: str,
        *,
        api_key: str | None = None,
        timeout_s: float = 120.0,
        batch: int = 64,
        concurrency: int = 4,
        prefixes: tuple[str, str] | None = None,
    ) -> None:
        self.base_url, self.model = base_url.rstrip("/"), model
        self.batch, self.concurrency = batch, concurrency
        self.prefixes = prefixes or (E5_PREFIXES if "e5" in model.casefold() else ("", ""))
        import httpx  # only for an embedding server: `kgqa ask` does not load the HTTP client

        headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._client = httpx.Client(base_url=self.base_url, headers=headers, timeout=timeout_s)
        self._dim: int | None = None
        self._per_token = False  # the server answers per-token vectors: one text per request
        self._lock = threading.Lock()

    @property
    def spec(self) -> str:
        """The `make_embedder` string that rebuilds this embedder."""
        return f"openai:{self.model}@{self.base_url}"

    @property
    def id(self) -> str:
        """`openai:<model>:<dim>`: the model's, wherever it is served."""
        return f"openai:{self.model}:{self.dim}"

    @property
    def dim(self) -> int:
        """The vector dimension (one request to the server the first time)."""
        if self._dim is None:
            self._request(["dimension"])
        assert self._dim is not None
        return self._dim

    def _request(self, texts: list[str]) -> Vectors:
        """One `/embeddings` call: the rows in the order of `texts`."""
        import httpx

        try:
            response = self._client.post("/embeddings", json={"model": self.model, "input": texts})
            response.raise_for_status()
            data: list[dict[str, Any]] = response.json()["data"]
            raw = [item["embedding"] for item in sorted(data, key=lambda item: item["index"])]
        except (httpx.HTTPError, ValueError, KeyError, TypeError) as err:
            raise EmbedderError(
                f"the embedding server at {self.base_url} failed for model {self.model} "
                f"({type(err).__name__}: {err}): check that it serves that model"
            ) from err
        if raw and raw[0] and isinstance(raw[0][0], list):
            self._per_token = True
            if len(texts) > 1:
                return np.concatenate([self._request([text]) for text in texts], axis=0)
        rows = [pooled(row) for row in raw]
        if len(rows) != len(texts) or not rows or not rows[0]:
            raise EmbedderError(
                f"the embedding server at {self.base_url} returned {len(rows)} vectors for "
                f"{len(texts)} texts"
            )
        with self._lock:
            if self._dim is None:
                self._dim = len(rows[0])
        return normalised(rows, len(rows[0]))

    def _embed(self, texts: list[str], prefix: str) -> Vectors:
        dim = self.dim  # the first request also tells how the server answers
        if not texts:
            return np.zeros((0, dim), dtype=np.float32)
        size = 1 if self._per_token else self.batch
        batches = [
            [prefix + text for text in texts[start : start + size]]
            for start in range(0, len(texts), size)
        ]
        if len(batches) == 1:
            return self._request(batches[0])
        with ThreadPoolExecutor(min(self.concurrency, len(batches))) as pool:
            return np.concatenate(list(pool.map(self._request, batches)), axis=0)

    def embed_passages(self, texts: list[str]) -> Vectors:
        """Embed documents / chunks."""
        return self._embed(texts, self.prefixes[1])

    def embed_queries(self, texts: list[str]) -> Vectors:
        """Embed questions."""
        return self._embed(texts, self.prefixes[0])

    def close(self) -> None:
        """Close the HTTP connections."""
        self._client.close()
