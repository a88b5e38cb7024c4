"""The writer of a store on a FalkorDB server (`kg.falkor` says what goes where): a new
generation's graph and files, then the switch of `current`, then the generations before the
previous one deleted."""

from __future__ import annotations

import io
import json
import re
from collections import defaultdict
from pathlib import Path
from typing import Any

import numpy as np

from kg.documents import EvidenceUnit
from kg.errors import StoreError
from kg.falkor import MANIFEST, FalkorStore, _Server, parse_location
from kg.graph import KnowledgeGraph
from kg.store import DocRecord, DocumentEntry, Manifest, Store, StoreWriter, npy_bytes

__all__ = ["FalkorWriter"]

#: Rows per write query: a query's text carries its rows (the client inlines parameters).
_BATCH = 500


def _text(value: str) -> str:
    """A string property: FalkorDB's query text cannot hold NUL (the JSON copy keeps it).

    >>> _text("a\\x00b")
    'ab'
    """
    return value.replace("\x00", "")


class FalkorWriter(StoreWriter):
    """Builds the next generation on the server; `commit()` makes it live."""

    def __init__(self, root: Path, manifest: Manifest, previous: Store | None) -> None:
        self.server = _Server(parse_location(root))
        self.location = self.server.location
        self.previous = previous
        self.manifest = manifest
        try:
            # never reuse a generation's name: a killed writer's keys may still be there
            on_server = [
                int(m[1])
                for key in self.server.blobs.scan_iter(match=self.location.key("gen-*:files"))
                if (m := re.search(rb":gen-(\d+):files$", key))
            ]
        except self.server.errors as err:
            raise self.server.fail("listing generations", err) from err
        last = max([previous.manifest.generation if previous else 0, *on_server])
        self.manifest.generation = last + 1
        self.manifest.documents = {}
        self.generation = f"gen-{self.manifest.generation:06d}"
        self.root = Path(self.location.text)
        self.dir = self.root / self.generation
        self._files = self.location.key(self.generation, "files")
        self._graph_db = self.server.graph(self.generation)
        self._chunks: list[dict[str, Any]] = []
        self._chunk_count = 0
        self._dim: int | None = None
        self._query("CREATE INDEX FOR (e:Entity) ON (e.id)", "creating the entity index")

    def _query(self, query: str, doing: str, params: dict[str, Any] | None = None) -> None:
        try:
            self._graph_db.query(query, params)
        except self.server.errors as err:
            raise self.server.fail(doing, err) from err

    def _put(self, mapping: dict[str, bytes]) -> None:
        try:
            self.server.blobs.hset(self._files, mapping=mapping)  # type: ignore[arg-type]
        except self.server.errors as err:
            raise self.server.fail(f"writing {', '.join(mapping)}", err) from err

    def _add_chunks(self, doc_id: str, chunk_ids: list[str], vectors: np.ndarray) -> None:
        """Chunk nodes with their vectors, written in batches (the vector index is made with
        the first, when the dimension is known)."""
        for chunk_id, row in zip(chunk_ids, vectors.astype(np.float32), strict=True):
            self._chunks.append(
                {"id": chunk_id, "doc": doc_id, "ord": self._chunk_count, "v": row.tolist()}
            )
            self._chunk_count += 1
            if self._dim is None:
                self._dim = len(row)
                self._query(
                    "CREATE VECTOR INDEX FOR (c:Chunk) ON (c.embedding) OPTIONS "
                    f"{{dimension: {self._dim}, similarityFunction: 'cosine'}}",
                    "creating the vector index",
                )
        if len(self._chunks) >= _BATCH:
            self._flush_chunks()

    def _flush_chunks(self) -> None:
        if self._chunks:
            self._query(
                "UNWIND $rows AS r CREATE (:Chunk {id: r.id, doc: r.doc, ord: r.ord, "
                "embedding: vecf32(r.v)})",
                "writing chunk vectors",
                {"rows": self._chunks},
            )
            self._chunks = []

    def put_document(self, entry: DocumentEntry, record: DocRecord, vectors: np.ndarray) -> None:
        """Write a new or changed document: its record and vectors, and its chunk nodes."""
        self._put(
            {
                f"docs/{entry.key}.json": record.model_dump_json().encode("utf-8"),
                f"docs/{entry.key}.npy": npy_bytes(vectors.astype(np.float32)),
            }
        )
        self.manifest.documents[entry.id] = entry
        self._add_chunks(entry.id, [c.id for c in record.chunks], vectors)

    def keep_document(self, entry: DocumentEntry) -> None:
        """Carry an unchanged document over from the live generation (copied on the server's
        side of the client: its files, and its chunk nodes from its vectors)."""
        if not isinstance(self.previous, FalkorStore):
            raise StoreError("keep_document needs a previous generation on the same server")
        names = [f"docs/{entry.key}.json", f"docs/{entry.key}.npy"]
        record_raw, vectors_raw = (self.previous.optional_bytes(n) for n in names)
        if record_raw is None or vectors_raw is None:
            raise StoreError(f"{self.previous.dir / names[0]} is missing: rerun kgqa ingest")
        self._put(dict(zip(names, (record_raw, vectors_raw), strict=True)))
        self.manifest.documents[entry.id] = entry
        chunk_ids = [str(c["id"]) for c in json.loads(record_raw)["chunks"]]
        vectors = np.load(io.BytesIO(vectors_raw), allow_pickle=False)
        self._add_chunks(entry.id, chunk_ids, vectors)

    def put_graph(self, graph: KnowledgeGraph) -> None:
        """Every entity as a node and every relation as an edge of its type, each with its
        JSON (evidence included) and its place in the graph's order."""
        entities = [
            {"id": e.id, "type": e.type.value, "name": _text(e.name), "ord": n,
             "json": e.model_dump_json()}
            for n, e in enumerate(graph.entities())
        ]  # fmt: skip
        for start in range(0, len(entities), _BATCH):
            self._query(
                "UNWIND $rows AS r CREATE (:Entity {id: r.id, type: r.type, name: r.name, "
                "ord: r.ord, json: r.json})",
                "writing entities",
                {"rows": entities[start : start + _BATCH]},
            )
        by_type: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for n, r in enumerate(graph.relations()):
            by_type[r.relation.value].append(
                {"s": r.source, "t": r.target, "ord": n, "json": r.model_dump_json()}
            )
        for relation, rows in sorted(by_type.items()):
            if not relation.isidentifier():  # the schema's names are; a query's text holds it
                raise StoreError(f"relation type {relation!r} cannot name an edge type")
            for start in range(0, len(rows), _BATCH):
                self._query(
                    "UNWIND $rows AS r MATCH (a:Entity {id: r.s}), (b:Entity {id: r.t}) "
                    f"CREATE (a)-[:`{relation}` {{ord: r.ord, json: r.json}}]->(b)",
                    "writing relations",
                    {"rows": rows[start : start + _BATCH]},
                )

    def put_arrays(self, name: str, arrays: dict[str, np.ndarray]) -> None:
        """Named arrays as one `.npz` (no pickles)."""
        buffer = io.BytesIO()
        np.savez(buffer, allow_pickle=False, **arrays)
        self._put({name: buffer.getvalue()})

    def put_bytes(self, name: str, data: bytes) -> None:
        """A file already serialised (links.json, unit norms)."""
        self._put({name: data})

    def put_units(self, units: list[EvidenceUnit]) -> None:
        """Every unit as a node, with its JSON and its place in document order."""
        rows = [
            {"id": u.id, "doc": u.doc, "subject": u.subject, "ord": n, "json": u.model_dump_json()}
            for n, u in enumerate(units)
        ]
        for start in range(0, len(rows), _BATCH):
            self._query(
                "UNWIND $rows AS r CREATE (:Unit {id: r.id, doc: r.doc, subject: r.subject, "
                "ord: r.ord, json: r.json})",
                "writing units",
                {"rows": rows[start : start + _BATCH]},
            )

    def commit(self) -> FalkorStore:
        """Write the manifest, switch `current`, and delete generations older than the previous
        one (a reader of the previous one keeps a complete store)."""
        self._flush_chunks()
        self._put({MANIFEST: self.manifest.model_dump_json(indent=1).encode("utf-8")})
        keep = {self.generation} | (
            {self.previous.generation} if isinstance(self.previous, FalkorStore) else set()
        )
        blobs = self.server.blobs
        try:
            blobs.set(self.location.key("current"), self.generation.encode())
            for key in list(blobs.scan_iter(match=self.location.key("gen-*"))):
                generation = key.decode().rsplit("}:", 1)[1].split(":")[0]
                if generation not in keep:
                    blobs.delete(key)  # a graph key goes with DEL as any other key
        except self.server.errors as err:
            raise self.server.fail("switching to the new generation", err) from err
        return FalkorStore(self.server, self.generation, self.manifest)
