"""The on-disk store: one directory, versioned, written atomically by generations.

Layout::

    STORE/
      CURRENT                 name of the live generation (replaced atomically, last)
      snippet_results.json    cached snippet validation results (outlive generations)
      gen-000007/
        manifest.json         schema version, embedder id, lexicon hash, per-document hashes
        graph.json            every entity and relation, with their evidence
        lexical.npz           the lexical index over the chunks (numpy arrays)
        docs/<key>.json       per document: text, extraction, chunks, snippets
        docs/<key>.npy        per document: chunk embeddings (rows follow the chunks)
        units.json            every evidence unit (sentence, item, row, ...) with its subject
        units_lexical.npz     the lexical index over the units
        unit_docs.npz         ... grouped by document; unit_profiles.npz: by the entity they
                              are about (made from it: the reader makes them if missing)
        unit_norms.json       each document's unit texts normalised (the reader makes it if
                              missing)
        links.json            what linking made of each document (`ingest.link_cache`): lets
                              the next ingest link again only what changed; optional

A writer builds a complete new generation (hard-linking unchanged per-document files from the
live one), then switches CURRENT with an atomic rename. Killing it at any moment leaves the previous
generation live and loadable. Only this module opens store files.

A store can also live on a FalkorDB server (a graph database served by `redis-server` with its
module): a location `falkordb://HOST:PORT/NAME` (`is_server_store`) opens `kg.falkor`'s
`FalkorStore` and `kg.falkor_write`'s `FalkorWriter`, which keep the same generations, files and
reading methods there (entities, relations with their evidence, units and chunk vectors as a graph
with a vector index). `Store.open`, `Store.exists` and `StoreWriter.open` choose; every reader and
writer goes through them, so `kgqa ingest`, `ask`, `ui`, `eval` and `Assistant` take either
location. The FalkorDB client is imported only for such a location.
"""

from __future__ import annotations

import contextlib
import hashlib
import io
import json
import os
import shutil
import tempfile
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import BaseModel, Field, TypeAdapter, ValidationError

from kg.documents import Chunk, Document, EvidenceUnit, Snippet
from kg.errors import StoreError
from kg.graph import KnowledgeGraph
from kg.schema import SCHEMA_VERSION, Entity, Extraction, Relation

__all__ = [
    "LEXICAL_FILE",
    "UNITS_LEXICAL_FILE",
    "UNIT_DOCS_FILE",
    "UNIT_NORMS_FILE",
    "UNIT_PROFILES_FILE",
    "DocRecord",
    "DocumentEntry",
    "Manifest",
    "Store",
    "StoreWriter",
    "atomic_write_bytes",
    "atomic_write_text",
    "checked_manifest",
    "is_server_store",
    "npy_bytes",
]


_UNITS = TypeAdapter(list[EvidenceUnit])
#: The lexical indexes' arrays (`ingest.lexical.LexicalIndex.to_arrays`): chunks, units, and
#: the units grouped by document and by the entity they are about (`ingest.units.unit_groups`).
LEXICAL_FILE = "lexical.npz"
UNITS_LEXICAL_FILE = "units_lexical.npz"
UNIT_DOCS_FILE = "unit_docs.npz"
UNIT_PROFILES_FILE = "unit_profiles.npz"
#: Each document's units' texts normalised (`ingest.units.units_text_norm`), by document id.
UNIT_NORMS_FILE = "unit_norms.json"


def is_server_store(location: str | Path) -> bool:
    """Whether a store location names a FalkorDB server rather than a directory. A location
    that went through `pathlib.Path` (the settings keep `store` as one) has lost one slash of
    `falkordb://`: both forms name the server.

    >>> is_server_store("falkordb://127.0.0.1:6379/docs"), is_server_store(Path("falkordb://h/d"))
    (True, True)
    >>> is_server_store(".store"), is_server_store("stores/falkordb")
    (False, False)
    """
    return str(location).startswith("falkordb:/")


def _why(err: Exception) -> str:
    """An error in one line: a broken JSON file's first problem, where it is."""
    if isinstance(err, ValidationError) and err.errors():
        first = err.errors()[0]
        where = ".".join(str(part) for part in first["loc"])
        return f"{first['msg']}{' at ' + where if where else ''}"
    return str(err)


class _GraphFile(BaseModel):
    """graph.json: the graph's entities and relations (ids order), read by pydantic's JSON core
    (3x faster than the node-link form `kgqa graph export` writes)."""

    entities: list[Entity]
    relations: list[Relation]


class DocumentEntry(BaseModel):
    """What the manifest records of one document."""

    id: str
    hash: str
    key: str = Field(description="file stem under docs/")
    source: str = Field(description="path the document was read from")
    chunks: int = 0
    entities: int = 0
    relations: int = 0
    lexicon_hash: str = ""


class Manifest(BaseModel):
    """The store's table of contents; load refuses other schema versions."""

    schema_version: int = SCHEMA_VERSION
    generation: int = 0
    embedder: str = Field(description="id of the embedder that made the vectors")
    embedder_spec: str = Field(
        default="e5", description="how to rebuild it: e5-int8 | e5 | st:<dir>"
    )
    lexicon_hash: str
    documents: dict[str, DocumentEntry] = Field(default_factory=dict)


class DocRecord(BaseModel):
    """Everything derived from one document, except its embeddings."""

    document: Document
    extraction: Extraction
    chunks: list[Chunk] = Field(default_factory=list)
    snippets: list[Snippet] = Field(default_factory=list)


def _fsync_dir(path: Path) -> None:
    with contextlib.suppress(OSError):
        fd = os.open(path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write a file so that readers see the old or the new content, never a torn one."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(data)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise
    _fsync_dir(path.parent)


def atomic_write_text(path: Path, text: str) -> None:
    """`atomic_write_bytes` for UTF-8 text."""
    atomic_write_bytes(path, text.encode("utf-8"))


def npy_bytes(array: np.ndarray) -> bytes:
    """An array in `.npy` format (no pickles), for `atomic_write_bytes`.

    >>> np.load(io.BytesIO(npy_bytes(np.arange(3)))).tolist()
    [0, 1, 2]
    """
    buffer = io.BytesIO()
    np.save(buffer, array, allow_pickle=False)
    return buffer.getvalue()


def doc_key(doc_id: str) -> str:
    """A file-system-safe, stable file stem for a document id.

    >>> doc_key("sub/dir/文章.md").startswith("sub_dir_文章.md-")
    True
    """
    digest = hashlib.sha256(doc_id.encode("utf-8")).hexdigest()[:6]
    safe = "".join(c if c.isalnum() or c in "._-" else "_" for c in doc_id)[-80:]
    return f"{safe}-{digest}"


def checked_manifest(raw: Any, where: str, embedder: str | None) -> Manifest:
    """A generation's manifest as read (JSON data), refused when it is of another schema
    version, broken, or (given `embedder`) made by another embedder; `where` names the store."""
    version = raw.get("schema_version") if isinstance(raw, dict) else None
    if version != SCHEMA_VERSION:
        raise StoreError(
            f"store {where} has schema version {version}, this kgqa reads "
            f"{SCHEMA_VERSION}: run `kgqa ingest --store {where}` to rebuild it"
        )
    try:
        manifest = Manifest.model_validate(raw)
    except ValidationError as err:
        raise StoreError(f"store {where} has a broken manifest: rebuild with kgqa ingest") from err
    if embedder is not None and manifest.embedder != embedder:
        raise StoreError(
            f"store {where} was embedded with {manifest.embedder}, not {embedder}: run "
            f"`kgqa ingest --store {where} --embedder {embedder}` to rebuild, "
            "or use its embedder"
        )
    return manifest


class Store:
    """Read access to the live generation of a store directory (`open` gives a `FalkorStore`,
    a subclass reading the same things from a FalkorDB server, for a server location)."""

    def __init__(self, root: Path, generation_dir: Path, manifest: Manifest) -> None:
        self.root = root
        self.dir = generation_dir
        self.manifest = manifest
        self._graph: KnowledgeGraph | None = None

    @staticmethod
    def exists(root: Path) -> bool:
        """Whether `root` holds a live generation."""
        if is_server_store(root):
            from kg.falkor import FalkorStore

            return FalkorStore.exists(root)
        return (root / "CURRENT").is_file()

    @classmethod
    def open(cls, root: Path, *, embedder: str | None = None) -> Store:
        """Open the live generation; refuse other schema versions (or another embedder)."""
        if is_server_store(root):
            from kg.falkor import FalkorStore

            return FalkorStore.open(root, embedder=embedder)
        current = root / "CURRENT"
        if not current.is_file():
            raise StoreError(f"no store at {root}: run `kgqa ingest --store {root}` first")
        gen_dir = root / current.read_text("utf-8").strip()
        try:
            raw = json.loads((gen_dir / "manifest.json").read_text("utf-8"))
        except (OSError, ValueError) as err:
            raise StoreError(
                f"store {root} is unreadable ({err}): run `kgqa ingest --store {root}` to rebuild"
            ) from err
        return cls(root, gen_dir, checked_manifest(raw, str(root), embedder))

    def graph(self) -> KnowledgeGraph:
        """The merged graph of every document."""
        if self._graph is None:
            path = self.dir / "graph.json"
            try:
                parts = _GraphFile.model_validate_json(path.read_bytes())
            except (OSError, ValidationError) as err:
                raise StoreError(f"{path} is unreadable ({_why(err)}): rerun kgqa ingest") from err
            self._graph = KnowledgeGraph.from_parts(parts.entities, parts.relations)
        return self._graph

    def optional_arrays(self, name: str) -> dict[str, np.ndarray] | None:
        """`arrays`, or None where the generation has no such file (one a reader can make)."""
        return self.arrays(name) if (self.dir / name).is_file() else None

    def arrays(self, name: str) -> dict[str, np.ndarray]:
        """Named arrays as `StoreWriter.put_arrays` wrote them (`lexical.npz`, the index over
        the chunks; `units_lexical.npz`, over the units)."""
        path = self.dir / name
        try:
            with np.load(path, allow_pickle=False) as data:
                return {key: data[key] for key in data.files}
        except (OSError, ValueError, zipfile.BadZipFile) as err:
            raise StoreError(f"{path} is unreadable ({err}): rerun kgqa ingest") from err

    def optional_bytes(self, name: str) -> bytes | None:
        """A file of the generation that a rebuild can do without (a cache), or None if it is
        missing or unreadable."""
        try:
            return (self.dir / name).read_bytes()
        except OSError:
            return None

    def units(self) -> list[EvidenceUnit]:
        """Every evidence unit of the corpus, linked (subject and mentions), in document order."""
        path = self.dir / "units.json"
        try:
            return _UNITS.validate_json(path.read_bytes())
        except OSError as err:
            raise StoreError(f"{path} is unreadable ({err}): rerun kgqa ingest") from err
        except ValidationError as err:
            raise StoreError(f"{path} is broken ({_why(err)}): rerun kgqa ingest") from err

    def doc_record(self, doc_id: str) -> DocRecord:
        """Everything stored for one document."""
        entry = self.manifest.documents[doc_id]
        path = self.dir / "docs" / f"{entry.key}.json"
        try:
            return DocRecord.model_validate_json(path.read_bytes())
        except (OSError, ValidationError) as err:
            raise StoreError(f"{path} is unreadable ({err}): rerun kgqa ingest") from err

    def records(self) -> Iterator[DocRecord]:
        """Every document's record, in id order."""
        for doc_id in sorted(self.manifest.documents):
            yield self.doc_record(doc_id)

    def snippet_results(self) -> dict[str, Any]:
        """Cached snippet validation results, {} if none (`qa.snippets.store_check` owns them)."""
        path = self.root / "snippet_results.json"
        if not path.is_file():
            return {}
        try:
            data = json.loads(path.read_text("utf-8"))
        except (OSError, ValueError) as err:
            raise StoreError(f"{path} is unreadable ({err}): delete it to re-validate") from err
        return data if isinstance(data, dict) else {}

    def write_snippet_results(self, results: dict[str, Any]) -> None:
        """Replace the cached snippet validation results atomically."""
        text = json.dumps(results, ensure_ascii=False, indent=1)
        atomic_write_text(self.root / "snippet_results.json", text)

    def doc_vectors(self, doc_id: str) -> np.ndarray:
        """The chunk embeddings of one document (rows follow its chunks)."""
        entry = self.manifest.documents[doc_id]
        path = self.dir / "docs" / f"{entry.key}.npy"
        try:
            vectors: np.ndarray = np.load(path, allow_pickle=False)
        except (OSError, ValueError) as err:
            raise StoreError(f"{path} is unreadable ({err}): rerun kgqa ingest") from err
        return vectors


class StoreWriter:
    """Builds the next generation; `commit()` makes it live, anything else leaves it unseen."""

    @classmethod
    def open(cls, root: Path, manifest: Manifest, previous: Store | None) -> StoreWriter:
        """The writer of the next generation at `root`: a directory's, or a FalkorDB server's
        (`kg.falkor_write.FalkorWriter`) for a server location."""
        if is_server_store(root):
            from kg.falkor_write import FalkorWriter

            return FalkorWriter(root, manifest, previous)
        return cls(root, manifest, previous)

    def __init__(self, root: Path, manifest: Manifest, previous: Store | None) -> None:
        self.root = root
        self.previous = previous
        self.manifest = manifest
        # Never reuse the name of a directory on disk: after a refused (other schema) or
        # unreadable store, `previous` is None while its generation may still be the live one.
        on_disk = [int(p.name[4:]) for p in root.glob("gen-*") if p.name[4:].isdigit()]
        last = max([previous.manifest.generation if previous else 0, *on_disk])
        self.manifest.generation = last + 1
        self.manifest.documents = {}
        root.mkdir(parents=True, exist_ok=True)
        self.dir = root / f"gen-{self.manifest.generation:06d}"
        (self.dir / "docs").mkdir(parents=True)

    def put_document(self, entry: DocumentEntry, record: DocRecord, vectors: np.ndarray) -> None:
        """Write a new or changed document's files."""
        docs = self.dir / "docs"
        atomic_write_text(docs / f"{entry.key}.json", record.model_dump_json())
        atomic_write_bytes(docs / f"{entry.key}.npy", npy_bytes(vectors.astype(np.float32)))
        self.manifest.documents[entry.id] = entry

    def keep_document(self, entry: DocumentEntry) -> None:
        """Carry an unchanged document over from the live generation (hard link, no copy)."""
        if self.previous is None:
            raise StoreError("keep_document needs a previous generation")
        for suffix in (".json", ".npy"):
            src = self.previous.dir / "docs" / f"{entry.key}{suffix}"
            dst = self.dir / "docs" / f"{entry.key}{suffix}"
            try:
                os.link(src, dst)
            except OSError:
                shutil.copy2(src, dst)
        self.manifest.documents[entry.id] = entry

    def put_graph(self, graph: KnowledgeGraph) -> None:
        """Write graph.json: every entity and relation, evidence included (`Store.graph`)."""
        parts = _GraphFile(entities=list(graph.entities()), relations=list(graph.relations()))
        atomic_write_bytes(self.dir / "graph.json", parts.model_dump_json().encode("utf-8"))

    def put_arrays(self, name: str, arrays: dict[str, np.ndarray]) -> None:
        """Write named arrays as one `.npz` (no pickles); `Store.arrays` reads them."""
        buffer = io.BytesIO()
        np.savez(buffer, allow_pickle=False, **arrays)
        atomic_write_bytes(self.dir / name, buffer.getvalue())

    def put_bytes(self, name: str, data: bytes) -> None:
        """Write a file already serialised (links.json)."""
        atomic_write_bytes(self.dir / name, data)

    def put_units(self, units: list[EvidenceUnit]) -> None:
        """Write units.json (`Store.units` reads it)."""
        atomic_write_bytes(self.dir / "units.json", _UNITS.dump_json(units))

    def commit(self) -> Store:
        """Write the manifest, switch CURRENT, and remove generations older than the previous one.

        The generation that was live until now stays on disk, so a reader that opened it (a
        running UI or API) keeps reading a complete store; the next commit removes it."""
        atomic_write_text(self.dir / "manifest.json", self.manifest.model_dump_json(indent=1))
        _fsync_dir(self.dir / "docs")
        atomic_write_text(self.root / "CURRENT", self.dir.name + "\n")
        keep = {self.dir.name} | ({self.previous.dir.name} if self.previous else set())
        for old in self.root.glob("gen-*"):
            if old.name not in keep and old.is_dir():
                shutil.rmtree(old, ignore_errors=True)
        return Store(self.root, self.dir, self.manifest)
