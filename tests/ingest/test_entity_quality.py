"""Entity quality of linking and merging (issue 22): a channel is no entity, instruction sets
and GPU architectures are found in running text, a thing only its own units are about is
claimed by its document's subject, and a node nothing claims and no unit is about is left out."""

from __future__ import annotations

import pytest

from ingest.link import CorpusLinks, link_corpus
from ingest.markdown import parse_markdown
from ingest.merge import merge_extractions
from ingest.units import document_units
from kg.documents import Document, EvidenceUnit
from kg.lexicon import Lexicon
from kg.schema import Entity, Evidence, Extraction, NodeType, Relation, RelationType

BRINDLE = """# Brindle

Brindle is an inference engine for local LLMs.

Brindle runs fast on AVX2 CPUs and on Blackwell GPUs.

## Models

| Model | Size |
|---|---|
| Corvex-7B | 7B |
| Tarnwell-3B | 3B |

## Community

Join us on YouTube, the Forums and GitHub Issues.
"""


@pytest.fixture(scope="module")
def lexicon() -> Lexicon:
    return Lexicon.default()


def read(corpus: dict[str, str]) -> list[tuple[Document, list[EvidenceUnit]]]:
    out = []
    for doc_id, text in corpus.items():
        doc = Document.from_text(doc_id, text, media_type="text/markdown")
        out.append((doc, document_units(doc, parse_markdown(doc))))
    return out


@pytest.fixture(scope="module")
def links(lexicon: Lexicon) -> CorpusLinks:
    return link_corpus(read({"brindle-README.md": BRINDLE}), lexicon)


def names(links: CorpusLinks) -> dict[str, NodeType]:
    return {e.name: e.type for e in links.extraction.entities}


def test_a_channel_is_no_entity(links: CorpusLinks) -> None:
    found = {n.lower() for n in names(links)}
    assert not found & {"youtube", "forums", "github issues"}


def test_instruction_sets_and_gpu_architectures_are_found_in_text(links: CorpusLinks) -> None:
    found = names(links)
    assert found.get("AVX2") == NodeType.PLATFORM
    assert found.get("Blackwell") == NodeType.HARDWARE


def test_lexicon_families_in_text(lexicon: Lexicon) -> None:
    assert lexicon.family_names("built for aarch64 and x86_64 with NEON") == [
        ("aarch64", NodeType.PLATFORM),
        ("x86_64", NodeType.PLATFORM),
        ("NEON", NodeType.PLATFORM),
    ]
    assert lexicon.family_names("an RTX 4090 and a Xeon") == []  # found only once discovered


def test_a_thing_only_its_own_units_are_about_has_a_claim(links: CorpusLinks) -> None:
    by_name = {e.name: e.id for e in links.extraction.entities}
    brindle = links.subjects["brindle-README.md"]
    for model in ("Corvex-7B", "Tarnwell-3B"):
        assert model in by_name, sorted(by_name)
        claims = [r for r in links.extraction.relations if r.target == by_name[model]]
        assert [r.source for r in claims] == [brindle]
        assert claims[0].evidence[0].quote.startswith(f"| {model}")


def _ev(doc: str = "a.md") -> Evidence:
    return Evidence(doc=doc, quote="x", start=0, end=1)


def test_merge_leaves_out_a_node_no_claim_touches_and_no_unit_is_about() -> None:
    entities = [
        Entity(id=f"tool:{n}", type=NodeType.TOOL, name=n, evidence=[_ev()])
        for n in ("a", "b", "passing", "section")
    ]
    claim = Relation(source="tool:a", relation=RelationType.USED_WITH, target="tool:b")
    extraction = Extraction(doc="a.md", doc_hash="", entities=entities, relations=[claim])
    lexicon = Lexicon([])
    everything, _ = merge_extractions([extraction], lexicon)
    assert {e.name for e in everything.entities()} == {"a", "b", "passing", "section"}
    kept, _ = merge_extractions([extraction], lexicon, about={"tool:section"})
    assert {e.name for e in kept.entities()} == {"a", "b", "section"}


def test_names_of_one_model_written_two_ways_are_one_node(lexicon: Lexicon) -> None:
    """A `v` before the version, an organisation in front, the one parameter count written:
    each joins the plainer name the corpus also writes, as an alias, with its relations.
    Two sizes of one name are two models; a name without a digit after an organisation is no
    version of anything."""
    written = {  # the second name of each document is the one its claim is about
        "a.md": ["Corvex2", "Tarnwell", "Pellam3", "Pellam3-8B", "Pellam3-70B", "Brindle"],
        "b.md": ["Corvex-v2", "Tarnwell-7B", "Microsoft Corvex2", "Google Brindle", "Brindle"],
    }
    extractions = []
    for doc, surfaces in written.items():
        entities = [
            Entity(id=f"model:{doc}:{n}", type=NodeType.MODEL, name=n, evidence=[_ev(doc)])
            for n in surfaces
        ]
        runs = Relation(
            source=f"model:{doc}:{surfaces[1]}",
            relation=RelationType.USED_WITH,
            target=f"model:{doc}:Brindle",
            evidence=[_ev(doc)],
        )
        extractions.append(Extraction(doc=doc, doc_hash="", entities=entities, relations=[runs]))
    graph, _ = merge_extractions(extractions, lexicon)
    nodes = {e.name: sorted(e.aliases) for e in graph.entities()}
    assert nodes["Corvex2"] == ["Corvex-v2", "Microsoft Corvex2"]
    assert nodes["Tarnwell"] == ["Tarnwell-7B"]
    assert {"Pellam3", "Pellam3-8B", "Pellam3-70B", "Brindle", "Google Brindle"} <= set(nodes)
    tarnwell = next(e.id for e in graph.entities() if e.name == "Tarnwell")
    assert {r.source for r in graph.relations()} == {tarnwell}  # both documents' claims


GALLERY = """# Brindle

Brindle is an inference engine for local LLMs.

## Examples

- [CorvexNet](./examples/corvex/): tiny image captioning model trained on web pictures.
- [Pellam2](./examples/pellam/): speech synthesis model that speaks three languages.
- [TarnWell](./examples/tarnwell/): grab and use models leveraging Brindle in a browser.
"""


def test_a_list_lead_is_typed_by_the_noun_phrase_that_describes_it(lexicon: Lexicon) -> None:
    found = names(link_corpus(read({"brindle-README.md": GALLERY}), lexicon))
    assert found["CorvexNet"] is NodeType.MODEL and found["Pellam2"] is NodeType.MODEL
    assert found["TarnWell"] is not NodeType.MODEL  # a verb phrase: "models" heads nothing


CATALOGUE = """# Brindle

Brindle is an inference engine for local LLMs.

## Examples

These demos run entirely in your browser:

- [Quillon](https://example.org/quillon): pose estimation.

We also ship command line examples for these state of the art models:

- [Marrow4](./examples/marrow4/): code completion, function calling.
- [Sablefox](./examples/sablefox/): 2b and 7b, attention with a recurrent state.
"""


def test_a_list_takes_the_kind_its_introducing_sentence_names(lexicon: Lexicon) -> None:
    """A list introduced by "… these state of the art models:" lists models; one introduced by a
    place ("… in your browser:") says no kind."""
    found = names(link_corpus(read({"brindle-README.md": CATALOGUE}), lexicon))
    assert found["Marrow4"] is NodeType.MODEL and found["Sablefox"] is NodeType.MODEL
    assert found.get("Quillon") is not NodeType.MODEL


def test_a_name_linked_to_a_code_repository_is_a_project(lexicon: Lexicon) -> None:
    # the text of a link to a repository's home is a software project whatever its name says;
    # a link to a person's page is none, nor is a link into a repository's folders
    corpus = {
        "brindle-README.md": "# Brindle\n\nBrindle is an inference engine for local LLMs.\n\n"
        "## Built with Brindle\n\n"
        "- [Quorrel](https://github.com/acme/quorrel): answers from your own notes, offline.\n"
        "- [Tessary](https://github.com/acme/brindle/tree/main/tessary): an example.\n\n"
        "## Team\n\n"
        "- **[Ada Byron](https://github.com/adab)**: maintainer of Brindle.\n"
    }
    found = names(link_corpus(read(corpus), lexicon))
    assert found.get("Quorrel") == NodeType.TOOL, found
    assert found.get("Tessary") != NodeType.TOOL, found
    assert found.get("Ada Byron") != NodeType.TOOL, found


def named_claims(links: CorpusLinks) -> set[tuple[str | None, RelationType, str | None]]:
    """The linked corpus's claims as (source name, relation, target name)."""
    name = {e.id: e.name for e in links.extraction.entities}
    return {
        (name.get(r.source), r.relation, name.get(r.target)) for r in links.extraction.relations
    }


def test_a_clause_that_opens_with_a_thing_and_a_verb_claims_inside_it(lexicon: Lexicon) -> None:
    # the list item is about nothing as a whole (its lead is a topic, its first clause names
    # nothing), but two of its clauses each open with an engine and a verb: each claims what
    # its own clause names, and nothing of the other's
    corpus = {
        "deploy-notes.md": "# 部署笔记\n\n各家引擎的取舍如下。\n\n"
        "- 端侧部署：各有所长，OpenVINO 在 NPU 上跑得最快，llama.cpp 支持 GGUF 格式，"
        "但都要先转换模型。\n"
    }
    claims = named_claims(link_corpus(read(corpus), lexicon))
    assert ("OpenVINO", RelationType.RUNS_ON, "NPU") in claims, claims
    assert ("llama.cpp", RelationType.SUPPORTS, "GGUF") in claims, claims
    assert not {c for c in claims if (c[0], c[2]) in {("OpenVINO", "GGUF"), ("llama.cpp", "NPU")}}


def test_a_feature_matrix_row_claims_under_each_column_it_marks(lexicon: Lexicon) -> None:
    # a docs page's table: the columns are named things, the rows what each has (✅) or lacks
    # (❌); the rows' own text names only the feature, so each claim comes from a mark cell
    corpus = {
        "serving-matrix.md": "# Serving matrix\n\nWhat each engine offers.\n\n"
        "| Feature | vLLM | OpenVINO |\n|---|---|---|\n"
        "| Runs on the NPU | ❌ | ✅ |\n| GGUF weights | ✅ | ❌ |\n"
        "| Long context | ✅ | ✅ |\n"
    }
    claims = named_claims(link_corpus(read(corpus), lexicon))
    assert ("OpenVINO", RelationType.RUNS_ON, "NPU") in claims, claims
    assert ("vLLM", RelationType.NOT_SUPPORTED, "NPU") in claims, claims
    assert ("vLLM", RelationType.SUPPORTS, "GGUF") in claims, claims
    assert ("OpenVINO", RelationType.NOT_SUPPORTED, "GGUF") in claims, claims
    # no claim between the two columns, and none from a row that names no thing
    assert not {c for c in claims if {c[0], c[2]} == {"vLLM", "OpenVINO"}}, claims


def test_a_name_in_a_table_header_takes_its_typed_siblings_kind(lexicon: Lexicon) -> None:
    # the header lists the things the table compares: two engines the lexicon knows and two
    # names nothing else types, which are engines too
    corpus = {
        "engines.md": "# Engines\n\nHow the servers compare.\n\n"
        "| Feature | vLLM | Quorrel | llama.cpp | Vantorix |\n|---|---|---|---|---|\n"
        "| GGUF weights | ❌ | ✅ | ✅ | ❌ |\n| Paged attention | ✅ | ✅ | ❌ | ✅ |\n"
    }
    found = names(link_corpus(read(corpus), lexicon))
    assert found.get("Quorrel") == found.get("Vantorix") == found["vLLM"], found


def test_a_stage_of_a_typed_thing_is_a_thing_of_its_kind(lexicon: Lexicon) -> None:
    # "ZeRO" is a parallel strategy the lexicon knows; its stages, named only here, are too
    corpus = {
        "sharding.md": "# Sharding\n\nDeepSpeed supports ZeRO2 and ZeRO3, two stages of ZeRO.\n\n"
        "ZeRO2 shards the optimizer states and the gradients. ZeRO3 shards the parameters "
        "as well. Use ZeRO3 when the model does not fit with ZeRO2.\n"
    }
    found = names(link_corpus(read(corpus), lexicon))
    assert found.get("ZeRO2") == found.get("ZeRO3") == NodeType.PARALLEL_STRATEGY, found


def test_an_adjective_made_of_a_name_names_the_thing(lexicon: Lexicon) -> None:
    # "LoRA-like adapters", "TarnLLM-compatible clients": LoRA and TarnLLM, no new things
    corpus = {
        "tarnllm-README.md": "# TarnLLM\n\nTarnLLM is an inference engine for Rust.\n\n"
        "## LoRA-like adapters\n\nLoRA-like adapters train fewer weights than full tuning.\n\n"
        "## Clients\n\nTarnLLM-compatible clients run on Linux. TarnLLM-compatible clients "
        "need no GPU. Write TarnLLM-compatible clients in Python.\n"
    }
    found = set(names(link_corpus(read(corpus), lexicon)))
    assert {"LoRA", "TarnLLM"} <= found, found
    assert not {n for n in found if n.endswith(("-like", "-compatible"))}, found
