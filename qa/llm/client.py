"""`ChatModel`: the one seam between kgqa and an OpenAI-compatible chat server.

It speaks ``POST /v1/chat/completions`` (plain and SSE-streamed) and ``GET /v1/models`` over
httpx, to vLLM (GPU or CPU build), llama.cpp's server, or any OpenAI-compatible endpoint. It
retries connect errors and 5xx with exponential backoff (never 4xx), bounds every request by
``timeout_s`` in all (a server that trickles bytes is cut off too), limits requests in flight, and
expresses a JSON schema for structured output the way each server kind understands it. It sends
no more requests at once than the server takes (`ChatModel.concurrency`: llama-cpp-python's server
runs one at a time), so that a queued request's time limit starts when the server takes it. Every
failure is an `LLMError`:

    LLMError
    ├── LLMUnavailable   nothing answers at base_url (after retries), or it kept answering 5xx
    ├── LLMTimeout       the server took longer than timeout_s (or the concurrency slot did)
    └── LLMBadResponse   4xx, malformed JSON, a reply without choices, a cut-off stream
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Literal

import httpx
from pydantic import BaseModel

from kg.errors import LLMBadResponse, LLMError, LLMTimeout, LLMUnavailable
from qa.config import LLMKind, LLMSettings

__all__ = ["ChatMessage", "ChatModel", "ChatResult", "response_format_for"]

_RETRYABLE_STATUS = frozenset({429, 500, 502, 503, 504})


class ChatMessage(BaseModel):
    """One message of a chat."""

    role: Literal["system", "user", "assistant"]
    content: str


class ChatResult(BaseModel):
    """A finished (non-streamed) chat completion."""

    content: str
    model: str
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float = 0.0

    def parse_json(self) -> Any:
        """The content parsed as JSON; `LLMBadResponse` if it is not JSON (e.g. cut at max_tokens).

        >>> ChatResult(content='{"a": 1}', model="m").parse_json()
        {'a': 1}
        """
        try:
            return json.loads(self.content)
        except ValueError as exc:
            why = " (cut at max_tokens: raise it)" if self.finish_reason == "length" else ""
            raise LLMBadResponse(
                f"model {self.model} answered text that is not JSON{why}: {self.content[:200]!r}"
            ) from exc


def response_format_for(kind: LLMKind, schema: Mapping[str, Any], name: str) -> dict[str, Any]:
    """The ``response_format`` that constrains output to ``schema`` on a server of ``kind``.

    >>> response_format_for(LLMKind.LLAMACPP, {"type": "object"}, "answer")
    {'type': 'json_object', 'schema': {'type': 'object'}}
    >>> response_format_for(LLMKind.VLLM, {"type": "object"}, "answer")["type"]
    'json_schema'
    """
    if kind is LLMKind.LLAMACPP:
        return {"type": "json_object", "schema": dict(schema)}
    if kind is LLMKind.AUTO:
        raise ValueError("resolve LLMKind.AUTO to a concrete server kind first")
    spec: dict[str, Any] = {"name": name, "schema": dict(schema)}
    if kind is LLMKind.OPENAI:
        spec["strict"] = True
    return {"type": "json_schema", "json_schema": spec}


def _kind_from_owner(owned_by: str) -> LLMKind:
    """Guess the server kind from ``owned_by`` of GET /v1/models.

    >>> _kind_from_owner("vllm"), _kind_from_owner("me"), _kind_from_owner("openai")
    (<LLMKind.VLLM: 'vllm'>, <LLMKind.LLAMACPP: 'llamacpp'>, <LLMKind.OPENAI: 'openai'>)
    """
    owner = owned_by.lower()
    if owner == "vllm":
        return LLMKind.VLLM
    if owner in {
        "me",
        "llamacpp",
        "llama.cpp",
    }:  # llama-cpp-python says "me"; llama-server "llamacpp"
        return LLMKind.LLAMACPP
    return LLMKind.OPENAI


class _Slots:
    """At most ``limit`` holders at once; the limit can change while it is in use."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._held = 0
        self._free = threading.Condition()

    def set_limit(self, limit: int) -> None:
        with self._free:
            self.limit = limit
            self._free.notify_all()

    def acquire(self, timeout: float) -> bool:
        with self._free:
            if not self._free.wait_for(lambda: self._held < self.limit, timeout):
                return False
            self._held += 1
            return True

    def release(self) -> None:
        with self._free:
            self._held -= 1
            self._free.notify()


class ChatModel:
    """Client of one OpenAI-compatible chat server, configured by `LLMSettings`.

    ``transport`` exists for failures a real local server cannot produce; tests use real servers.
    Thread-safe: share one instance between threads. Requests in flight are bounded by
    ``max_concurrency`` and by what the server takes (`concurrency`, asked before the first chat).
    """

    def __init__(
        self, settings: LLMSettings, *, transport: httpx.BaseTransport | None = None
    ) -> None:
        self.settings = settings
        headers = {"Accept": "application/json"}
        key = settings.api_key.get_secret_value()
        if key:
            headers["Authorization"] = f"Bearer {key}"
        self._http = httpx.Client(
            base_url=settings.base_url.rstrip("/"),
            headers=headers,
            timeout=httpx.Timeout(settings.timeout_s, connect=settings.connect_timeout_s),
            transport=transport,
        )
        self._slots = _Slots(settings.max_concurrency)
        self._server_slots: int | None = None
        self._slots_known = False
        self._asking = threading.Lock()
        self._kind: LLMKind | None = None if settings.kind is LLMKind.AUTO else settings.kind

    # -- lifecycle -----------------------------------------------------------------------------
    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> ChatModel:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- models / health -----------------------------------------------------------------------
    def list_models(self) -> list[str]:
        """Names the server serves (GET /v1/models)."""
        return [str(m.get("id")) for m in self._models()]

    def health(self) -> bool:
        """True if the server answers GET /v1/models now (no retries, connect timeout only), or
        takes the connection but is busy: llama-cpp-python's server answers nothing, not even
        /v1/models, while it works on another request (its chats then wait their turn)."""
        try:
            response = self._http.get("/models", timeout=self.settings.connect_timeout_s)
        except httpx.ReadTimeout:
            return True  # connected and working on someone else's request
        except httpx.HTTPError:
            return False
        return response.status_code == 200

    def adopt_served_model(self) -> None:
        """Name requests after the model the server serves, where it serves one model and not
        the configured one (`--llm URL` at a server started with another model: vLLM refuses
        a name it does not serve, and llama-cpp-python's answers would carry the wrong name).
        A server that does not say now (busy, down) keeps the configured name."""
        try:
            models = self._model_list(timeout=self.settings.connect_timeout_s)
        except LLMError:
            return
        served = [str(m["id"]) for m in models if m.get("id")]
        if len(served) == 1 and self.settings.model not in served:
            self.settings = self.settings.model_copy(update={"model": served[0]})

    def _model_list(self, timeout: float | None = None) -> list[dict[str, Any]]:
        """GET /v1/models once, no retries (`timeout`: the client's own when None); the models
        it lists, at least one; `LLMError` if it cannot be asked or lists none."""
        url = self._url("/models")
        try:
            response = self._http.get("/models", timeout=timeout or httpx.USE_CLIENT_DEFAULT)
            body = response.json() if response.status_code == 200 else None
        except httpx.TimeoutException as exc:
            raise self._timeout(exc) from exc
        except (httpx.HTTPError, ValueError) as exc:
            raise LLMUnavailable(f"cannot ask {url} what it serves: {exc}") from exc
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list) or not data or not all(isinstance(m, dict) for m in data):
            raise LLMBadResponse(f"{url} answered without a model list: {str(body)[:200]}")
        return data

    def server_kind(self) -> LLMKind:
        """The configured kind, or (for ``auto``) the kind the server names in /v1/models."""
        if self._kind is None:
            models = self._models()
            if not models:
                raise LLMBadResponse(f"{self._url('/models')} lists no model; is it loaded?")
            self._kind = _kind_from_owner(str(models[0].get("owned_by", "")))
        return self._kind

    def server_concurrency(self) -> int | None:
        """How many requests the server says it runs at once: 1 for llama-cpp-python's server
        (one model context behind a lock; the others wait in turn), the slots of llama.cpp's own
        ``llama-server`` (``/props``); None where the server does not say (vLLM batches up to
        its ``--max-num-seqs``; OpenAI). One GET each, no retries; `LLMError` if it cannot ask."""
        owner = str(self._model_list()[0].get("owned_by", "")).lower()
        if owner == "me":  # llama-cpp-python: one Llama behind a lock, no parallel slots
            return 1
        if owner in {"llamacpp", "llama.cpp"}:  # llama-server: --parallel N slots
            root = str(self._http.base_url).rstrip("/").removesuffix("/v1")
            try:
                props = self._http.get(f"{root}/props").json()
                return max(1, int(props["total_slots"]))
            except (httpx.HTTPError, ValueError, KeyError, TypeError):
                return 1
        return None

    def concurrency(self) -> int:
        """Requests this client sends at once: ``max_concurrency``, or fewer where the server
        takes fewer (`server_concurrency`, asked once; until it answers, ``max_concurrency``).

        `kgqa eval` answers this many questions at once; the UI's LLM requests wait for a slot.
        """
        if not self._slots_known:
            with self._asking:
                if not self._slots_known:
                    try:
                        self._server_slots = self.server_concurrency()
                    except LLMError:
                        return self._slots.limit  # ask again next time
                    limit = min(self.settings.max_concurrency, self._server_slots or 1 << 30)
                    self._slots.set_limit(limit)
                    self._slots_known = True
        return self._slots.limit

    def _models(self) -> list[dict[str, Any]]:
        with self._request("GET", "/models", None) as response:
            body = self._read_json(response, time.monotonic() + self.settings.timeout_s)
        data = body.get("data") if isinstance(body, dict) else None
        if not isinstance(data, list) or not all(isinstance(m, dict) for m in data):
            raise LLMBadResponse(f"{self._url('/models')} answered without a model list: {body!r}")
        return data

    # -- chat ----------------------------------------------------------------------------------
    def chat(
        self,
        messages: Sequence[ChatMessage | Mapping[str, str]],
        *,
        schema: Mapping[str, Any] | None = None,
        schema_name: str = "answer",
        max_tokens: int | None = None,
    ) -> ChatResult:
        """One completion; with ``schema`` the server is asked to constrain output to it."""
        payload = self._payload(messages, schema, schema_name, max_tokens, stream=False)
        started = time.monotonic()
        with self._request("POST", "/chat/completions", payload) as response:
            body = self._read_json(response, started + self.settings.timeout_s)
        try:
            choice = body["choices"][0]
            content = choice["message"]["content"] or ""
            usage = body.get("usage") or {}
        except (KeyError, IndexError, TypeError) as exc:
            raise LLMBadResponse(
                f"{self._url('/chat/completions')} answered JSON without choices[0].message: "
                f"{str(body)[:200]}; is this an OpenAI-compatible server?"
            ) from exc
        return ChatResult(
            content=str(content),
            model=str(body.get("model", self.settings.model)),
            finish_reason=choice.get("finish_reason"),
            prompt_tokens=usage.get("prompt_tokens"),
            completion_tokens=usage.get("completion_tokens"),
            latency_s=time.monotonic() - started,
        )

    def stream(
        self,
        messages: Sequence[ChatMessage | Mapping[str, str]],
        *,
        schema: Mapping[str, Any] | None = None,
        schema_name: str = "answer",
        max_tokens: int | None = None,
    ) -> Iterator[str]:
        """Yield the completion's text pieces as the server streams them (SSE ``data:`` lines).

        A stream that ends without ``data: [DONE]`` (connection cut) raises `LLMBadResponse`.
        """
        payload = self._payload(messages, schema, schema_name, max_tokens, stream=True)
        deadline = time.monotonic() + self.settings.timeout_s
        url = self._url("/chat/completions")
        with self._request("POST", "/chat/completions", payload) as response:
            try:
                for line in response.iter_lines():
                    self._check_deadline(deadline)
                    if not line.startswith("data:"):
                        continue  # blank separators, ": keep-alive" comments, event: lines
                    data = line[len("data:") :].strip()
                    if data == "[DONE]":
                        return
                    piece = _delta_text(data, url)
                    if piece:
                        yield piece
            except httpx.TimeoutException as exc:
                raise self._timeout(exc) from exc
            except httpx.TransportError as exc:
                raise LLMBadResponse(f"stream from {url} was cut off: {exc}; retry") from exc
        raise LLMBadResponse(f"stream from {url} ended without [DONE]: cut off; retry")

    # -- internals -----------------------------------------------------------------------------
    def _payload(
        self,
        messages: Sequence[ChatMessage | Mapping[str, str]],
        schema: Mapping[str, Any] | None,
        schema_name: str,
        max_tokens: int | None,
        *,
        stream: bool,
    ) -> dict[str, Any]:
        payload: dict[str, Any] = {
            "model": self.settings.model,
            "messages": [ChatMessage.model_validate(m).model_dump() for m in messages],
            "max_tokens": max_tokens or self.settings.max_tokens,
            "temperature": self.settings.temperature,
            "stream": stream,
        }
        if schema is not None:
            payload["response_format"] = response_format_for(
                self.server_kind(), schema, schema_name
            )
        return payload

    def _url(self, path: str) -> str:
        return f"{self._http.base_url}{path.lstrip('/')}"

    @contextmanager
    def _request(
        self, method: str, path: str, payload: dict[str, Any] | None
    ) -> Iterator[httpx.Response]:
        """Send with retries; yield the open (streaming) response with a 2xx status."""
        if method == "POST":
            self.concurrency()
        if not self._slots.acquire(timeout=self.settings.timeout_s):
            raise LLMTimeout(
                f"no free request slot within {self.settings.timeout_s}s: "
                f"{self._slots.limit} request(s) in flight, as many as {self._limit_source()}"
            )
        try:
            response = self._send_with_retries(method, path, payload)
            try:
                yield response
            finally:
                response.close()
        finally:
            self._slots.release()

    def _limit_source(self) -> str:
        if self._server_slots is not None and self._server_slots <= self.settings.max_concurrency:
            return f"the server at {self.settings.base_url} takes at once; serve more slots or wait"
        return "KGQA_LLM_MAX_CONCURRENCY allows; raise it"

    def _send_with_retries(
        self, method: str, path: str, payload: dict[str, Any] | None
    ) -> httpx.Response:
        url = self._url(path)
        attempts = self.settings.max_retries + 1
        last = ""
        for attempt in range(attempts):
            if attempt:
                time.sleep(self.settings.backoff_s * 2 ** (attempt - 1))
            request = self._http.build_request(method, path, json=payload)
            try:
                response = self._http.send(request, stream=True)
            except httpx.ConnectTimeout as exc:
                last = f"connect timed out after {self.settings.connect_timeout_s}s ({exc})"
                continue
            except httpx.ConnectError as exc:
                last = f"connection failed ({exc})"
                continue
            except httpx.TimeoutException as exc:
                raise self._timeout(exc) from exc
            except httpx.TransportError as exc:
                raise LLMBadResponse(f"{url} broke the connection: {exc}") from exc
            if response.status_code < 400:
                return response
            body = _read_small(response)
            if response.status_code in _RETRYABLE_STATUS:
                last = f"HTTP {response.status_code}: {body}"
                continue
            raise LLMBadResponse(
                f"{url} refused the request with HTTP {response.status_code}: {body}; check "
                f"KGQA_LLM_MODEL ({self.settings.model!r}) against GET /v1/models and the API key"
            )
        raise LLMUnavailable(
            f"no usable answer from {url} after {attempts} attempt(s): {last}. Start a server "
            "with `kgqa llm serve` and export KGQA_LLM_BASE_URL, or answer without it (--llm none)"
        )

    def _read_json(self, response: httpx.Response, deadline: float) -> Any:
        """Read the whole body (bounded by ``deadline``) and parse it as JSON."""
        chunks: list[bytes] = []
        try:
            for chunk in response.iter_bytes():
                chunks.append(chunk)
                self._check_deadline(deadline)
        except httpx.TimeoutException as exc:
            raise self._timeout(exc) from exc
        except httpx.TransportError as exc:
            raise LLMBadResponse(f"{response.request.url} cut the reply off: {exc}") from exc
        raw = b"".join(chunks)
        try:
            return json.loads(raw)
        except ValueError as exc:
            raise LLMBadResponse(
                f"{response.request.url} answered something that is not JSON: {raw[:200]!r}; "
                "is KGQA_LLM_BASE_URL an OpenAI-compatible API root (ending in /v1)?"
            ) from exc

    def _check_deadline(self, deadline: float) -> None:
        if time.monotonic() > deadline:
            raise LLMTimeout(self._timeout_message("reply still incomplete"))

    def _timeout(self, exc: Exception) -> LLMTimeout:
        return LLMTimeout(self._timeout_message(str(exc) or type(exc).__name__))

    def _timeout_message(self, detail: str) -> str:
        return (
            f"{self.settings.base_url} took longer than {self.settings.timeout_s}s ({detail}); "
            "raise KGQA_LLM_TIMEOUT_S, lower max_tokens, or serve a smaller model"
        )


def _delta_text(data: str, url: str) -> str:
    """The text of one SSE chunk of a streamed chat completion."""
    try:
        event = json.loads(data)
    except ValueError as exc:
        raise LLMBadResponse(f"stream from {url} sent a malformed event: {data[:200]!r}") from exc
    if not isinstance(event, dict):
        raise LLMBadResponse(f"stream from {url} sent a non-object event: {data[:200]!r}")
    if "error" in event:
        raise LLMBadResponse(f"stream from {url} reported an error: {event['error']!r}")
    choices = event.get("choices") or []
    if not choices:
        return ""  # usage-only chunks
    delta = choices[0].get("delta") or {}
    return str(delta.get("content") or "")


def _read_small(response: httpx.Response) -> str:
    """At most 300 characters of an error body, never raising."""
    try:
        return response.read()[:300].decode(errors="replace")
    except httpx.HTTPError as exc:
        return f"<unreadable body: {exc}>"
    finally:
        response.close()
