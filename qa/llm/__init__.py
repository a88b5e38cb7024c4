"""The local LLM: settings, the OpenAI-compatible client seam, model preparation, serving."""

from qa.llm.answer_schema import build_answer_schema
from qa.llm.client import ChatMessage, ChatModel, ChatResult, response_format_for
from qa.llm.prepare import (
    MODELS,
    ModelSpec,
    add_prepare_arguments,
    cmd_prepare,
    convert_for_vllm,
    prepare_model,
)
from qa.llm.serve import ServerHandle, add_serve_arguments, cmd_serve, find_vllm_python, serve
from qa.llm.settings import LLMKind, LLMSettings, load_llm_settings

__all__ = [
    "MODELS",
    "ChatMessage",
    "ChatModel",
    "ChatResult",
    "LLMKind",
    "LLMSettings",
    "ModelSpec",
    "ServerHandle",
    "add_prepare_arguments",
    "add_serve_arguments",
    "build_answer_schema",
    "cmd_prepare",
    "cmd_serve",
    "convert_for_vllm",
    "find_vllm_python",
    "load_llm_settings",
    "prepare_model",
    "response_format_for",
    "serve",
]
