"""Retrieval, answering, citation checks, snippet validation, evaluation, API and CLI."""

__all__: list[str] = []
