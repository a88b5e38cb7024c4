"""What every part of the evidence answerer reads: one store's graph and units, indexed by
document, span and subject, and the ways to weigh a unit against a question (its tokens, its
relevance, the order of a pool of units) and to turn it into a cited answer point."""

from __future__ import annotations

import re
import threading
from bisect import bisect_left
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping, Sequence
from functools import cached_property
from itertools import chain, islice
from typing import TypeVar, overload

from ingest.markup import strip_markup
from ingest.text import COLONS
from ingest.units import stem_text, unit_index_text, units_text_norm
from kg import cues
from kg.documents import EvidenceUnit, UnitKind
from kg.graph import KnowledgeGraph
from kg.schema import Evidence, NodeType, Relation, RelationType, normalize_name
from qa import weights as W
from qa.read.frame import QuestionFrame
from qa.read.shapes import answer_hints, asked_relations, text_width
from qa.retrieve.units import STOPWORDS, RankedUnit, UnitSearch
from qa.schema import (
    DraftPoint,
    GraphPath,
    PathEdge,
)

__all__ = ["CHOOSABLE", "SOFTWARE", "UnitIndex", "sole_document"]

_T = TypeVar("_T")

CHOOSABLE = frozenset(
    {
        NodeType.FRAMEWORK,
        NodeType.LIBRARY,
        NodeType.INFERENCE_ENGINE,
        NodeType.TOOL,
        NodeType.TECHNIQUE,
        NodeType.FORMAT,
        NodeType.PARALLEL_STRATEGY,
    }
)


SOFTWARE = frozenset(
    {NodeType.FRAMEWORK, NodeType.LIBRARY, NodeType.INFERENCE_ENGINE, NodeType.TOOL}
)


_DEFINES = re.compile(
    # after the name: a version ("Keras 3 is a …"), a parenthesis, then the defining verb
    r"\s*(?:v?\d+(?:\.\d+)*\s+)?(?:[（(][^）)]*[）)])?\s*" + cues.alternatives("document.defines"),
    re.I,
)


#: a sentence that opens by pointing back at the one before it (`UnitIndex.point`)
_POINTS_BACK = re.compile(rf"^\W*{cues.alternatives('document.points_back')}", re.I)
#: the longest sentence a point brings beside its own (`UnitIndex.point`)
_WINDOW_CHARS = 200
#: what may lie between two sentences of one paragraph: space, a line break, a little markup
_PARAGRAPH_GAP = 12
_BLANK_LINE = re.compile(r"\n[ \t]*\n")


def _space(following: str) -> str:
    """What joins a sentence to the text before it: nothing before Chinese, else a space.

    >>> _space("它支持…"), _space("It runs.")
    ('', ' ')
    """
    return "" if re.match(r"[\u4e00-\u9fff]", following) else " "


class _EdgesAt(Mapping[tuple[str, int], list[PathEdge]]):
    """The graph's edges by where their evidence starts, (document, start) -> one-edge path
    edges citing that evidence: the evidence is indexed when the store opens, the edges are
    made when first asked for (a large corpus has tens of thousands)."""

    def __init__(self, graph: KnowledgeGraph) -> None:
        self._made: dict[tuple[str, int], list[PathEdge]] = {}
        self._starts: dict[str, list[int]] | None = None  # made when first asked for
        self._lock = threading.Lock()
        raw: dict[tuple[str, int], list[tuple[Relation, Evidence]]] = defaultdict(list)
        for rel in graph.relations():
            for ev in rel.evidence:
                raw[(ev.doc, ev.start)].append((rel, ev))
        self._raw = dict(raw)

    def __getitem__(self, key: tuple[str, int]) -> list[PathEdge]:
        made = self._made.get(key)
        if made is None:
            raw = self._raw[key]  # KeyError for a place no evidence starts at
            made = [
                PathEdge(source=rel.source, relation=rel.relation, target=rel.target, evidence=[ev])
                for rel, ev in raw
            ]
            with self._lock:  # two threads may make them: the first one's stay
                made = self._made.setdefault(key, made)
        return made

    @overload
    def get(self, key: tuple[str, int], /) -> list[PathEdge] | None: ...
    @overload
    def get(self, key: tuple[str, int], /, default: list[PathEdge] | _T) -> list[PathEdge] | _T: ...
    def get(self, key: tuple[str, int], /, default: object = None) -> object:
        """The edges at `key`, else `default`, without raising and catching a KeyError (most
        units are the evidence of no edge, and answering asks of thousands of them)."""
        return self[key] if key in self._raw else default

    def within(self, doc: str, start: int, end: int) -> list[PathEdge]:
        """The edges whose evidence lies in `doc[start:end]` (a table row's cells), in order."""
        if self._starts is None:
            by_doc: dict[str, list[int]] = defaultdict(list)
            for d, at in self._raw:
                by_doc[d].append(at)
            self._starts = {d: sorted(v) for d, v in by_doc.items()}
        starts = self._starts.get(doc, [])
        out: list[PathEdge] = []
        for at in starts[bisect_left(starts, start) : bisect_left(starts, end)]:
            out += [e for e in self[(doc, at)] if e.evidence[0].end <= end]
        return out

    def __iter__(self) -> Iterator[tuple[str, int]]:
        return iter(self._raw)

    def __len__(self) -> int:
        return len(self._raw)


def sole_document(name: str, folded: Mapping[str, str]) -> str | None:
    """The one document of `folded` (case-folded texts by document) that names `name` as a
    whole word (case ignored), or None where none or several do: a name no other document
    uses is that document's own (its project, its option, its model), and a question that
    names it asks about that document.

    >>> docs = {"a.md": "run tgi-server.", "b.md": "tgi serves. stgi.", "c.md": "tgi"}
    >>> sole_document("tgi-server", docs), sole_document("TGI", docs)
    ('a.md', None)
    >>> sole_document("Stgi", docs), sole_document("gi", docs), sole_document(" ", docs)
    ('b.md', None, None)
    """
    word = name.casefold().strip()
    if not word:
        return None
    naming = None
    for doc, text in folded.items():
        if _names_word(text, word):
            if naming is not None:
                return None
            naming = doc
    return naming


def _names_word(text: str, word: str) -> bool:
    """Whether `text` holds `word` not inside a longer word (Latin letters, digits, `_`, `-`
    around it make it part of one; Chinese text writes Latin names with no space around them).
    A substring search first: most documents lack the word.

    >>> _names_word("use tgi.", "tgi"), _names_word("stgi tgi-x", "tgi"), _names_word("x", "")
    (True, False, False)
    >>> _names_word("首先安装tgi服务", "tgi"), _names_word("量化训练", "训练")
    (True, True)
    """
    at = text.find(word) if word else -1
    while at >= 0:
        before = text[at - 1] if at else " "
        end = at + len(word)
        after = text[end] if end < len(text) else " "
        if not (_word_char(before) or _word_char(after)):
            return True
        at = text.find(word, at + 1)
    return False


def _word_char(char: str) -> bool:
    """A character that joins a Latin word: an ASCII letter or digit, `_` or `-`."""
    return (char.isascii() and char.isalnum()) or char in "_-"


class UnitIndex:
    """Read-only over one store's graph and units; safe to share across threads."""

    def __init__(
        self, graph: KnowledgeGraph, search: UnitSearch, documents: dict[str, str]
    ) -> None:
        self.graph = graph
        self._lexicon_surfaces = {e.id: e.surfaces for e in search.lexicon.entries.values()}
        self.search = search
        self.documents = documents
        self._edges = _EdgesAt(graph)
        self._doc_subject: dict[str, str] = {}
        subjects: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
        for unit in search.units:
            if unit.subject:
                subjects[unit.doc][unit.subject] += 1
        for doc, counts in subjects.items():
            self._doc_subject[doc] = max(counts.items(), key=lambda kv: (kv[1], kv[0]))[0]
        self._tokens: dict[str, frozenset[str]] = {}
        self._widths: dict[str, int] = {}
        self._parents: dict[str, str | None] = {}
        self._texts: dict[str, frozenset[str]] = {}
        self._unit_at = {(u.doc, u.start): u for u in search.units}
        self._naming: dict[str, str | None] = {}
        self._doc_units: dict[str, list[EvidenceUnit]] = defaultdict(list)
        self._unit_index: dict[str, int] = {}
        for unit in search.units:
            self._unit_index[unit.id] = len(self._doc_units[unit.doc])
            self._doc_units[unit.doc].append(unit)

    @cached_property
    def _corpus_norm(self) -> str:
        """Every unit's text and table header, normalised as one string (`units_text_norm`):
        as the store keeps it, else made on first use (~0.1 s on a large corpus)."""
        if self.search.text_norm is not None:
            return self.search.text_norm
        return units_text_norm(self.search.units)

    def _unit_tokens(self, unit: EvidenceUnit) -> frozenset[str]:
        tokens = self._tokens.get(unit.id)
        if tokens is None:
            # a store's unit: the tokens its index holds (tokenizing it again cost ~5 ms a
            # question on a large corpus); any other: tokenized here
            if self.search.by_id.get(unit.id) is unit:
                tokens = self.search.lexical.terms_of(unit.id)
            if tokens is None:
                tokens = frozenset(self.search.tokenize(unit_index_text(unit)))
            self._tokens[unit.id] = tokens
        return tokens

    def _text_tokens(self, text: str) -> frozenset[str]:
        """A short text's index tokens (a section title, a row's label), remembered: a large
        corpus repeats its titles and labels."""
        tokens = self._texts.get(text)
        if tokens is None:
            tokens = frozenset(self.search.tokenize(stem_text(text)))
            self._texts[text] = tokens
        return tokens

    def _question_terms(
        self, frame: QuestionFrame, exclude: Iterable[str] = ()
    ) -> dict[str, float]:
        excluded = {t for name in exclude for t in self.search.tokenize(stem_text(name))}
        terms: dict[str, float] = {}
        for token in self.search.tokenize(stem_text(frame.text)):
            if token in STOPWORDS or token in excluded or (len(token) < 2 and token.isascii()):
                continue
            idf = self.search.lexical.idf(token)
            if idf > 0:
                terms[token] = idf
        return terms

    def _parent(self, entity: str) -> str | None:
        # remembered: a hub (PyTorch) has hundreds of relations, and candidates ask often
        if entity in self._parents:
            return self._parents[entity]
        parent = next(
            (
                r.target
                for r in self.graph.out_relations(entity)
                if r.relation == RelationType.PART_OF
            ),
            None,
        )
        self._parents[entity] = parent
        return parent

    def names_of(self, eid: str) -> list[str]:
        """An entity's names: the graph's, then the lexicon's other surfaces (自动微分 for
        Automatic Differentiation)."""
        names = [self.graph.entity(eid).name, *self.graph.entity(eid).aliases]
        folded = {n.casefold() for n in names}
        return names + [
            n for n in self._lexicon_surfaces.get(eid, []) if n.casefold() not in folded
        ]

    def named_at(self, text: str, eid: str) -> tuple[int, str]:
        """Where a text first names an entity (any of its names, any case), for sorting: the
        things a question names in its order, the ones it does not name last."""
        entity = self.graph.entity(eid)
        lowered = text.casefold()
        found = [lowered.find(n.casefold()) for n in [entity.name, *entity.aliases] if n]
        return (min((at for at in found if at >= 0), default=len(text)), eid)

    def documents_about(self, entity: str) -> list[str]:
        """The documents whose subject is `entity` (its README, its docs pages), in id order."""
        return sorted(doc for doc, subject in self._doc_subject.items() if subject == entity)

    @cached_property
    def _folded_documents(self) -> dict[str, str]:
        """Each document's text, case-folded (made on first use)."""
        return {doc: text.casefold() for doc, text in self.documents.items()}

    def document_naming(self, name: str) -> str | None:
        """The one document that names `name` (`sole_document`), or None; remembered per
        name (questions repeat their names)."""
        key = name.casefold()
        if key not in self._naming:
            self._naming[key] = sole_document(key, self._folded_documents)
        return self._naming[key]

    def says(self, words: str) -> bool:
        """Whether some unit's text says `words` (normalised: case, spaces and dashes aside),
        two characters or more of them."""
        key = normalize_name(words)
        return len(key) > 1 and key in self._corpus_norm

    def _main_subject(self, frame: QuestionFrame, named: set[str]) -> str | None:
        """What a question is about: the first thing it names that one uses (a tool over a
        technique: "Foo 的 LoRA 训练" is about Foo)."""
        ordered = sorted(named, key=lambda e: self.named_at(frame.text, e))
        for kinds in (SOFTWARE, CHOOSABLE | {NodeType.MODEL}):
            for eid in ordered:
                if self.graph.entity(eid).type in kinds:
                    return eid
        return None

    def path_points(self, path: GraphPath) -> list[DraftPoint]:
        """Each edge of a path as a point: the unit its evidence lies in, citing the edge."""
        points: list[DraftPoint] = []
        for edge in path.edges:
            if not edge.evidence:
                continue
            ev = edge.evidence[0]
            unit = self._unit_at.get((ev.doc, ev.start)) or next(
                (u for u in self._doc_units.get(ev.doc, []) if u.start <= ev.start < u.end), None
            )
            cited = edge.model_copy(update={"evidence": [ev]})
            if unit is not None and unit.start <= ev.start and ev.end <= unit.end:
                point = self.point(unit)
                point.edges = [cited, *[e for e in point.edges if e != cited][:1]]
            else:
                point = DraftPoint(
                    doc=ev.doc,
                    start=ev.start,
                    end=ev.end,
                    quote=ev.quote,
                    text=strip_markup(ev.quote),
                    heading=ev.heading_path[-1] if ev.heading_path else "",
                    edges=[cited],
                )
            same = next((p for p in points if (p.doc, p.start) == (point.doc, point.start)), None)
            if same is None:
                points.append(point)
            elif cited not in same.edges:
                # the next hop of the path, said by the same unit: one point, the path in order
                before = [i for i, e in enumerate(same.edges) if e.target == cited.source]
                same.edges.insert(before[0] + 1 if before else len(same.edges), cited)
        return points

    def point(self, unit: EvidenceUnit, prefer: str | None = None) -> DraftPoint:
        """A unit as an answer point with the edges it is evidence of (the subject's first). A
        sentence that ends in ":" brings what it introduces ("run the command: `opt_in_out
        --opt_out`"; "环境要求:" its short list, every item), a question its answer, any other
        sentence the next one of its paragraph (and one that points back the one before it), as
        one verbatim span; the unit's own edges come first, then those of what it brings."""
        edges = self._own_edges(unit)
        if not edges and unit.kind == UnitKind.ROW:
            # a row's edges cite its cells ("QLoRA | 7.4 GiB": QLoRA's peak memory)
            edges = self._edges.within(unit.doc, unit.start, unit.end)

        def preferred(found: list[PathEdge]) -> list[PathEdge]:
            return sorted(
                found, key=lambda e: (e.source != prefer and e.target != prefer, str(e.relation))
            )

        ordered = preferred(edges)
        end, text = unit.end, unit.text
        following = self._next_unit(unit)
        introduces = (
            unit.text.endswith(COLONS)
            and following is not None
            and following.context == unit.text
            and following.start - unit.end < 200
        )
        # a question in the source ("怎么判断…？") comes with the sentence that answers it
        asks = (
            unit.kind == UnitKind.SENTENCE
            and unit.text.endswith(("?", "？"))
            and following is not None
            and following.kind == UnitKind.SENTENCE
            and following.start - unit.end < 4
        )
        start = unit.start
        if following is not None and (introduces or asks) and len(following.text) <= _WINDOW_CHARS:
            space = _space(following.text)
            end, text = following.end, f"{unit.text}{space}{following.text}"
            items = [following]
            while introduces and len(items) < 8:
                after = self._next_unit(items[-1])
                if (
                    after is None
                    or after.kind != UnitKind.ITEM
                    or after.context != unit.text
                    or after.start - items[-1].end > 200
                    or sum(len(i.text) for i in items) + len(after.text) > 400
                ):
                    break
                items.append(after)
            if len(items) > 1:
                end = items[-1].end
                text = f"{unit.text}{space}{'; '.join(i.text for i in items)}"
        elif unit.kind == UnitKind.SENTENCE:
            # a sentence reads with its paragraph's next one (what it goes on to say: a
            # reason, a condition, a contrast; not one that introduces what follows it), and
            # one that points back ("This allows it to …", "该方法…") with the one before it,
            # which it does not read without: a point the one before would also make (each
            # within the width a window brings), so the two are one point where both are shown
            before = self._previous_unit(unit)
            if (
                before is not None
                and _POINTS_BACK.match(unit.text)
                and self._same_paragraph(before, unit)
                and max(len(before.text), len(unit.text)) <= _WINDOW_CHARS
            ):
                start, text = before.start, f"{before.text}{_space(text)}{text}"
                ordered += preferred(self._own_edges(before))
            if (
                following is not None
                and self._same_paragraph(unit, following)
                and len(following.text) <= _WINDOW_CHARS
                and not following.text.endswith(COLONS)
            ):
                end, text = following.end, f"{text}{_space(following.text)}{following.text}"
                ordered += preferred(self._own_edges(following))
        return DraftPoint(
            doc=unit.doc,
            start=start,
            end=end,
            quote=self.documents[unit.doc][start:end],
            text=text,
            context=" | ".join(unit.header) if unit.kind == UnitKind.ROW else unit.context,
            heading=unit.heading_path[-1] if unit.heading_path else "",
            edges=ordered[:2],
            code=unit.kind == UnitKind.CODE,
        )

    def row_group(
        self, row: EvidenceUnit, terms: dict[str, float], prefer: str | None = None, limit: int = 3
    ) -> DraftPoint:
        """A table row with up to two more rows of the same table that the question also
        matches ("CTranslate2 3.6.0 | 658.8 | 849MB" beside "OpenNMT-py | 275.8 | 2012MB"): one
        point, its span running from the first row to the last."""
        siblings = [
            u
            for u in self._doc_units.get(row.doc, [])
            if u.kind == UnitKind.ROW
            and u.header == row.header
            and abs(u.start - row.start) < W.ROW_WINDOW
        ]

        own_names = (
            [normalize_name(n) for n in self.names_of(prefer)]
            if prefer and prefer in self.graph
            else []
        )

        def said(u: EvidenceUnit) -> float:
            # its own label counts twice: "OpenNMT-py 3.0.4" beside CTranslate2's row when the
            # question names both, before the rows that share their group's label
            label = self._text_tokens(u.cells[0]) if u.cells else frozenset()
            tokens = self._unit_tokens(u)
            score = sum(w * (1 + (t in label)) for t, w in terms.items() if t in tokens)
            # the row of the thing recommended comes first: the benchmark's "CTranslate2 3.6.0"
            # row beside the frameworks the question compares it with (before its variants)
            if prefer and u.subject == prefer:
                head = normalize_name(u.cells[0]) if u.cells else ""
                named = any(n and n in head for n in own_names)
                if named:
                    score += sum(terms.values()) * W.OWN_ROW_BONUS
            return score

        scored = sorted(
            ((said(u), -abs(u.start - row.start), u) for u in siblings if u.id != row.id),
            key=lambda t: (-t[0], -t[1]),
        )
        rows = [row, *[u for score, _d, u in scored if score > 0][: limit - 1]]
        if len(rows) == 1:
            return self.point(row, prefer)
        rows.sort(key=lambda u: u.start)
        point = self.point(row, prefer)
        # the edges the other rows are evidence of too, when the chosen row's are not of
        # `prefer` (a feature matrix's rows: Xinference's CPU support beside its clustering)
        edges = list(point.edges)
        if prefer is not None and not any(prefer in (e.source, e.target) for e in edges):
            others = [e for u in rows if u.id != row.id for e in self.point(u, prefer).edges]
            edges = [e for e in others if prefer in (e.source, e.target)][:1] + edges
        start, end = rows[0].start, rows[-1].end
        return point.model_copy(
            update={
                "start": start,
                "end": end,
                "quote": self.documents[row.doc][start:end],
                "text": "; ".join(u.text for u in rows),
                "edges": edges[:2],
            }
        )

    def with_paragraph(self, unit: EvidenceUnit, prefer: str | None = None) -> DraftPoint:
        """A short sentence as a point with the sentences after it in its paragraph, up to about
        two hundred characters: "LocalAI is the open-source AI engine." says little alone; "…
        Run any model … on any hardware. No GPU required." is what it is."""
        point = self.point(unit, prefer)
        if unit.kind != UnitKind.SENTENCE or text_width(unit.text) >= 60:
            return point
        text = self.documents[unit.doc]
        last, shown = unit, [unit.text]
        while sum(len(t) for t in shown) < 200:
            after = self._next_unit(last)
            if (
                after is None
                or after.kind != UnitKind.SENTENCE
                or after.start - last.end > 3
                or "\n\n" in text[last.end : after.start]
                or sum(len(t) for t in shown) + len(after.text) > 240
            ):
                break
            last = after
            shown.append(after.text)
        if last is unit:
            return point
        space = "" if re.match(r"[\u4e00-\u9fff]", last.text) else " "
        return point.model_copy(
            update={
                "end": last.end,
                "quote": text[unit.start : last.end],
                "text": space.join(shown),
            }
        )

    def _own_edges(self, unit: EvidenceUnit) -> list[PathEdge]:
        """The edges a unit is evidence of, those citing the whole unit where there are any."""
        edges = self._edges.get((unit.doc, unit.start), [])
        return [e for e in edges if e.evidence[0].end == unit.end] or edges

    def section_window(self, unit: EvidenceUnit, width: int = 2) -> list[EvidenceUnit]:
        """The units around `unit` in its document, at most `width` either side, that lie in
        its section (the same heading path) and say something (no headings), nearest first,
        the one after before the one before; first of all the section's note, where a quote
        block opens the section ("> Deprecated since 2.0", "> **Note**: …"): what it
        says holds for every unit under it, however far."""
        units = self._doc_units.get(unit.doc, [])
        index = self._unit_index.get(unit.id)
        if index is None:
            return []
        found: list[EvidenceUnit] = []
        for step in range(1, width + 1):
            for at in (index + step, index - step):
                if 0 <= at < len(units):
                    other = units[at]
                    if other.heading_path == unit.heading_path and other.kind != UnitKind.HEADING:
                        found.append(other)
        note = self._section_note(units, index)
        if note is not None and note is not unit:
            found = [note, *(u for u in found if u is not note)]
        return found

    def _section_note(self, units: list[EvidenceUnit], index: int) -> EvidenceUnit | None:
        """The note that opens the section of `units[index]`: its first unit that says
        something, where that lies in a quote block (its line starts with ">")."""
        path = units[index].heading_path
        first = index
        while first > 0 and units[first - 1].heading_path == path:
            first -= 1
        head = next((u for u in units[first : index + 1] if u.kind != UnitKind.HEADING), None)
        if head is None:
            return None
        text = self.documents.get(head.doc, "")
        line = text[text.rfind("\n", 0, head.start) + 1 : head.start]
        return head if line.lstrip().startswith(">") else None

    def _next_unit(self, unit: EvidenceUnit) -> EvidenceUnit | None:
        units = self._doc_units.get(unit.doc, [])
        index = self._unit_index.get(unit.id)
        return units[index + 1] if index is not None and index + 1 < len(units) else None

    def _previous_unit(self, unit: EvidenceUnit) -> EvidenceUnit | None:
        units = self._doc_units.get(unit.doc, [])
        index = self._unit_index.get(unit.id)
        return units[index - 1] if index else None

    def _same_paragraph(self, first: EvidenceUnit, second: EvidenceUnit) -> bool:
        """Whether two units are sentences of one paragraph, `first` just before `second`: one
        section and lead-in, nothing but a little space or markup between them (no blank
        line, no block)."""
        if first.doc != second.doc or not first.kind == second.kind == UnitKind.SENTENCE:
            return False
        if (first.heading_path, first.context) != (second.heading_path, second.context):
            return False
        gap = self.documents[first.doc][first.end : second.start]
        return 0 <= len(gap) <= _PARAGRAPH_GAP and not _BLANK_LINE.search(gap)

    def definition(self, entity: str) -> EvidenceUnit | None:
        """The unit that says what an entity is: it starts with the entity's name and defines it
        ("X is a …", "X lets you …", "X 是一个 …")."""
        node = self.graph.entity(entity)
        names = sorted(
            {n for n in [node.name, *node.aliases] if len(n) >= 2}, key=len, reverse=True
        )
        for unit in self.search.by_subject.get(entity, [])[: W.DEFINITION_UNITS]:
            if unit.kind not in (UnitKind.SENTENCE, UnitKind.ITEM, UnitKind.HEADING):
                continue
            head = unit.text.lstrip("*`_ ")
            for name in names:
                if head.lower().startswith(name.lower()) and _DEFINES.match(head[len(name) :]):
                    return unit
        return None

    def with_own_units(self, ranked: list[RankedUnit], entities: list[str]) -> list[RankedUnit]:
        """`ranked` and after it the entities' own units that retrieval left out (not code), at
        half the lowest retrieved score: they compete on relevance to the question alone."""
        seen = {r.unit.id for r in ranked}
        floor = min((r.score for r in ranked), default=1.0) * W.OWN_UNITS_SHARE
        extra = []
        for eid in entities:
            # its units, and the units of its own documents that name it under another
            # subject ("MindSpore则采用的是代码变换法" in the section on automatic differentiation)
            named = islice(
                (
                    u
                    for u in self.search.by_mention.get(eid, [])
                    if u.subject != eid and self._doc_subject.get(u.doc) == eid
                ),
                W.OWN_NAMING_UNITS,
            )
            for u in chain(self.search.by_subject.get(eid, [])[: W.OWN_UNITS], named):
                if u.id not in seen and u.kind != UnitKind.CODE:
                    seen.add(u.id)
                    extra.append(RankedUnit(u, floor, 0.0, 0.0, False))
        return [*ranked, *extra]

    def _touches(self, unit: EvidenceUnit, eid: str) -> bool:
        """Whether a unit is the evidence of an edge that has `eid` at an end."""
        return any(eid in (e.source, e.target) for e in self._edges.get((unit.doc, unit.start), []))

    def relevance(
        self,
        unit: EvidenceUnit,
        weights: dict[str, float],
        hints: Sequence[re.Pattern[str]],
        states_asked: bool = False,
    ) -> float:
        """How much a unit says of what the question asks: its weighted share of the question's
        terms (rare terms weigh more), a fragment less (unless it `states_asked`:
        "[Apache License 2.0](LICENSE)" is the answer to "which licence?"), the more of the
        asked kinds of value it states the more ("2× faster with 70% less VRAM")."""
        return self._relevance(unit, self._weighed_terms(weights), hints, states_asked)

    def _weighed_terms(self, weights: dict[str, float]) -> dict[str, tuple[int, float]]:
        """Each query token's place in the weights (the order `relevance` adds them up in) and
        its weight times its rarity.

        {"vllm": 1.0, "gpu": 0.5} -> {"vllm": (0, 1.0 * idf("vllm")), "gpu": (1, 0.5 * idf("gpu"))}
        """
        idf = self.search.lexical.idf
        return {t: (at, w * idf(t)) for at, (t, w) in enumerate(weights.items())}

    def _relevance(
        self,
        unit: EvidenceUnit,
        terms: dict[str, tuple[int, float]],
        hints: Sequence[re.Pattern[str]],
        states_asked: bool,
    ) -> float:
        """`relevance` with the question's terms weighed (`_weighed_terms`) once for a pool."""
        # the terms the unit has, added up in the weights' order: the same sum, to the bit, as
        # going through every term (a unit has few of them)
        tokens = self._unit_tokens(unit)
        found = sorted(terms[t] for t in tokens.intersection(terms))
        score = sum(weighed for _at, weighed in found)
        if unit.heading_path and unit.kind != UnitKind.HEADING:
            # a sentence under "### 自动微分" speaks of automatic differentiation: its section's
            # words count, at half weight (a title's words are every unit's under it)
            title = self._text_tokens(unit.heading_path[-1]).intersection(terms) - tokens
            score += W.TITLE_WEIGHT * sum(
                weighed for _at, weighed in sorted(terms[t] for t in title)
            )
        fragment = unit.kind not in (UnitKind.HEADING, UnitKind.ROW) and not states_asked
        if fragment and self._width(unit) < W.FRAGMENT_WIDTH:
            score *= W.FRAGMENT_WEIGHT
        if hints:  # no hint multiplies by 1
            said = " ".join([unit.text, *unit.header])
            score *= 1 + W.HINT_GAIN * sum(1 for hint in hints if hint.search(said))
        return score

    def _width(self, unit: EvidenceUnit) -> int:
        """`text_width` of a unit's text, remembered."""
        width = self._widths.get(unit.id)
        if width is None:
            width = self._widths[unit.id] = text_width(unit.text)
        return width

    def ordered(
        self,
        frame: QuestionFrame,
        units: Iterable[RankedUnit],
        exclude: Iterable[str] = (),
        about: Iterable[str] = (),
        names: Iterable[str] = (),
    ) -> list[tuple[float, EvidenceUnit]]:
        """Units by retrieval score and relevance to the question together, best first. A unit
        that is the evidence of an edge the question asks about (`about`'s licence when it asks
        for a licence, its hardware when it asks what it runs on) counts more. `names` (of the
        things the question names) reach documents in another language; `exclude`'s words do
        not count."""
        items = list(units)
        if not items:
            return []
        weights = self.search.query_weights(frame.text, names)
        excluded = {t for name in exclude for t in self.search.tokenize(stem_text(name))}
        weights = {t: w for t, w in weights.items() if t not in excluded}
        hints = answer_hints(frame.text)
        asked = asked_relations(frame.text)
        sources = set(about)
        terms = self._weighed_terms(weights)
        rel = {}
        for r in items:
            states = bool(asked) and any(
                e.relation in asked and (not sources or e.source in sources)
                for e in self._edges.get((r.unit.doc, r.unit.start), [])
            )
            value = self._relevance(r.unit, terms, hints, states)
            rel[r.unit.id] = value * W.STATES_ASKED_GAIN if states else value
        top_rel = max(rel.values()) or 1.0
        top_score = items[0].score or 1.0
        scored = [
            (
                W.RETRIEVAL_SHARE * r.score / top_score
                + W.RELEVANCE_SHARE * rel[r.unit.id] / top_rel,
                r.unit,
            )
            for r in items
        ]
        scored.sort(key=lambda t: (-t[0], t[1].id))
        return scored
