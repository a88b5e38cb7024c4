"""The one exception tree of kgqa. Every error says what went wrong, where, and how to fix it.

KGQAError
├── IngestError        a document could not be loaded or parsed (carries the document id)
├── StoreError         the store is missing, corrupt, or from another schema version / embedder
├── QuestionError      a question is empty, too long, or otherwise unusable
├── LLMError           the LLM server is down, slow, or answered something unusable
│   ├── LLMUnavailable
│   ├── LLMTimeout
│   └── LLMBadResponse
└── SnippetError       a snippet could not be validated (not: the snippet failed validation)
"""

from __future__ import annotations

__all__ = [
    "IngestError",
    "KGQAError",
    "LLMBadResponse",
    "LLMError",
    "LLMTimeout",
    "LLMUnavailable",
    "QuestionError",
    "SnippetError",
    "StoreError",
]


class KGQAError(Exception):
    """Base of every error kgqa raises on purpose."""


class IngestError(KGQAError):
    """A document could not be ingested."""

    def __init__(self, message: str, *, doc: str | None = None) -> None:
        self.doc = doc
        super().__init__(f"{doc}: {message}" if doc else message)


class StoreError(KGQAError):
    """The store cannot be read or written as asked."""


class QuestionError(KGQAError):
    """The question cannot be answered as given (empty, too long, not text)."""


class LLMError(KGQAError):
    """The LLM server could not give a usable answer."""


class LLMUnavailable(LLMError):
    """No server answers at the configured address."""


class LLMTimeout(LLMError):
    """The server did not answer in time."""


class LLMBadResponse(LLMError):
    """The server answered, but not with something usable (malformed JSON, cut-off stream)."""


class SnippetError(KGQAError):
    """A snippet could not be validated at all (the validator itself failed)."""
