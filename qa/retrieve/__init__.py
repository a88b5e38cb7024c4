"""Retrieve: the graph paths and chunks a question leads to (`paths`), the evidence units that
answer it (`units`: lexical, dense and graph signals fused), and the index every answer point is
made from (`unit_index`: units by document, span and subject, turned into cited points)."""

from qa.retrieve.paths import Retriever, path_from_relations
from qa.retrieve.unit_index import UnitIndex
from qa.retrieve.units import RankedUnit, UnitSearch

__all__ = ["RankedUnit", "Retriever", "UnitIndex", "UnitSearch", "path_from_relations"]
