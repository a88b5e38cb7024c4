"""Verify: every point, edge, pick and model sentence of a draft is checked against the graph and
the documents before anything is written (`citations`)."""

from qa.verify.citations import CitationVerifier, VerificationResult, quote_in_document

__all__ = ["CitationVerifier", "VerificationResult", "quote_in_document"]
