"""Document context: the project whose docs a folder holds (manifest, docs tool configuration,
`docs/` folder, `--project`), and what linking makes of it: pages share the project as subject
unless a page says otherwise, and a page's title is its topic, not a product."""

from __future__ import annotations

from pathlib import Path

import pytest

from ingest.context import Projects, read_manifest
from ingest.discover import document_subject
from ingest.formats import document_blocks
from ingest.link import CorpusLinks, link_corpus
from ingest.load import iter_corpus
from ingest.units import document_units
from kg.documents import Document, EvidenceUnit
from kg.errors import IngestError
from kg.lexicon import Lexicon
from kg.schema import NodeType


@pytest.fixture(scope="module")
def lexicon() -> Lexicon:
    return Lexicon.default()


def _touch(path: Path, text: str = "x") -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, "utf-8")
    return path


def test_the_nearest_manifest_or_configuration_names_the_project(tmp_path: Path) -> None:
    _touch(tmp_path / "kgqa-corpus.toml", 'project = "Brindle"\ntype = "InferenceEngine"\n')
    _touch(tmp_path / "mix" / "kgqa-corpus.json", '{"project": ""}')
    _touch(tmp_path / "sphinx" / "conf.py", "import os\nproject = 'Quillon'\n")
    _touch(tmp_path / "site" / "mkdocs.yml", "site_name: Zephyrix Docs\nnav: []\n")
    finder = Projects()
    top = finder.of(tmp_path / "guide" / "deploy.md", tmp_path)
    assert top is not None and (top.project, top.type) == ("Brindle", NodeType.INFERENCE_ENGINE)
    assert finder.of(tmp_path / "mix" / "a.md", tmp_path) is None  # "": no one project's
    sphinx = finder.of(tmp_path / "sphinx" / "usage.rst", tmp_path)
    assert sphinx is not None and sphinx.project == "Quillon"
    site = finder.of(tmp_path / "site" / "index.md", tmp_path)
    assert site is not None and site.project == "Zephyrix Docs"
    forced = Projects("Other").of(tmp_path / "sphinx" / "usage.rst", tmp_path)
    assert forced is not None and forced.project == "Other"


def test_a_docs_folder_belongs_to_the_folder_above(tmp_path: Path) -> None:
    finder = Projects()
    found = finder.of(tmp_path / "brindle" / "docs" / "guide" / "x.md", tmp_path)
    assert found is not None and found.project == "brindle"
    root = tmp_path / "quillon" / "docs"
    found = finder.of(root / "x.md", root)
    assert found is not None and found.project == "quillon"  # the corpus root is the docs
    assert finder.of(tmp_path / "flat" / "x.md", tmp_path) is None


def test_an_unusable_manifest_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    bad = _touch(tmp_path / "kgqa-corpus.toml", 'project = "A"\ntype = "Gadget"\n')
    with pytest.raises(IngestError, match="type"):
        read_manifest(bad)
    finder = Projects()
    assert finder.of(tmp_path / "a.md", tmp_path) is None
    assert list(finder.problems) == [str(tmp_path.resolve())]


def test_the_manifest_is_no_document(tmp_path: Path) -> None:
    _touch(tmp_path / "kgqa-corpus.toml", 'project = "Brindle"\n')
    _touch(tmp_path / "a.md", "# A\n\ntext\n")
    assert [r.path.name for r in iter_corpus([tmp_path])] == ["a.md"]


DEPLOY = """\
# 01-Deploy

Deploy the server with one command on NVIDIA GPUs.

```bash
brindle serve --port 8000
```

The server runs on Linux and needs CUDA. 01-Deploy covers the basics; see 01-Deploy again.
"""
QUANT = """\
# Quantization

Brindle reads int4 weights. Quantization lowers memory on NVIDIA GPUs.
"""
SERVE = """\
# Brindle Serve

Brindle Serve is a model server for Brindle checkpoints.
Brindle Serve runs on NVIDIA GPUs.
"""


def _read(corpus: dict[str, str]) -> list[tuple[Document, list[EvidenceUnit]]]:
    out = []
    for doc_id, text in corpus.items():
        doc = Document.from_text(doc_id, text, media_type="text/markdown")
        out.append((doc, document_units(doc, document_blocks(doc))))
    return out


def test_a_page_title_is_no_product(lexicon: Lexicon) -> None:
    ((doc, units),) = _read({"01-Deploy.md": DEPLOY})
    assert document_subject(doc, units, lexicon) is None  # today's "01-Deploy" Tool
    ((readme, readme_units),) = _read({"01-Deploy-README.md": DEPLOY})
    subject = document_subject(readme, readme_units, lexicon)
    assert subject is not None and subject.name == "01-Deploy"  # a README names its project


def _links(lexicon: Lexicon, projects: dict[str, str | None]) -> CorpusLinks:
    from ingest.context import Project

    corpus = {"guide/01-Deploy.md": DEPLOY, "guide/quantization.md": QUANT, "serve.md": SERVE}
    known = {d: Project(project=p) if p else None for d, p in projects.items()}
    return link_corpus(_read(corpus), lexicon, projects=known)


def test_pages_of_a_project_share_it_as_subject(lexicon: Lexicon) -> None:
    docs = ["guide/01-Deploy.md", "guide/quantization.md", "serve.md"]
    links = _links(lexicon, dict.fromkeys(docs, "Brindle"))
    assert links.subjects["guide/01-Deploy.md"] == links.subjects["guide/quantization.md"]
    brindle = links.subjects["guide/01-Deploy.md"]
    entity = next(e for e in links.extraction.entities if e.id == brindle)
    assert (entity.name, entity.type) == ("Brindle", NodeType.TOOL)
    assert links.subjects["serve.md"] != brindle  # the page says it is about Brindle Serve
    names = {e.name for e in links.extraction.entities}
    assert "01-Deploy" not in names
    deploy = [u for u in links.units if u.doc == "guide/01-Deploy.md" and "Linux" in u.text]
    assert deploy and deploy[0].subject == brindle
    for entity in links.extraction.entities:
        for ev in entity.evidence:
            text = {"guide/01-Deploy.md": DEPLOY, "guide/quantization.md": QUANT, "serve.md": SERVE}
            assert text[ev.doc][ev.start : ev.end] == ev.quote


def test_without_a_project_pages_speak_for_themselves(lexicon: Lexicon) -> None:
    links = _links(lexicon, {})
    assert "guide/01-Deploy.md" not in links.subjects
    assert all(e.name != "01-Deploy" for e in links.extraction.entities)


def test_kgqa_ingest_project_names_the_subject_of_every_page(tmp_path: Path) -> None:
    """`kgqa ingest --project NAME` as a real subprocess: a flat folder of pages, no manifest."""
    import json
    import subprocess
    import sys

    corpus = tmp_path / "pages"
    _touch(corpus / "01-Deploy.md", DEPLOY)
    _touch(corpus / "quantization.md", QUANT)
    store = tmp_path / "store"
    args = ["ingest", "--corpus", str(corpus), "--store", str(store), "--project", "Brindle"]
    run = subprocess.run(
        [sys.executable, "-m", "qa.cli", *args, "--json"],
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert run.returncode == 0, run.stderr
    from kg.store import Store

    raw = Store.open(store).optional_bytes("links.json")
    assert raw is not None
    subjects = {d: r["subject_id"] for d, r in json.loads(raw)["documents"].items()}
    assert subjects == {"01-Deploy.md": "tool:brindle", "quantization.md": "tool:brindle"}
