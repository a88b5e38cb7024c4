"""Loading, structure parsing, extraction and indexing of documents."""

__all__: list[str] = []
