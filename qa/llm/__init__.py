"""The local LLM: the LLM answerer (`answerer`), the OpenAI-compatible client seam (`client`), vLLM
in process (`offline`), the embedded model's preparation (`prepare`), serving (`serve`), and where
vLLM lives (`runtime`). Its settings are `qa.config.LLMSettings`."""

from qa.llm.answer_schema import build_compact_schema
from qa.llm.client import ChatMessage, ChatModel, ChatResult, response_format_for
from qa.llm.prepare import MODELS, ModelSpec, convert_for_vllm, prepare_model
from qa.llm.runtime import find_vllm_python, vllm_cpu_env
from qa.llm.serve import ServerHandle, serve

__all__ = [
    "MODELS",
    "ChatMessage",
    "ChatModel",
    "ChatResult",
    "ModelSpec",
    "ServerHandle",
    "build_compact_schema",
    "convert_for_vllm",
    "find_vllm_python",
    "prepare_model",
    "response_format_for",
    "serve",
    "vllm_cpu_env",
]
