"""How good a store's entities are: counts of the failure classes of issue 22, and a sample of
nodes with their types and evidence for a person to judge.

    kgqa ingest --corpus ../shared/real-docs/corpus --store .store-real
    python benchmarks/entity_quality.py .store-real [--sample 30] [--seed 0] [--json]

Failure classes (each counted by a rule a person can check on the listed examples):

- **untyped**: nodes of the catch-all type `Concept`;
- **mistyped**: nodes whose type their name contradicts: a community channel (YouTube, QQ,
  Forums, GitHub Issues) typed as anything but an organisation or platform; a model name
  (a size such as `7B`, a model family such as Llama or Qwen) typed as something else than a
  model; a section heading (Features, Typical Usage) typed as a criterion; a docs page's title
  or file name (not a README's) typed as a product;
- **duplicates**: nodes that are one thing by a looser normalisation (case, punctuation, a `v`
  before a version, a vendor prefix, a parameter-count suffix): `Phi4` / `Microsoft Phi4`,
  `Llama2` / `LLaMA-v2`, `ChatGLM2-6B` / `chatglm2`;
- **missed**: names written in two or more documents (name-shaped: `SGLang`, `vLLM`; or a
  capitalised word the corpus never writes in lower case: `Ollama`) that no entity has;
- **isolated**: nodes without any edge.

The sample shows each node's id, type, name, aliases, degree and up to two quotes (its own
evidence, else its edges'), seeded, so that two runs show the same nodes.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ingest.discover import NAME_TOKEN, common_word, file_stem, looks_like_entity
from kg.documents import EvidenceUnit, UnitKind
from kg.graph import KnowledgeGraph
from kg.lexicon import Lexicon
from kg.schema import SOLUTION_TYPES, Entity, NodeType, normalize_name
from kg.store import Store

_CHANNELS = re.compile(
    r"^(?:youtube|bilibili|qq(?: group)?|wechat|微信|微信群|qq群|discord|slack|twitter|x|"
    r"forums?|discussions?|github issues|issues|reddit|zhihu|知乎|gitter|telegram|"
    r"mailing lists?|newsletter|blog|medium|linkedin|facebook|weibo|微博|钉钉|dingtalk)$",
    re.I,
)
_MODEL_SIZE = re.compile(r"(?<![\w.])\d+(?:\.\d+)?\s?[BM](?![\w])|-(?:instruct|chat|base)\b", re.I)
_MODEL_FAMILY = re.compile(
    r"^(?:llama|llava|qwen|chatglm|glm|phi|mistral|mixtral|gemma|deepseek|baichuan|internlm|"
    r"falcon|bloom|gpt-?[2345j]|bert|roberta|t5|whisper|stable ?diffusion|sdxl|yi)[\w.\-]*\d",
    re.I,
)
_NOT_MODEL = {NodeType.MODEL, NodeType.ORGANIZATION, NodeType.HARDWARE}
_VENDORS = """
    microsoft meta google nvidia intel amd alibaba huggingface facebook openai apple baidu
    tencent tsinghua thudm mistralai deepseek qwen
    """.split()  # noqa: SIM905 - a word list reads best as words
_CAPITALISED = re.compile(r"(?<![\w.\-/@])[A-Z][a-z]{2,}(?![\w\-/])")
_ACRONYM = re.compile(r"(?<![\w.\-/@])[A-Z]{3,}[0-9]?(?![\w\-/])")


_SIZE = re.compile(r"[-_ ]\d+(?:\.\d+)?[BbMm]$")


def loose_key(name: str) -> str:
    """A name folded for finding duplicates: normalised, a `v` before a version dropped, a
    vendor prefix cut before a versioned name.

    >>> [loose_key(n) for n in ["LLaMA-v2", "Llama2", "Microsoft Phi4", "Intel GPU"]]
    ['llama2', 'llama2', 'phi4', 'intelgpu']
    """
    key = normalize_name(name.strip())
    key = re.sub(r"(?<=[a-z])v(?=\d)", "", key)
    for vendor in sorted(_VENDORS, key=len, reverse=True):
        v = normalize_name(vendor)
        rest = key[len(v) :]
        if key.startswith(v) and re.fullmatch(r"[a-z]{2,}\d[\w.]*", rest):
            return rest
    return key


@dataclass
class Report:
    """The counts, with examples, and the sample."""

    store: str
    nodes: int
    edges: int
    untyped: list[str] = field(default_factory=list)
    mistyped: dict[str, list[str]] = field(default_factory=dict)
    duplicates: list[list[str]] = field(default_factory=list)
    missed: list[str] = field(default_factory=list)
    isolated: list[str] = field(default_factory=list)
    sample: list[dict[str, object]] = field(default_factory=list)

    def counts(self) -> dict[str, int]:
        """Each failure class's count (mistyped: all its kinds; duplicates: groups)."""
        return {
            "nodes": self.nodes,
            "edges": self.edges,
            "untyped": len(self.untyped),
            "mistyped": sum(len(v) for v in self.mistyped.values()),
            "duplicates": len(self.duplicates),
            "missed": len(self.missed),
            "isolated": len(self.isolated),
        }


def _titles(units: list[EvidenceUnit]) -> tuple[set[str], set[str]]:
    """Normalised section headings of the corpus, and the titles and file names of its pages
    that are not READMEs (their first heading, their file stem)."""
    headings: set[str] = set()
    pages: set[str] = set()
    first: dict[str, str] = {}
    for unit in units:
        if unit.kind == UnitKind.HEADING:
            headings.add(normalize_name(unit.text))
            first.setdefault(unit.doc, unit.text)
    docs = {u.doc for u in units}
    for doc in docs:
        if "readme" in doc.lower():
            continue
        pages.add(normalize_name(file_stem(doc)))
        if doc in first:
            pages.add(normalize_name(first[doc]))
    return headings, pages


def _mistyped(
    entities: list[Entity], units: list[EvidenceUnit], lexicon: Lexicon, touched: set[str]
) -> dict[str, list[str]]:
    headings, pages = _titles(units)
    found: dict[str, list[str]] = defaultdict(list)
    for e in entities:
        known = lexicon.lookup(e.name) is not None
        key = normalize_name(e.name)
        if _CHANNELS.match(e.name) and e.type not in (NodeType.ORGANIZATION, NodeType.PLATFORM):
            found["channel"].append(f"{e.name} ({e.type.value})")
        elif (
            (_MODEL_SIZE.search(e.name) or _MODEL_FAMILY.match(e.name))
            and e.type not in _NOT_MODEL
            and not known
        ):
            found["model"].append(f"{e.name} ({e.type.value})")
        elif e.type == NodeType.CRITERION and key in headings and e.id not in touched:
            found["heading as criterion"].append(e.name)  # a section title, compared nowhere
        elif e.type in SOLUTION_TYPES and not known and key in pages:
            found["page title as product"].append(f"{e.name} ({e.type.value})")
    return dict(found)


def _duplicates(entities: list[Entity]) -> list[list[str]]:
    """Groups of nodes with one `loose_key`; a name with a size (`ChatGLM2-6B`) joins the
    group of its name without one (`chatglm2`) when it is the only size written."""
    groups: dict[str, list[str]] = defaultdict(list)
    sized: dict[str, list[str]] = defaultdict(list)
    for e in entities:
        if e.type in (NodeType.SCENARIO, NodeType.PERSONA):
            continue  # situations are phrases, not names
        groups[loose_key(e.name)].append(e.name)
        if _SIZE.search(e.name):
            sized[loose_key(_SIZE.sub("", e.name))].append(e.name)
    for base, names in sized.items():
        if len(names) == 1 and base in groups and names[0] not in groups[base]:
            groups[base].extend(names)
            groups[loose_key(names[0])].remove(names[0])
    return sorted(sorted(g) for g in groups.values() if len(g) > 1)


def _missed(entities: list[Entity], units: list[EvidenceUnit], lexicon: Lexicon) -> list[str]:
    """Names written in two or more documents that no entity has as name or alias, or as a name
    the lexicon links to it (`aarch64` is the node ARM's, `Gaudi2` Intel Gaudi's): name-shaped
    tokens and acronyms, and capitalised words that the corpus never writes in lower case, that
    stand inside a sentence somewhere and that are not English words by their ending."""
    known: set[str] = set()
    for e in entities:
        known.update(normalize_name(n) for n in [e.name, *e.aliases])
    ids = {e.id for e in entities}
    readable = [u for u in units if u.kind != UnitKind.CODE]
    lower: set[str] = set()
    for unit in readable:
        lower.update(re.findall(r"(?<![A-Za-z])[a-z][a-z\-]+", unit.text))
    docs: dict[str, set[str]] = defaultdict(set)
    spelled: dict[str, str] = {}
    for unit in readable:
        names = [m.group(0).rstrip(".-") for m in NAME_TOKEN.finditer(unit.text)]
        names += _ACRONYM.findall(unit.text)
        names += [
            m.group(0)
            for m in _CAPITALISED.finditer(unit.text)
            if re.search(r"[a-z,]\s+$", unit.text[: m.start()])  # inside a sentence
            and not common_word(m.group(0), lower)
        ]
        for name in names:
            key = normalize_name(name)
            if looks_like_entity(name) and not re.fullmatch(r"[A-Z]{2,}s", name):
                docs[key].add(unit.doc)
                spelled.setdefault(key, name)
    missed = []
    for key, where in docs.items():
        if len(where) < 2 or key in known or len(key) < 3 or spelled[key].lower() in lower:
            continue
        entry = lexicon.lookup(spelled[key])
        if entry is not None and entry.id in ids:
            continue  # linked wherever it is written: a name of a node
        if any(key in k for k in known if len(k) >= 4):
            continue  # part of a known name ("Lightning" of "PyTorch Lightning")
        missed.append(spelled[key])
    return sorted(missed, key=str.lower)


def _sample(graph: KnowledgeGraph, n: int, seed: int) -> list[dict[str, object]]:
    entities = sorted(graph.entities(), key=lambda e: e.id)
    picked = random.Random(seed).sample(entities, min(n, len(entities)))
    out: list[dict[str, object]] = []
    for e in sorted(picked, key=lambda e: e.id):
        relations = graph.relations_of(e.id)
        quotes = [ev.quote for ev in e.evidence[:2]]
        for r in relations:
            if len(quotes) >= 2:
                break
            quotes.extend(ev.quote for ev in r.evidence[: 2 - len(quotes)])
        out.append(
            {
                "id": e.id,
                "type": e.type.value,
                "name": e.name,
                "aliases": e.aliases,
                "degree": len(relations),
                "quotes": [re.sub(r"\s+", " ", q)[:160] for q in quotes],
            }
        )
    return out


def measure(store_dir: Path, sample: int = 30, seed: int = 0) -> Report:
    """The report of a store (see the module docstring)."""
    store = Store.open(store_dir)
    graph = store.graph()
    units = store.units()
    lexicon = Lexicon.default()
    entities = sorted(graph.entities(), key=lambda e: e.id)
    relations = list(graph.relations())
    touched = {r.source for r in relations} | {r.target for r in relations}
    return Report(
        store=str(store_dir),
        nodes=len(entities),
        edges=len(relations),
        untyped=[e.name for e in entities if e.type == NodeType.CONCEPT],
        mistyped=_mistyped(entities, units, lexicon, touched),
        duplicates=_duplicates(entities),
        missed=_missed(entities, units, lexicon),
        isolated=[f"{e.name} ({e.type.value})" for e in entities if e.id not in touched],
        sample=_sample(graph, sample, seed),
    )


def _markdown(report: Report, examples: int) -> str:
    counts = report.counts()
    lines = [f"## {report.store}", "", "| class | count | examples |", "|---|---|---|"]

    def row(name: str, items: list[str]) -> None:
        shown = ", ".join(items[:examples]) + (" …" if len(items) > examples else "")
        lines.append(f"| {name} | {len(items)} | {shown} |")

    row("untyped (Concept)", report.untyped)
    for kind, items in sorted(report.mistyped.items()):
        row(f"mistyped: {kind}", items)
    row("duplicates (groups)", [" / ".join(g) for g in report.duplicates])
    row("named in >=2 documents, no entity", report.missed)
    row("isolated", report.isolated)
    lines += ["", f"nodes {counts['nodes']}, edges {counts['edges']}; " + _summary(counts), ""]
    lines += ["| id | type | name | degree | evidence |", "|---|---|---|---|---|"]
    for node in report.sample:
        quotes = " / ".join(f"“{q}”" for q in node["quotes"])  # type: ignore[attr-defined]
        lines.append(
            f"| {node['id']} | {node['type']} | {node['name']} | {node['degree']} | {quotes} |"
        )
    return "\n".join(lines)


def _summary(counts: dict[str, int]) -> str:
    """One line of the failure counts.

    >>> _summary({"nodes": 9, "edges": 1, "untyped": 1, "mistyped": 2, "duplicates": 0,
    ...           "missed": 3, "isolated": 4})
    'untyped 1, mistyped 2, duplicates 0, missed 3, isolated 4'
    """
    keys = ("untyped", "mistyped", "duplicates", "missed", "isolated")
    return ", ".join(f"{k} {counts[k]}" for k in keys)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("stores", nargs="+", type=Path, help="store directories")
    parser.add_argument("--sample", type=int, default=30, help="nodes to show for judging")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--examples", type=int, default=12, help="examples per class")
    parser.add_argument("--json", action="store_true", help="one JSON object per store")
    args = parser.parse_args(argv)
    for path in args.stores:
        report = measure(path, args.sample, args.seed)
        if args.json:
            print(json.dumps({**asdict(report), "counts": report.counts()}, ensure_ascii=False))
        else:
            print(_markdown(report, args.examples))
            print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
