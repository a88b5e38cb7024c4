"""What a document belongs to: the project whose docs a folder holds.

A folder of pages is often one project's documentation (the `docs/` of a repository, a site
export): its pages share the project as subject unless a page says otherwise, and a page's
title is its topic, not a product. The project of a document is found, nearest first:

1. `--project NAME` (`kgqa ingest`): every document of the corpus;
2. a manifest in the document's folder or a folder above it, up to the corpus root:
   `kgqa-corpus.toml` (or `kgqa-corpus.json`) with `project = "vLLM"` and optionally
   `type = "InferenceEngine"` and `aliases = [...]`; `project = ""` says the folder is no one
   project's (a folder of articles on many things);
3. the docs tool's own configuration in such a folder: Sphinx's `conf.py` (`project = "…"`),
   MkDocs' `mkdocs.yml` (`site_name:`), Docusaurus' `docusaurus.config.js|ts` (`title:`),
   Jupyter Book's `_config.yml` (`title:`);
4. a folder named `docs`, `doc` or `documentation` (in the document's path, or the corpus root
   itself): the project is the folder above it (`vllm/docs/serving.md` -> `vllm`).

A folder of files from many projects (a flat corpus of READMEs or articles) has none. The
manifest and the tool configurations are read here; they are not documents (`MANIFEST_NAMES`).
"""

from __future__ import annotations

import json
import re
import tomllib
from pathlib import Path

from pydantic import BaseModel, ConfigDict, ValidationError

from kg.errors import IngestError
from kg.schema import NodeType

__all__ = ["MANIFEST_NAMES", "Project", "Projects", "read_manifest"]

MANIFEST_NAMES = ("kgqa-corpus.toml", "kgqa-corpus.json")
_DOCS_FOLDERS = frozenset({"docs", "doc", "documentation"})
_CONFIGS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("conf.py", re.compile(r"(?m)^project\s*=\s*(['\"])(?P<name>[^'\"\n]{1,60})\1")),
    ("source/conf.py", re.compile(r"(?m)^project\s*=\s*(['\"])(?P<name>[^'\"\n]{1,60})\1")),
    ("mkdocs.yml", re.compile(r"(?m)^site_name\s*:\s*(['\"]?)(?P<name>[^'\"\n#]{1,60})\1\s*$")),
    ("docusaurus.config.js", re.compile(r"(?m)^\s*title\s*:\s*(['\"])(?P<name>[^'\"\n]{1,60})\1")),
    ("docusaurus.config.ts", re.compile(r"(?m)^\s*title\s*:\s*(['\"])(?P<name>[^'\"\n]{1,60})\1")),
    ("_config.yml", re.compile(r"(?m)^title\s*:\s*(['\"]?)(?P<name>[^'\"\n#]{1,60})\1\s*$")),
)


class Project(BaseModel):
    """The project a document's folder documents: its name, and what the manifest says of it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    project: str
    type: NodeType | None = None
    aliases: tuple[str, ...] = ()
    source: str = ""  # where it was found: "--project", a manifest's path, "conf.py", ...


def read_manifest(path: Path) -> Project:
    """A `kgqa-corpus.toml` / `.json` manifest. Raises `IngestError` saying what is wrong.

    >>> import tempfile
    >>> d = Path(tempfile.mkdtemp())
    >>> _ = (d / "kgqa-corpus.toml").write_text('project = "vLLM"\\ntype = "InferenceEngine"\\n')
    >>> read_manifest(d / "kgqa-corpus.toml").type
    <NodeType.INFERENCE_ENGINE: 'InferenceEngine'>
    """
    try:
        raw = path.read_bytes()
        data = tomllib.loads(raw.decode("utf-8")) if path.suffix == ".toml" else json.loads(raw)
        return Project.model_validate({**data, "source": str(path)})
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError, ValueError) as err:
        detail = str(err).splitlines()[0] if not isinstance(err, ValidationError) else _why(err)
        raise IngestError(
            f'corpus manifest {path} is unusable ({detail}): write `project = "NAME"`, '
            'optionally `type = "Library"` and `aliases = ["…"]`'
        ) from None


def _why(err: ValidationError) -> str:
    first = err.errors()[0]
    return f"{'.'.join(str(p) for p in first['loc'])}: {first['msg']}"


class Projects:
    """Finds the project of each document of an ingest (module docstring), reading each
    folder's manifest and configuration once; an unusable manifest is kept in `problems` (its
    folder then has no project) and reported by the ingest."""

    def __init__(self, project: str | None = None) -> None:
        self.project = project
        self.problems: dict[str, str] = {}
        self._folders: dict[Path, Project | None] = {}

    def of(self, path: Path, root: Path) -> Project | None:
        """The project whose docs hold the file `path` of the corpus `root`; None: the
        document speaks for itself. A manifest saying `project = ""` stops the search.

        >>> import tempfile
        >>> d = Path(tempfile.mkdtemp())
        >>> (d / "vllm" / "docs").mkdir(parents=True)
        >>> Projects().of(d / "vllm" / "docs" / "serving.md", d).project
        'vllm'
        >>> Projects().of(d / "README.md", d) is None
        True
        """
        if self.project:
            return Project(project=self.project, source="--project")
        root = root.resolve()
        folder = path.resolve().parent
        chain = [folder, *folder.parents]
        inside = chain[: chain.index(root) + 1] if root in chain else [folder]
        for here in inside:
            found = self._folder(here)
            if found is not None:
                return found if found.project else None
        for here in inside:
            if here.name.lower() in _DOCS_FOLDERS and here.parent.name:
                return Project(project=here.parent.name, source=str(here))
        return None

    def _folder(self, folder: Path) -> Project | None:
        if folder not in self._folders:
            try:
                self._folders[folder] = _folder_project(folder)
            except IngestError as err:
                self.problems[str(folder)] = str(err)
                self._folders[folder] = None
        return self._folders[folder]


def _folder_project(folder: Path) -> Project | None:
    """The manifest's project, or the docs tool configuration's, of one folder."""
    for name in MANIFEST_NAMES:
        if (folder / name).is_file():
            return read_manifest(folder / name)
    for name, pattern in _CONFIGS:
        try:
            text = (folder / name).read_text("utf-8", errors="replace")[:200_000]
        except OSError:
            continue
        m = pattern.search(text)
        if m is not None and m.group("name").strip():
            return Project(project=m.group("name").strip(), source=str(folder / name))
    return None
