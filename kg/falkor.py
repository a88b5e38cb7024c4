"""The store on a FalkorDB server: the file store's generations, read and written over the wire.

A location `falkordb://HOST:PORT/NAME` names store NAME on the server at HOST:PORT (`kg.store`
dispatches here). Its keys all carry NAME as their hash tag (one shard of a cluster)::

    kgqa:{NAME}:current           the live generation's name, set last (the atomic switch)
    kgqa:{NAME}:snippet_results   cached snippet validation results (outlive generations)
    kgqa:{NAME}:gen-000007        the generation's graph (a FalkorDB graph key):
        (:Entity {id, type, name, ord, json})            every entity; json: the `Entity`
        (:Entity)-[:RELATION {ord, json}]->(:Entity)     every relation, typed by its relation
                                                         (RUNS_ON, ...), json with its evidence
        (:Unit {id, doc, subject, ord, json})            every evidence unit, linked
        (:Chunk {id, doc, ord, embedding})               chunk vectors (vecf32) under a cosine
                                                         vector index (`nearest_chunks`)
    kgqa:{NAME}:gen-000007:files  a hash of the generation's other files, by the file store's
                                  names: manifest.json, the lexical index arrays, unit norms,
                                  links, docs/<key>.json (text, extraction, chunks, snippets) and
                                  docs/<key>.npy (the chunk vectors as exact float32 rows, which
                                  a reader loads whole: reading 8,000 vector properties back
                                  through Cypher took 4 s here)

A writer (`kg.falkor_write.FalkorWriter`) fills a new generation's keys, then sets `current`; a
reader that opened the previous generation keeps reading it (the next commit deletes it), and a
killed writer leaves the live generation as it was. Readers only read (`GRAPH.RO_QUERY`, GET,
HGET), so they can read a replica: `redis-server --replicaof PRIMARY_HOST PRIMARY_PORT` with the
same module.
"""

from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, NamedTuple

import numpy as np
from pydantic import TypeAdapter, ValidationError

from kg.documents import EvidenceUnit
from kg.errors import StoreError
from kg.graph import KnowledgeGraph
from kg.schema import Entity, Relation
from kg.store import DocRecord, Manifest, Store, checked_manifest

if TYPE_CHECKING:
    import redis
    from falkordb import FalkorDB, Graph

__all__ = ["MANIFEST", "FalkorLocation", "FalkorStore", "parse_location"]

_LOCATION = re.compile(r"falkordb:/{1,2}(?P<host>[^/:]+)(?::(?P<port>\d+))?/(?P<name>[\w.-]+)/?")
_ENTITIES = TypeAdapter(list[Entity])
_RELATIONS = TypeAdapter(list[Relation])
_UNITS = TypeAdapter(list[EvidenceUnit])
#: The manifest's field in a generation's hash of files.
MANIFEST = "manifest.json"


class FalkorLocation(NamedTuple):
    """Where a store lives on a FalkorDB server."""

    host: str
    port: int
    name: str

    @property
    def text(self) -> str:
        """The location as `kgqa --store` takes it.

        >>> FalkorLocation("127.0.0.1", 6379, "docs").text
        'falkordb://127.0.0.1:6379/docs'
        """
        return f"falkordb://{self.host}:{self.port}/{self.name}"

    def key(self, *parts: str) -> str:
        """A key of this store (hash-tagged by the store's name).

        >>> FalkorLocation("h", 1, "docs").key("gen-000002", "files")
        'kgqa:{docs}:gen-000002:files'
        """
        return ":".join(["kgqa:{" + self.name + "}", *parts])


def parse_location(location: str | Path) -> FalkorLocation:
    """`falkordb://HOST[:PORT]/NAME` (port 6379 by default; `falkordb:/...`, what `pathlib`
    makes of it, too).

    >>> parse_location("falkordb://127.0.0.1:6390/team-docs")
    FalkorLocation(host='127.0.0.1', port=6390, name='team-docs')
    >>> parse_location(Path("falkordb://db.internal/docs")).port
    6379
    """
    match = _LOCATION.fullmatch(str(location))
    if match is None:
        raise StoreError(
            f"{location} is not a FalkorDB store location: write falkordb://HOST:PORT/NAME "
            "(NAME: letters, digits, '.', '_', '-')"
        )
    return FalkorLocation(match["host"], int(match["port"] or 6379), match["name"])


class _Server:
    """The two clients of one server: FalkorDB's for graph queries (it decodes replies as
    text) and a plain Redis one for the binary files."""

    def __init__(self, location: FalkorLocation) -> None:
        try:
            import redis
            from falkordb import FalkorDB
        except ImportError as err:
            raise StoreError(
                f"opening {location.text} needs the FalkorDB client: pip install 'kgqa[falkordb]'"
            ) from err
        self.location = location
        self.errors: tuple[type[Exception], ...] = (redis.RedisError,)
        self.read_only: type[Exception] = redis.ReadOnlyError
        options: dict[str, Any] = {"socket_connect_timeout": 10, "socket_keepalive": True}
        self.blobs: redis.Redis = redis.Redis(location.host, location.port, **options)
        try:
            self.blobs.ping()
            # the client asks the server what it is (sentinel, cluster) when it is made
            self.db: FalkorDB = FalkorDB(host=location.host, port=location.port, **options)
        except redis.ConnectionError as err:
            raise StoreError(
                f"no FalkorDB server answers at {location.host}:{location.port} ({err}): start "
                "one (`python -m kg.falkor_server --port PORT`, or redis-server with "
                "--loadmodule falkordb.so) or fix the location"
            ) from err

    def graph(self, generation: str) -> Graph:
        return self.db.select_graph(self.location.key(generation))

    def get(self, key: str, field: str | None = None) -> bytes | None:
        """A key's value (or a hash field's), as bytes; None where there is none."""
        value = self.blobs.get(key) if field is None else self.blobs.hget(key, field)
        return _as_bytes(value)

    def get_fields(self, key: str, fields: list[str]) -> list[bytes | None]:
        """Fields of a hash, in one round trip."""
        return [_as_bytes(value) for value in self.blobs.hmget(key, fields)]

    def fail(self, doing: str, err: Exception) -> StoreError:
        """A server error as a StoreError that says what was being done and how to go on."""
        if isinstance(err, self.read_only):
            return StoreError(
                f"{self.location.text} is a read-only replica ({doing}): write to the primary"
            )
        return StoreError(f"{self.location.text}: {doing} failed ({err}): rerun kgqa ingest")


def _as_bytes(value: object) -> bytes | None:
    """A reply of the binary client (which never decodes: the other arms are for the type
    checker).

    >>> _as_bytes(b"x"), _as_bytes("x"), _as_bytes(None)
    (b'x', b'x', None)
    """
    if value is None or isinstance(value, bytes):
        return value
    return str(value).encode("utf-8")


def _joined(rows: list[list[Any]]) -> bytes:
    """The first column of a result's rows (JSON texts) as one JSON array, for one validation.

    >>> _joined([['{"a": 1}'], ['{"a": 2}']])
    b'[{"a": 1},{"a": 2}]'
    """
    return ("[" + ",".join(row[0] for row in rows) + "]").encode("utf-8")


class FalkorStore(Store):
    """Read access to the live generation of a store on a FalkorDB server (see the module
    docstring); `root` is the location as a path (`falkordb:/HOST:PORT/NAME`), `dir` the
    generation under it, for messages."""

    def __init__(self, server: _Server, generation: str, manifest: Manifest) -> None:
        root = Path(server.location.text)
        super().__init__(root, root / generation, manifest)
        self.server, self.location, self.generation = server, server.location, generation
        self._files = server.location.key(generation, "files")
        self._graph_db = server.graph(generation)

    @staticmethod
    def exists(root: Path) -> bool:
        """Whether the server holds a live generation of the store (raises `StoreError` when
        no server answers: that is not "no store")."""
        server = _Server(parse_location(root))
        try:
            return bool(server.blobs.exists(server.location.key("current")))
        except server.errors as err:
            raise server.fail("looking for the store", err) from err

    @classmethod
    def open(cls, root: Path, *, embedder: str | None = None) -> FalkorStore:
        """Open the live generation; refuse other schema versions (or another embedder)."""
        server = _Server(parse_location(root))
        where = server.location.text
        try:
            live = server.get(server.location.key("current"))
            raw = (
                None
                if live is None
                else server.get(server.location.key(live.decode(), "files"), MANIFEST)
            )
        except server.errors as err:
            raise server.fail("reading the manifest", err) from err
        if live is None:
            raise StoreError(f"no store at {where}: run `kgqa ingest --store {where}` first")
        if raw is None:
            raise StoreError(f"store {where} has no manifest: run `kgqa ingest --store {where}`")
        try:
            data = json.loads(raw)
        except ValueError as err:
            raise StoreError(f"store {where} is unreadable ({err}): rerun kgqa ingest") from err
        return cls(server, live.decode(), checked_manifest(data, where, embedder))

    # -- the graph ------------------------------------------------------------------------------
    def _rows(self, query: str, doing: str) -> list[list[Any]]:
        try:
            rows: list[list[Any]] = self._graph_db.ro_query(query).result_set
        except self.server.errors as err:
            raise self.server.fail(doing, err) from err
        return rows

    def graph(self) -> KnowledgeGraph:
        """The merged graph: every entity and relation, in the order they were written."""
        if self._graph is None:
            entities = self._rows("MATCH (e:Entity) RETURN e.json ORDER BY e.ord", "reading")
            relations = self._rows("MATCH ()-[r]->() RETURN r.json ORDER BY r.ord", "reading")
            try:
                parts = (
                    _ENTITIES.validate_json(_joined(entities)),
                    _RELATIONS.validate_json(_joined(relations)),
                )
            except ValidationError as err:
                raise StoreError(f"{self.dir}: a broken entity or relation ({err})") from err
            self._graph = KnowledgeGraph.from_parts(*parts)
        return self._graph

    def units(self) -> list[EvidenceUnit]:
        """Every evidence unit of the corpus, linked, in document order."""
        rows = self._rows("MATCH (u:Unit) RETURN u.json ORDER BY u.ord", "reading the units")
        try:
            return _UNITS.validate_json(_joined(rows))
        except ValidationError as err:
            raise StoreError(f"{self.dir}: a broken unit ({err}): rerun kgqa ingest") from err

    def nearest_chunks(self, vector: np.ndarray, k: int = 10) -> list[tuple[str, float]]:
        """The `k` chunks nearest to a (normalised) vector by the server's vector index, as
        (chunk id, cosine distance), nearest first: a search other programs can run on the
        store without loading it."""
        query = (
            "CALL db.idx.vector.queryNodes('Chunk', 'embedding', $k, vecf32($q)) "
            "YIELD node, score RETURN node.id, score ORDER BY score, node.id"
        )
        params = {"k": k, "q": [float(x) for x in np.asarray(vector, dtype=np.float32)]}
        try:
            rows = self._graph_db.ro_query(query, params).result_set
        except self.server.errors as err:
            raise self.server.fail("searching the vector index", err) from err
        return [(str(row[0]), float(row[1])) for row in rows]

    # -- the files ------------------------------------------------------------------------------
    def _file(self, name: str) -> bytes | None:
        try:
            data = self.server.get(self._files, name)
        except self.server.errors as err:
            raise self.server.fail(f"reading {name}", err) from err
        return data

    def optional_arrays(self, name: str) -> dict[str, np.ndarray] | None:
        """`arrays`, or None where the generation has no such file (one a reader can make)."""
        data = self._file(name)
        return None if data is None else self._arrays(name, data)

    def arrays(self, name: str) -> dict[str, np.ndarray]:
        """Named arrays as the writer's `put_arrays` wrote them."""
        data = self._file(name)
        if data is None:
            raise StoreError(f"{self.dir / name} is missing: rerun kgqa ingest")
        return self._arrays(name, data)

    def _arrays(self, name: str, data: bytes) -> dict[str, np.ndarray]:
        try:
            with np.load(io.BytesIO(data), allow_pickle=False) as loaded:
                return {key: loaded[key] for key in loaded.files}
        except (OSError, ValueError) as err:
            raise StoreError(f"{self.dir / name} is unreadable ({err}): rerun kgqa ingest") from err

    def optional_bytes(self, name: str) -> bytes | None:
        """A file of the generation that a rebuild can do without, or None if it is missing."""
        return self._file(name)

    def doc_record(self, doc_id: str) -> DocRecord:
        """Everything stored for one document."""
        name = f"docs/{self.manifest.documents[doc_id].key}.json"
        return self._record(name, self._file(name))

    def _record(self, name: str, data: bytes | None) -> DocRecord:
        if data is None:
            raise StoreError(f"{self.dir / name} is missing: rerun kgqa ingest")
        try:
            return DocRecord.model_validate_json(data)
        except ValidationError as err:
            raise StoreError(f"{self.dir / name} is unreadable ({err}): rerun kgqa ingest") from err

    def records(self) -> Iterator[DocRecord]:
        """Every document's record, in id order (fetched in one round trip)."""
        ids = sorted(self.manifest.documents)
        names = [f"docs/{self.manifest.documents[i].key}.json" for i in ids]
        if not names:
            return
        try:
            blobs = self.server.get_fields(self._files, names)
        except self.server.errors as err:
            raise self.server.fail("reading the documents", err) from err
        for name, data in zip(names, blobs, strict=True):
            yield self._record(name, data)

    def doc_vectors(self, doc_id: str) -> np.ndarray:
        """The chunk embeddings of one document (rows follow its chunks)."""
        name = f"docs/{self.manifest.documents[doc_id].key}.npy"
        data = self._file(name)
        if data is None:
            raise StoreError(f"{self.dir / name} is missing: rerun kgqa ingest")
        try:
            vectors: np.ndarray = np.load(io.BytesIO(data), allow_pickle=False)
        except (OSError, ValueError) as err:
            raise StoreError(f"{self.dir / name} is unreadable ({err}): rerun kgqa ingest") from err
        return vectors

    def snippet_results(self) -> dict[str, Any]:
        """Cached snippet validation results, {} if none."""
        try:
            raw = self.server.get(self.location.key("snippet_results"))
        except self.server.errors as err:
            raise self.server.fail("reading snippet results", err) from err
        if raw is None:
            return {}
        try:
            data = json.loads(raw)
        except ValueError as err:
            key = self.location.key("snippet_results")
            raise StoreError(f"{key} is unreadable ({err}): delete it to re-validate") from err
        return data if isinstance(data, dict) else {}

    def write_snippet_results(self, results: dict[str, Any]) -> None:
        """Replace the cached snippet validation results (one SET: atomic)."""
        text = json.dumps(results, ensure_ascii=False, indent=1)
        try:
            self.server.blobs.set(self.location.key("snippet_results"), text.encode("utf-8"))
        except self.server.errors as err:
            raise self.server.fail("writing snippet results", err) from err
