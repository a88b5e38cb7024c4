"""The names a reader may pick: what the evidence it is shown names, typed where the graph knows it.

A candidate is a name the retrieved evidence itself gives a thing, found from the document's
structure, never from the question's wording:

- **entities**: the graph entities the evidence units are about or name (what linking found),
  except the kinds that describe a situation rather than a thing one uses (scenarios, personas,
  criteria) and organisations, licences and languages;
- **section titles** of the units, without their numbering, emoji and markup, and never a label
  (a title that heads many sections, "Usage", or the page's own title): the innermost other one;
- **emphasis**: bold and code spans of the units' verbatim text (`**分组参数切片的数据并行**`,
  `` `tensor_parallel_size` ``);
- **row labels, lead terms and defined terms**: a table row's first cell, a list item's lead
  ("Hardware: …"), the term of a `term: …` sentence ("FSDP+QLoRA: …");
- **asked cells**: a table row's cells under the columns whose header the question uses (which
  toolchain a board takes is in the board's row, under "Toolchain"), in a README too;
- a name with its alias in brackets ("权值量化（Weight Quantization）", "在线量化 (QAT)") gives
  both names, and so does a Chinese term glossed in Latin ("参数服务器（Parameter Server，PS）").

A README's titles, leads and emphasis name its features ("极速推理", "Quick start"): from a README
only the entities linking found are candidates. The question's options (the alternatives it
names) come first. A name the question uses, or a
thing it names under any surface, is the asker's situation and no candidate; a known name in a
phrase ("CPU 部署") gives way to the known name. Candidates come in the order the evidence shows
them (the best unit first), one per normalised name; a graph entity wins over a bare span of the
same name. Each carries the numbers of the evidence lines that name it.
"""

from __future__ import annotations

import re
import unicodedata
from collections import Counter
from collections.abc import Container, Iterable, Sequence
from functools import lru_cache

from pydantic import BaseModel, Field

from ingest.discover import is_readme
from ingest.markup import emphasized, strip_markup
from ingest.structure.inline import split_definition
from ingest.text import split_sentences
from kg.documents import EvidenceUnit, UnitKind
from kg.graph import KnowledgeGraph
from kg.schema import NodeType, normalize_name
from qa.read.shapes import SECTION_NUMBER, text_width

__all__ = [
    "Candidate",
    "asked_cells",
    "candidate_names",
    "defined_terms",
    "glossed_names",
    "lead_labels",
    "names_in",
    "names_unit",
    "number_evidence",
    "phrased",
    "section_labels",
    "section_name",
    "split_alias",
    "title_name",
]

#: kinds that describe the asker's situation or a party, not something one picks
_NOT_PICKED = frozenset(
    {
        NodeType.SCENARIO,
        NodeType.PERSONA,
        NodeType.CRITERION,
        NodeType.ORGANIZATION,
        NodeType.LICENSE,
        NodeType.LANGUAGE,
    }
)
#: "Step 2:", "Part 3.": a step's number, not part of its title (`SECTION_NUMBER` the rest)
_STEP_NUMBER = re.compile(r"^\s*(?:step|part|chapter)\s*\d+\s*[:：.]?\s*", re.I)
_BRACKETED = re.compile(r"^(?P<name>[^（(]+?)\s*[（(](?P<alias>[^（）()]+)[）)]\s*$")
_LATIN = re.compile(r"[A-Za-z]")
#: an English plural's ending ("Controllers", "Examples")
_PLURAL = re.compile(r"[a-z]{3}s$")
#: a configuration's literal values (`true`, `None`): a setting's value, never the name of a thing
_LITERALS = frozenset({"true", "false", "none", "null", "nil", "yes", "no"})
#: widest name a candidate may be (a Chinese character counts two): wider spans are phrases;
#: Chinese reads as a phrase sooner ("分组参数切片的数据并行" is 22)
MAX_WIDTH = 32
MAX_CJK_WIDTH = 24
#: widest term a `term: …` sentence defines ("FSDP+QLoRA: …", not "X 主要包含三种方法：…")
_TERM_WIDTH = 20


class Candidate(BaseModel):
    """A name the reader may pick: the graph entity it is (None: a name only the text gives)."""

    name: str
    entity: str | None = None
    evidence: list[int] = Field(
        default_factory=list, description="the numbers of the evidence lines that name it"
    )
    proposed: bool = Field(default=False, description="the graph's own answer picked it too")
    offered: bool = Field(
        default=False,
        description="one of the alternatives the question offers (`Reading.alternatives`)",
    )

    @property
    def key(self) -> str:
        """The id a recommendation carries: the entity's, or `value:<name>` for a bare name.

        >>> Candidate(name="QAT").key, Candidate(name="vLLM", entity="engine:vllm").key
        ('value:QAT', 'engine:vllm')
        """
        return self.entity or f"value:{self.name}"


def split_alias(text: str) -> list[str]:
    """A name with an alias in brackets as both names; a bracketed note that is no name (it
    shares the name's script and reads like a phrase) is dropped.

    >>> split_alias("权值量化（Weight Quantization）")
    ['权值量化', 'Weight Quantization']
    >>> split_alias("参数服务器（Parameter Server，PS）")
    ['参数服务器', 'Parameter Server', 'PS']
    >>> split_alias("离线量化（推荐用于加速）"), split_alias("C++ 工具（推荐用于生产环境）")
    (['离线量化'], ['C++ 工具'])
    >>> split_alias("Fully Sharded Data Parallel (FSDP)")
    ['Fully Sharded Data Parallel', 'FSDP']
    >>> split_alias("Tensor Parallelism")
    ['Tensor Parallelism']
    """
    match = _BRACKETED.match(text)
    if match is None:
        return [text.strip()]
    name, alias = match.group("name").strip(), match.group("alias").strip()
    out = [name]
    translated = bool(_LATIN.search(alias)) and not _LATIN.search(name)
    if translated or re.fullmatch(r"[A-Z][A-Z0-9+\-]*", alias):
        out += [a.strip() for a in re.split(r"[，,、/;；]", alias) if a.strip()]
    return out


def title_name(title: str) -> str:
    """A section title as a name: no numbering, emoji, markup or trailing colon.

    >>> title_name("## 📦 二、权值量化（推荐首选）")
    '权值量化（推荐首选）'
    >>> title_name("1.2 参数服务器训练模式"), title_name("Step 2: Quantize the model")
    ('参数服务器训练模式', 'Quantize the model')
    >>> title_name("### ✅ 适用场景"), title_name("4-bit Kernels")
    ('适用场景', '4-bit Kernels')
    >>> title_name("3. 3D Models"), title_name("1.5B models")
    ('3D Models', '1.5B models')
    """
    text = strip_markup(title.lstrip("#").strip()).strip()
    text = re.sub(r"^[^\w（(]+", "", text)  # "✅ 适用场景": marks before the words
    text = _STEP_NUMBER.sub("", SECTION_NUMBER.sub("", text))
    return text.rstrip("：:").strip()


def section_name(unit: EvidenceUnit, labels: Container[tuple[str, str]] = ()) -> str:
    """The title of the section a unit is in, as a name: the innermost title that is not a
    label (`labels`: the (document, title) pairs that head several sections of one document,
    such as "Usage" or "适用场景", which say what a section is, not what it is about); "" when
    it has none.

    >>> u = EvidenceUnit(id="d#0-1", doc="d", start=0, end=1, kind=UnitKind.SENTENCE, text="x",
    ...     heading_path=("二、权值量化", "✅ 适用场景"))
    >>> section_name(u), section_name(u, {("d", "✅ 适用场景")})
    ('适用场景', '权值量化')
    """
    for title in reversed(unit.heading_path):
        if (unit.doc, title) not in labels:
            return title_name(title)
    return ""


#: a Latin name in brackets right after Chinese text: "参数服务器（Parameter Server，PS）"
_GLOSSED = re.compile(r"(?<=[\u4e00-\u9fff])\s*[（(]([A-Za-z][^（）()\u4e00-\u9fff]{1,60})[）)]")


def glossed_names(text: str) -> list[str]:
    """The Latin names a Chinese text glosses its terms with, in brackets.

    >>> glossed_names("参数服务器（Parameter Server，PS）训练模式，以及数据并行(DP)。")
    ['Parameter Server', 'PS', 'DP']
    >>> glossed_names("see (this) and 量化（见下文）")
    []
    """
    return [
        part.strip()
        for m in _GLOSSED.finditer(text)
        for part in re.split(r"[，,、;；/]", m.group(1))
        if part.strip()
    ]


def defined_terms(text: str) -> list[str]:
    """The terms a text defines as `term: what it is`, sentence by sentence.

    >>> defined_terms("分布式训练：支持 DDP 和 FSDP。 FSDP+QLoRA: 双卡3090运行70B模型的训练")
    ['分布式训练', 'FSDP+QLoRA']
    """
    terms = []
    for start, end in split_sentences(text):
        found = split_definition(text[start:end].strip())
        if found is not None and text_width(found[0]) <= _TERM_WIDTH:
            terms.append(found[0])
    return terms


def _names_of_unit(
    unit: EvidenceUnit, quote: str, labels: Container[tuple[str, str]]
) -> Iterable[str]:
    """The names a unit's structure gives: its section title, emphasis, row label, lead term,
    the terms it defines and the Latin names it glosses its Chinese terms with; never one of its
    document's `labels` (a lead such as "Note" that labels paragraphs, `lead_labels`)."""
    if unit.heading_path:
        yield section_name(unit, labels)
    spans = [*emphasized(quote)]
    if unit.kind == UnitKind.ROW and unit.cells:
        spans.append(strip_markup(unit.cells[0]))
    if unit.kind == UnitKind.ITEM and unit.lead:
        spans.append(unit.lead)
    if unit.kind != UnitKind.ROW:  # a row's cells are no sentences
        spans += defined_terms(unit.text)
    # a label that leads paragraphs ("**Note**:", "注意：") says what a paragraph is, not a name
    yield from (s for s in spans if (unit.doc, s) not in labels)
    yield from glossed_names(unit.text)


def asked_cells(unit: EvidenceUnit, question: str) -> list[str]:
    """The cells of a table row under the columns whose header the question uses: a question
    that asks for the toolchain of a board is answered, in the board's row, by the cell under
    "Toolchain" (the row is found by what the question states, the column by what it asks).
    Ingest keeps a row's cells and header with their markup already stripped (`ingest.units`):
    stripping again would read an identifier's trailing underscore as emphasis.

    >>> row = EvidenceUnit(id="d#0-9", doc="d", start=0, end=9, kind=UnitKind.ROW,
    ...     text="Kite 3 | ~25ms | grab_frame_()", cells=["Kite 3", "~25ms", "grab_frame_()"],
    ...     header=["Board", "Latency", "Toolchain"])
    >>> asked_cells(row, "Kite 3 owners: which toolchain fits it?")  # as the page writes it
    ['grab_frame_()']
    >>> asked_cells(row, "How fast is it?")
    []
    """
    if unit.kind != UnitKind.ROW or not question:
        return []
    return [
        cell
        for cell, head in zip(unit.cells, unit.header, strict=False)
        if head.strip() and names_in(head, question)
    ]


#: a setting given a quoted value (`HSA_OVERRIDE="10.3.0"`, `backend='gloo'`)
_ASSIGNED = re.compile(r"""([A-Za-z_][\w.\-]*)\s*=\s*(?:"[^"]*"|'[^']*')""")


def candidate_names(
    graph: KnowledgeGraph,
    units: Sequence[EvidenceUnit],
    documents: dict[str, str],
    *,
    question: str = "",
    options: Sequence[str] = (),
    named: Container[str] = (),
    prior: Sequence[Candidate] = (),
    labels: Container[tuple[str, str]] = (),
    limit: int = 14,
) -> list[Candidate]:
    """The candidates of a reading: the options the question names ("A 还是 B"), then,
    unit by unit (best first), the entities each is about or names and the names its structure
    gives; `prior` (another answerer's picks) come after the options. At most `limit`, one per
    normalised name; section titles that are `labels` give way to their parent's (`section_name`).
    A name the question itself uses, or a thing it names (`named`: the entities the question
    links to, under any surface), other than its options, is the asker's situation ("用飞桨的
    工具…"), not an answer: it is left out.

    >>> from kg.schema import Entity
    >>> g = KnowledgeGraph()
    >>> g.add_entity(Entity(id="engine:vllm", type=NodeType.INFERENCE_ENGINE, name="vLLM"))
    >>> doc = "## 2. Tensor Parallelism\\nUse **tensor parallelism** with vLLM."
    >>> unit = EvidenceUnit(id="d#25-62", doc="d", start=25, end=62, kind=UnitKind.SENTENCE,
    ...     text="Use tensor parallelism with vLLM.", heading_path=("2. Tensor Parallelism",),
    ...     mentions=["engine:vllm"])
    >>> [(c.name, c.entity) for c in candidate_names(g, [unit], {"d": doc})]
    [('vLLM', 'engine:vllm'), ('Tensor Parallelism', None)]
    """
    found: dict[str, Candidate] = {}

    def asked_in(name: str) -> bool:
        return names_in(name, question)

    def add(name: str, entity: str | None = None) -> None:
        for part in split_alias(name) if entity is None else [name]:
            if assigned := _ASSIGNED.fullmatch(part.strip()):
                part = assigned.group(1)  # `KEY="value"` sets the setting KEY
            part = part.strip().strip("：:，,。.;；\"'“”‘’")
            if re.search(r'["\\\x00-\x1f]', part):
                continue  # quotes and escapes inside a name: a string literal, not a name
            key = normalize_name(part)
            cjk = re.search(r"[\u4e00-\u9fff]", part) is not None
            if not key or text_width(part) > (MAX_CJK_WIDTH if cjk else MAX_WIDTH):
                continue
            if not re.search(r"\w", part):
                continue
            if entity is None and (len(key) < 2 or key in _LITERALS):
                continue  # one letter (a code span's "y") or a literal (`true`) names nothing
            if part.endswith(("?", "？")):
                continue  # a question ("Q2: 动态量化没加速？") is no name
            if len(split_sentences(part)) > 1:
                continue  # two sentences (a reference's "Author. Title") are no name
            if key not in option_keys and asked(part, entity):
                continue
            known = found.get(key)
            if known is None:
                found[key] = Candidate(name=part, entity=entity)
            elif known.entity is None and entity is not None:
                found[key] = Candidate(name=known.name, entity=entity)

    def asked(name: str, entity: str | None) -> bool:
        """Whether the question uses the name, or names the thing it is under another surface
        ("飞桨" for PaddlePaddle, "量化" for a heading "Quantization"); a bare plural is the
        kind the question asks for where it uses the singular (a title "Controllers" for
        "which controller …")."""
        if asked_in(name) or (entity is None and _PLURAL.search(name) and asked_in(name[:-1])):
            return True
        node = entity or graph.find(name)
        if node is None or node not in graph or node in option_ids:
            return False
        if node in named:
            return True
        thing = graph.entity(node)
        return any(asked_in(n) for n in [thing.name, *thing.aliases])

    def add_entity(eid: str | None) -> None:
        if eid and eid in graph and graph.entity(eid).type not in _NOT_PICKED:
            add(graph.entity(eid).name, eid)

    option_keys = {normalize_name(o) for o in options}
    option_ids = {n for n in (graph.find(o) for o in options) if n is not None}
    for option in options:
        node = graph.find(option)
        if node is not None and graph.entity(node).type not in _NOT_PICKED:
            option_keys.add(normalize_name(graph.entity(node).name))
            add(graph.entity(node).name, node)
        else:
            add(option)
    for candidate in prior:
        add(candidate.name, candidate.entity)
    for unit in units:
        for cell in asked_cells(unit, question):
            add(cell)
        for eid in [unit.subject, *unit.mentions]:
            add_entity(eid)
        if is_readme(unit.doc):
            continue  # a README's titles, leads and emphasis name its features; its things are
            # the entities linking found
        quote = documents.get(unit.doc, "")[unit.start : unit.end]
        for name in _names_of_unit(unit, quote, labels):
            add(name)
    known = [c.name for c in found.values() if c.entity is not None] + list(options)
    return [c for c in found.values() if not phrased(c, known)][:limit]


def phrased(candidate: Candidate, known: Sequence[str]) -> bool:
    """Whether a bare name is a known thing's name in a phrase ("CPU 部署", "LoftQ
    initialization"): a known name, then words that name nothing known. The known name stands
    for it; "FSDP + QLoRA" names two known things and stands for itself.

    >>> phrased(Candidate(name="LoftQ initialization"), ["LoftQ"])
    True
    >>> phrased(Candidate(name="FSDP + QLoRA"), ["FSDP", "QLoRA"])
    False
    >>> phrased(Candidate(name="CPU"), ["CPU"]), phrased(Candidate(name="FSDP2 API"), ["FSDP"])
    (False, False)
    """
    if candidate.entity is not None:
        return False
    name = candidate.name.casefold()
    for other in known:
        head = other.casefold()
        if name == head or not name.startswith(head):
            continue
        rest = name[len(head) :]
        if not rest[:1].isspace():
            continue  # "FSDP2" is not "FSDP" in a phrase
        if not any(k.casefold() in rest for k in known if k.casefold() != head):
            return True
    return False


def section_labels(
    units: Iterable[EvidenceUnit], graph: KnowledgeGraph | None = None
) -> frozenset[tuple[str, str]]:
    """The (document, title) pairs that say what a section is rather than what it is about: a
    title that heads two sections or more of its document ("Usage", "适用场景"), a title that
    heads sections of two documents or more, names nothing `graph` knows and is no words of
    any unit's text (a site's boilerplate: "参考链接", "环境准备"; a thing two pages explain is
    named in their sentences too), and the top title most of a document's units are under
    (the page's own title: its topic, not one of its things, even where a stray line before it
    reads as a heading of its own); with them, the (document, lead) pairs of the leads that
    label paragraphs as such a title labels sections (`lead_labels`: "Note: …").

    >>> def u(i, path, doc="d"):
    ...     return EvidenceUnit(id=f"{doc}#{i}", doc=doc, start=i, end=i + 1,
    ...                         kind=UnitKind.SENTENCE, text="x", heading_path=path)
    >>> sorted(section_labels([u(0, ("A", "Usage")), u(1, ("B", "Usage")), u(2, ("C", "Usage"))]))
    [('d', 'Usage')]
    >>> sorted(section_labels([u(0, ("Guide",)), u(1, ("Guide", "FSDP")), u(2, ("Guide", "TP"))]))
    [('d', 'Guide')]
    >>> sorted(section_labels([u(0, ("Menu",)), u(1, ("Guide", "FSDP")), u(2, ("Guide", "TP"))]))
    [('d', 'Guide')]
    >>> two = [u(0, ("Guide", "FSDP")), u(1, ("Guide", "Links")), u(2, ("Notes", "TP"), "e"),
    ...        u(3, ("Notes", "Links"), "e")]
    >>> sorted(section_labels(two))
    [('d', 'Guide'), ('d', 'Links'), ('e', 'Links'), ('e', 'Notes')]
    >>> said = EvidenceUnit(id="e#9", doc="e", start=9, end=10, kind=UnitKind.SENTENCE,
    ...     text="Read the links below.", heading_path=("Notes", "TP"))
    >>> ("d", "Links") in section_labels([*two, said])
    False
    """
    paths: set[tuple[str, tuple[str, ...]]] = set()
    tops: dict[str, Counter[str]] = {}
    texts: list[str] = []
    for unit in units:
        if unit.kind != UnitKind.HEADING:
            texts.append(normalize_name(unit.text))
        tops.setdefault(unit.doc, Counter())[unit.heading_path[0] if unit.heading_path else ""] += 1
        if unit.heading_path:
            paths.add((unit.doc, unit.heading_path))
    counts: dict[tuple[str, str], int] = {}
    for doc, path in paths:
        counts[(doc, path[-1])] = counts.get((doc, path[-1]), 0) + 1
    labels = {k for k, n in counts.items() if n > 1}
    documents: dict[str, set[str]] = {}
    for doc, path in paths:
        for title in path:
            documents.setdefault(normalize_name(title), set()).add(doc)
    said = "\n".join(texts)  # a folded name has no line break: no match spans two units
    shared = {key for key, docs in documents.items() if len(docs) > 1 and key and key not in said}
    for doc, path in paths:
        for title in path:
            if normalize_name(title) in shared and (graph is None or graph.find(title) is None):
                labels.add((doc, title))
    for doc, under in tops.items():
        title, held = under.most_common(1)[0]
        if title and 2 * held > under.total():
            labels.add((doc, title))
    return frozenset(labels | lead_labels(units, graph))


#: a lead that may be a label: words only, no digits or code ("Note", "注意", "Pros"),
#: at most as wide as a defined term
_PLAIN_LEAD = re.compile(r"[^\W\d_]+(?: [^\W\d_]+)*")


def lead_labels(
    units: Iterable[EvidenceUnit], graph: KnowledgeGraph | None = None
) -> set[tuple[str, str]]:
    """The (document, lead) pairs of the leads that say what a paragraph is rather than what it
    speaks of, as a label title says what a section is: a lead (`Note: …`, `**注意**：…`, a list
    item's "Example: …") of words only that leads paragraphs of two documents or more, or three
    of one, and names nothing `graph` knows. A name leads paragraphs too ("PyTorch：…" in two
    sections of a comparison), but in one document, and a flag or a figure is no plain word.

    >>> def u(i, text, doc="d"):
    ...     return EvidenceUnit(id=f"{doc}#{i}", doc=doc, start=i, end=i + 1,
    ...                         kind=UnitKind.SENTENCE, text=text)
    >>> sorted(lead_labels([u(0, "Note: MPI 3.1.3 hangs."), u(1, "Note: use Gloo.", "e"),
    ...     u(2, "Fennel: fast."), u(3, "Fennel: small."), u(4, "--tp: the degree.", "e"),
    ...     u(5, "--tp: the degree.")]))
    [('d', 'Note'), ('e', 'Note')]
    """
    leads: dict[str, list[tuple[str, str]]] = {}
    for unit in units:
        if unit.kind in (UnitKind.HEADING, UnitKind.ROW, UnitKind.CODE):
            continue
        found = split_definition(unit.text)
        lead = unit.lead if unit.kind == UnitKind.ITEM and unit.lead else found and found[0]
        if lead and text_width(lead) <= _TERM_WIDTH and _PLAIN_LEAD.fullmatch(lead):
            leads.setdefault(normalize_name(lead), []).append((unit.doc, lead))
    labels: set[tuple[str, str]] = set()
    for pairs in leads.values():
        counts = Counter(doc for doc, _lead in pairs)
        if len(counts) < 2 and max(counts.values()) < 3:
            continue
        if graph is None or graph.find(pairs[0][1]) is None:
            labels.update(pairs)
    return labels


#: what joins a word: a Latin letter, a digit or an underscore ("gpu_memory_utilization")
_WORD_CHAR = re.compile(r"[0-9a-z_]")
#: what a name may end with and still be itself: a plural ("GPUs"), a version ("Qwen2")
_NAME_TAIL = re.compile(r"(?:e?s|\d[\w.]*)(?![0-9a-z_])")
_SEPARATOR = re.compile(r"[\s\-_.·•/]")


@lru_cache(maxsize=4096)
def _flattened(text: str) -> tuple[str, str, tuple[int, ...]]:
    """`text` folded (NFKC, lower case), then without separators as `normalize_name` drops
    them, and where each character of the latter stands in the former."""
    folded = unicodedata.normalize("NFKC", text).casefold()
    kept = tuple(at for at, char in enumerate(folded) if not _SEPARATOR.match(char))
    return folded, "".join(folded[at] for at in kept), kept


def names_in(name: str, text: str) -> bool:
    """Whether `text` names `name`: its folded form (`normalize_name`) where a word of the text
    begins and ends, not inside a longer word ("TP" is not in "https", "GPU" not in
    "--gpu_memory_utilization"); a plural or a version may follow ("GPUs", "Qwen2"). Chinese
    has no spaces: a Chinese character is a word's edge.

    >>> names_in("TP", "see https://x.y"), names_in("TP", "use TP=8"), names_in("GPU", "8 GPUs")
    (False, True, True)
    >>> names_in("GPU", "--gpu_memory_utilization 0.8"), names_in("Tensor Flow", "TensorFlow 2")
    (False, True)
    >>> names_in("量化", "用量化训练"), names_in("CP", "CPU only"), names_in("vLLM", "vllm.LLM()")
    (True, False, True)

    A name with an underscore is an identifier, written as it is:

    >>> names_in("TARN_WITH_GPU", "Tarn with GPU"), names_in("TARN_WITH_GPU", "set TARN_WITH_GPU=1")
    (False, True)
    >>> names_in("ring_group_size", "pass --ring-group-size 2")
    True
    """
    key = normalize_name(name)
    if not key:
        return False
    folded, flat, kept = _flattened(text)
    if "_" in name.strip("_"):
        # an identifier is written as it is (a flag may dash it): HOROVOD_WITH_PYTORCH is no
        # title "… with PyTorch", ring_group_size is --ring-group-size
        parts = re.split(r"[_-]", unicodedata.normalize("NFKC", name).casefold())
        ident = "[_-]".join(re.escape(part) for part in parts)
        return re.search(rf"(?<![0-9a-z_]){ident}(?![0-9a-z_])", folded) is not None
    found = flat.find(key)
    while found >= 0:
        start, end = kept[found], kept[found + len(key) - 1] + 1
        opens = start == 0 or not (
            _WORD_CHAR.match(folded[start - 1]) and _WORD_CHAR.match(folded[start])
        )
        closes = (
            end == len(folded)
            or not (_WORD_CHAR.match(folded[end - 1]) and _WORD_CHAR.match(folded[end]))
            or _NAME_TAIL.match(folded, end) is not None
        )
        if opens and closes:
            return True
        found = flat.find(key, found + 1)
    return False


def names_unit(
    candidate: Candidate,
    unit: EvidenceUnit,
    quote: str,
    *,
    titles: bool = True,
    subject: bool = True,
) -> bool:
    """Whether a unit names a candidate: as (with `subject`) its subject or a mention (an
    entity), or its name as a word (`names_in`) of `quote` (the unit's verbatim text, as a
    reader sees it), its text, lead-in or (with `titles`) section titles. Without `subject`,
    what the unit's own words name: not the topic of its page or section.

    >>> u = EvidenceUnit(id="d#0-9", doc="d", start=0, end=9, kind=UnitKind.SENTENCE,
    ...     text="Use FSDP.", heading_path=("Sharding",))
    >>> names_unit(Candidate(name="fsdp"), u, "Use FSDP."), names_unit(Candidate(name="TP"), u, "")
    (True, False)
    >>> names_unit(Candidate(name="Sharding"), u, ""), names_unit(
    ...     Candidate(name="Sharding"), u, "", titles=False)
    (True, False)
    >>> about = u.model_copy(update={"subject": "lib:x"})
    >>> x = Candidate(name="X", entity="lib:x")
    >>> names_unit(x, about, ""), names_unit(x, about, "", subject=False)
    (True, False)
    """
    if candidate.entity and candidate.entity in {unit.subject if subject else None, *unit.mentions}:
        return True
    heads = unit.heading_path if titles else ()
    return names_in(candidate.name, " ".join([quote, unit.text, unit.context, *heads]))


def number_evidence(
    candidates: Sequence[Candidate], units: Sequence[EvidenceUnit], documents: dict[str, str]
) -> list[Candidate]:
    """The candidates with the numbers (1..) of the units that name each: in the words a reader
    of each sees, not a link's target ("github" in a commit's address names no GitHub)."""
    quotes = [strip_markup(documents.get(u.doc, "")[u.start : u.end]) for u in units]
    return [
        c.model_copy(
            update={
                "evidence": [
                    i
                    for i, (u, q) in enumerate(zip(units, quotes, strict=True), 1)
                    if names_unit(c, u, q)
                ]
            }
        )
        for c in candidates
    ]
