"""The reader's way in: `make_llm` builds the reader for an `--llm` spec (`none`, `auto`, a URL,
`vllm-offline:MODEL_DIR`), and `stream_answer_field` reads a streamed JSON answer's sentence as it
arrives. The reader itself is `qa.decide.reader.Reader`.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any

from kg.errors import LLMBadResponse, LLMError
from qa.config import LLMSettings
from qa.llm.client import ChatModel
from qa.llm.offline import open_offline_chat, parse_offline_spec

if TYPE_CHECKING:
    from qa.decide.reader import Reader

__all__ = ["make_llm", "stream_answer_field"]


def stream_answer_field(pieces: Iterator[str]) -> Iterator[str | dict[str, Any]]:
    """Yield the text of the JSON `answer` field as it streams, then the parsed object.

    >>> list(stream_answer_field(iter(['{"answer": "Py', 'Torch\\\\n", "abstain": false}'])))
    ['Py', 'Torch\\n', {'answer': 'PyTorch\\n', 'abstain': False}]
    """
    buffer = ""
    emitted = 0  # characters of the decoded answer value already yielded
    for piece in pieces:
        buffer += piece
        match = re.search(r'"answer"\s*:\s*"', buffer)
        if match is None:
            continue
        raw = buffer[match.end() :]
        end = re.search(r'(?<!\\)(?:\\\\)*"', raw)
        partial = raw[: end.start() + len(end.group(0)) - 1] if end else raw
        partial = re.sub(r"\\(u[0-9a-fA-F]{0,3})?$", "", partial)  # an escape cut in half
        try:
            decoded = json.loads(f'"{partial}"')
        except json.JSONDecodeError:
            continue
        if len(decoded) > emitted:
            yield decoded[emitted:]
            emitted = len(decoded)
    try:
        parsed = json.loads(buffer)
    except json.JSONDecodeError as err:
        raise LLMBadResponse(
            f"the LLM's answer is not valid JSON ({err}): {buffer[:120]!r}"
        ) from err
    if not isinstance(parsed, dict):
        raise LLMBadResponse("the LLM's answer is not a JSON object")
    yield parsed


def make_llm(
    spec: str,
    settings: LLMSettings,
    *,
    embedded: Callable[[], str | None] | None = None,
) -> Reader | None:
    """The reader for `--llm SPEC`, over the given settings of the chat server.

    `none`: None; `auto`: the configured server if it answers, else the embedded model
    (`embedded()` starts it and returns its URL, None where it is not installed), else None; a
    URL: that server (raises `LLMError` when nothing answers there); `vllm-offline:MODEL_DIR`:
    vLLM's batched `LLM.chat` in this process, where vLLM is importable (raises `LLMError` when
    it cannot load; use a high `kgqa eval --concurrency` so questions batch).
    """
    from qa.decide.reader import Reader

    if spec == "none":
        return None
    model_dir = parse_offline_spec(spec)
    if model_dir is not None:  # vLLM in this process: concurrent questions batch together
        return Reader(open_offline_chat(model_dir, max_batch=64), mode=settings.reader_mode)
    base = settings if spec == "auto" else settings.model_copy(update={"base_url": spec})
    chat = ChatModel(base)
    if chat.health():
        chat.adopt_served_model()
        return Reader(chat, mode=settings.reader_mode)
    chat.close()
    if spec != "auto":
        raise LLMError(f"no LLM server answers at {spec}: start one with `kgqa llm serve`")
    url = embedded() if embedded is not None else None
    if url is None:
        return None
    chat = ChatModel(settings.model_copy(update={"base_url": url}))
    chat.adopt_served_model()
    return Reader(chat, mode=settings.reader_mode)
