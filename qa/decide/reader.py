"""The reader: the local LLM reads the evidence and decides; the graph proposes and verifies.

`Reader.read(reading)` sends one grammar-constrained chat (`qa.decide.prompts`) through the
OpenAI-compatible seam and returns a `Verdict`: the evidence numbers the model found, its pick
among the enumerated candidates (or none) and one sentence. The grammar makes the choice one the
model cannot escape: it can name no evidence and no candidate it was not shown. `Reader.stream`
yields the sentence as it arrives, then the verdict. `draft_from_verdict` turns a verdict into
an `AnswerDraft` (the pick with the evidence behind it, the cited evidence first among the
facts, the sentence as prose), which the verifier prunes and the renderer writes like any
other; nothing unverified reaches the user. An unusable answer raises `LLMBadResponse`.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import BaseModel, Field

from ingest.markup import strip_markup
from ingest.text import COLONS
from kg.documents import EvidenceUnit, UnitKind
from kg.errors import LLMBadResponse
from kg.schema import normalize_name
from qa.decide.candidates import Candidate, names_in, names_unit
from qa.decide.prompts import (
    MODES,
    NONE,
    line_names_messages,
    reader_messages,
    reader_mode,
    reader_schema,
)
from qa.decide.reading import Reading
from qa.read.shapes import names_setting
from qa.schema import AnswerDraft, DraftPoint, DraftRecommendation

if TYPE_CHECKING:
    from qa.llm.offline import StructuredChat

__all__ = ["PointMaker", "Reader", "ReaderModel", "Verdict", "draft_from_verdict"]

#: a unit as an answer point, with the edges of `prefer` (an entity id) first
PointMaker = Callable[[EvidenceUnit, str | None], DraftPoint]


class Verdict(BaseModel):
    """What the reader decided for one reading."""

    evidence: list[int] = Field(description="the numbers ([1]..) of the evidence it used")
    pick: Candidate | None = None
    sentence: str = ""
    model: str = ""
    prompt_tokens: int | None = Field(default=None, description="as the server counted them")
    completion_tokens: int | None = None
    seconds: float | None = Field(default=None, description="the request, start to end")
    unsure: bool = Field(
        default=False,
        description="the reading did not settle the pick: it moved with the candidates' order, "
        "or the line read as the answer names no candidate (the graph's pick stands in)",
    )


class ReaderModel(Protocol):
    """The seam a reader implements (`Reader` is the real one; tests script others).

    It may fail (raise `kg.errors.LLMError`): the graph's answer then stands, with a `Fallback`.
    """

    name: str

    def stream(self, reading: Reading) -> Iterator[str | Verdict]:
        """The sentence as it streams (if any), then the verdict; raise `LLMError`."""
        ...


class Reader:
    """Reads `Reading`s through a chat model (vLLM, a llama.cpp server, vLLM offline).

    `mode` (`qa.decide.prompts.MODES`): `line` (the default), the one line that answers, then
    (a second turn on the same prompt) the name that line gives (`_read_line`); `pick`, the
    name alone among all the candidates (the fewest tokens to decode: on a CPU each costs
    ~50 ms); `cited`, the evidence numbers first, then the name; `full`, those and a sentence,
    which streams. `line` was measured against `pick` with the embedded 0.5B model on fresh
    stores of the three public sets (`kgqa eval`, README): accuracy 38.2% against 34.2%
    (real-articles), 85.9% against 84.9% (real-docs), 83.2% against 82.3% (dev), with a lower
    reader p50 (3.4 s against 5.3 s on real-articles, the same day). `consistency` (a pick's):
    the pick is asked in two orders of the candidates, and one that moves with the order is no
    decision (`read`): measured with the 0.5B model on the gold picks of the three public sets,
    29 of real-docs' 52 against 20 asked once, 8 of real-articles' 35 against 8, 32 of dev's 59
    against about 27.
    """

    def __init__(
        self,
        chat: StructuredChat,
        *,
        mode: str = "line",
        max_tokens: int = 96,
        consistency: bool = True,
    ) -> None:
        if mode not in MODES:
            raise ValueError(f"unknown reader mode {mode!r}: one of {MODES}")
        self.chat = chat
        self.mode = mode
        self.max_tokens = max_tokens
        self.consistency = consistency
        self.name = chat.settings.model

    def _request(self, reading: Reading) -> tuple[str, list[dict[str, str]], dict[str, Any]]:
        mode = reader_mode(reading, self.mode)
        return mode, reader_messages(reading, mode), reader_schema(reading, mode)

    def read(self, reading: Reading) -> Verdict:
        """The reader's verdict (raises `LLMError` when unusable). With `consistency`, a pick is
        asked twice, the candidates listed in two orders (the second shares the first's
        evidence, which a server keeps cached): a pick that holds in both orders stands; one
        that moves with the order is no decision, and the graph's own pick (★) stands in. The
        line reader reads in its own two turns (`_read_line`)."""
        if self.mode == "line":
            return self._read_line(reading)
        first = self._read_once(reading)
        if not self.consistency or not reading.candidates or self.mode != "pick":
            return first
        turned = reading.model_copy(update={"candidates": reading.candidates[::-1]})
        second = self._read_once(turned)
        # the verdict's cost is both requests'
        both = {
            field: _total(getattr(first, field), getattr(second, field))
            for field in ("prompt_tokens", "completion_tokens", "seconds")
        }
        if first.pick == second.pick:
            return first.model_copy(update=both)
        proposed = next((c for c in reading.candidates if c.proposed), None)
        return first.model_copy(update={**both, "pick": proposed or first.pick, "unsure": True})

    def _read_line(self, reading: Reading) -> Verdict:
        """The line reader: which numbered line answers the question, one of the first
        `LINE_CHOICES` retrieval ranks (all are shown, the candidates are not; of a question that
        asks how much, one that states a figure where one does, and likewise a setting of one that
        asks which setting: `line_choices`), then which of the names that line's text gives is the
        answer (of one that asks which setting, the settings it names, where it names any), asked as
        a second turn of the same chat (its prompt extends the first's, which a server keeps
        cached). A line that gives one name has its answer without the second turn, and so has a
        line that names the graph's first pick (★) among others: the line the reader found and the
        graph's verified paths agree on it (a line such as "要吞吐（GPU）：用 Kestrel" names a
        condition too, which a small model takes for the answer when asked), unless the line
        describes another thing (its row's or item's name: `_described_by`) or opens with
        another name (`_opener`), which is asked first. A line whose text names nothing gives
        the question's alternatives its section titles are (a line under "Foo" answers "Foo or
        Bar?"), else leaves the pick to the graph's (★), marked `unsure`, or, where the graph
        picked nothing, to the section titles it is under (`_named_in_line`)."""
        proposed = next((c for c in reading.candidates if c.proposed), None)
        if not reading.evidence:  # no line to read: nothing to ask
            return Verdict(evidence=[], pick=proposed, model=self.name, unsure=True)
        messages = reader_messages(reading, "line")
        started = time.perf_counter()
        first = self.chat.chat(
            messages, schema=reader_schema(reading, "line"), max_tokens=self.max_tokens
        )
        line = first.parse_json()
        if not isinstance(line, int) or not 0 < line <= len(reading.evidence):
            raise LLMBadResponse(f"the reader's answer is no line of the evidence: {line!r}")
        requests = [first]
        said, under = _named_in_line(reading, line) if reading.choose else ([], [])
        if reading.setting:
            # a question that asks which flag or variable is answered by a setting the line
            # writes down, where it writes one, not by the tool or hardware it names
            said = [c for c in said if names_setting(c.name)] or said
        # a line that names nothing is answered by what it is under: of the alternatives the
        # question names, those its section titles are ("LATENCY" over a line on single-image
        # jobs), else all it is under where the graph picked nothing
        titled = [c for c in under if normalize_name(c.name) in reading.options]
        named = said or titled or ([] if proposed else under)
        # the line names the graph's first pick among others: the reader's evidence and the
        # graph's verified paths agree on it, and it stands without a second turn; where the
        # line's words name others, it must be among them (not the line's topic alone)
        unit = reading.evidence[line - 1]
        words = [c for c in said if _in_words(c, unit)]
        # (not where the line is about another thing, which it may compare with the pick)
        own = _own(said, unit)
        agreed = (
            proposed
            if proposed is not None and proposed in (words or said) and proposed in (own or said)
            else None
        )
        pick: Candidate | None = named[0] if len(named) == 1 else agreed
        if pick is None and len(named) > 1:
            second = self.chat.chat(
                line_names_messages(reading, line, named),
                schema={"type": "string", "enum": list(dict.fromkeys(c.name for c in named))},
                max_tokens=self.max_tokens,
            )
            requests.append(second)
            pick = self.verdict(reading, {"pick": second.parse_json()}).pick
        unsure = bool(reading.choose and reading.candidates and pick is None)
        return Verdict(
            evidence=[line],
            pick=proposed if unsure else pick,
            model=self.name,
            prompt_tokens=_sum(r.prompt_tokens for r in requests),
            completion_tokens=_sum(r.completion_tokens for r in requests),
            seconds=round(time.perf_counter() - started, 3),
            unsure=unsure,
        )

    def _read_once(self, reading: Reading) -> Verdict:
        """One constrained completion as a verdict."""
        mode, messages, schema = self._request(reading)
        started = time.perf_counter()
        result = self.chat.chat(messages, schema=schema, max_tokens=self.max_tokens)
        verdict = self.verdict(reading, _as_object(mode, result.parse_json()))
        return verdict.model_copy(
            update={
                "prompt_tokens": result.prompt_tokens,
                "completion_tokens": result.completion_tokens,
                "seconds": round(time.perf_counter() - started, 3),
            }
        )

    def stream(self, reading: Reading) -> Iterator[str | Verdict]:
        """The sentence as it streams (a `full` reader), then the verdict; a reader asked for
        less than a sentence has nothing to stream: its verdict comes at once."""
        mode, messages, schema = self._request(reading)
        if mode != "full":
            yield self.read(reading)
            return
        from qa.llm.answerer import stream_answer_field  # the LLM client's stack, only here

        pieces = self.chat.stream(messages, schema=schema, max_tokens=self.max_tokens)
        for item in stream_answer_field(pieces):
            yield item if isinstance(item, str) else self.verdict(reading, item)

    def verdict(self, reading: Reading, data: dict[str, Any]) -> Verdict:
        """The verdict a parsed answer states; numbers and names outside the reading are
        dropped (a server that ignores the grammar cannot smuggle them in).

        >>> from qa.schema import Language
        >>> r = Reading(question="q", language=Language.EN, choose=True, evidence=[],
        ...             candidates=[Candidate(name="FSDP")])
        >>> class _Chat:
        ...     class settings:
        ...         model = "m"
        >>> data = {"evidence": [1, 9], "pick": "fsdp", "answer": "Use it."}
        >>> v = Reader(_Chat()).verdict(r, data)
        >>> v.pick.name, v.evidence, v.sentence
        ('FSDP', [], 'Use it.')
        """
        numbers = [
            n
            for n in dict.fromkeys(data.get("evidence") or [])
            if isinstance(n, int) and 0 < n <= len(reading.evidence)
        ]
        pick = None
        name = data.get("pick")
        if isinstance(name, str) and name != NONE:
            key = normalize_name(name)
            pick = next((c for c in reading.candidates if normalize_name(c.name) == key), None)
        sentence = " ".join(str(data.get("answer", "")).split())
        return Verdict(evidence=numbers, pick=pick, sentence=sentence, model=self.name)


def _named_in_line(reading: Reading, line: int) -> tuple[list[Candidate], list[Candidate]]:
    """The candidates evidence line `line` (1..) gives: those its text names (a thing it is
    about or mentions, or a name in its words; what its own words name first, then what it
    gives only as its subject, the topic of its page or section), and all it is numbered
    under, its section titles too. A title says what a line is under, not what it gives
    ("Final advice" over "beginners: PyTorch").

    >>> from qa.schema import Language
    >>> u = EvidenceUnit(id="d#0-9", doc="d", start=0, end=9, kind="sentence",
    ...     text="Beginners: PyTorch.", heading_path=("Final advice",))
    >>> names = [Candidate(name="Final advice", evidence=[1]), Candidate(name="PyTorch",
    ...     evidence=[1]), Candidate(name="JAX", evidence=[2])]
    >>> r = Reading(question="q", language=Language.EN, choose=True, evidence=[u],
    ...     candidates=names)
    >>> [[c.name for c in found] for found in _named_in_line(r, 1)]
    [['PyTorch'], ['Final advice', 'PyTorch']]
    >>> u = u.model_copy(update={"text": "With JAX, expect overheads.", "subject": "lib:torch"})
    >>> names = [Candidate(name="PyTorch", entity="lib:torch", evidence=[1]),
    ...     Candidate(name="JAX", evidence=[1])]
    >>> r = r.model_copy(update={"evidence": [u], "candidates": names})
    >>> [c.name for c in _named_in_line(r, 1)[0]]
    ['JAX', 'PyTorch']
    """
    unit = reading.evidence[line - 1]
    under = [c for c in reading.candidates if line in c.evidence]
    said = [c for c in under if names_unit(c, unit, "", titles=False)]
    # a line's subject is the page's or section's topic, not a word of it: the names its words
    # give come first ("when using Bar, expect overheads" on a page about Foo speaks of Bar);
    # before them the thing the line itself is about (the name of its row or its item, or the
    # name it opens with: "Foo fuses Bar and Baz" says something of Foo)
    own = _own(said, unit)
    words = [c for c in said if _in_words(c, unit) and c not in own]
    return own + words + [c for c in said if c not in own and c not in words], under


def _described_by(candidate: Candidate, unit: EvidenceUnit) -> bool:
    """Whether a line describes a candidate by its place: the candidate is a thing the graph
    knows, and its table row's first cell, its list item's lead, or the item it is nested
    under, whole ("Kestrel | a serving tool, faster than Foo", "简介：…" under "Kestrel："),
    not a thing the line compares it with. A lead or a cell that is only a label ("首选：…")
    describes nothing.

    >>> u = EvidenceUnit(id="d#0-9", doc="d", start=0, end=9, kind="item",
    ...     text="简介：一个服务框架，可在 CPU 上运行。", lead="简介", context="Kestrel：")
    >>> kestrel = Candidate(name="Kestrel", entity="tool:kestrel")
    >>> _described_by(kestrel, u), _described_by(Candidate(name="CPU", entity="hardware:cpu"), u)
    (True, False)
    >>> _described_by(Candidate(name="简介"), u)  # a label
    False
    """
    if candidate.entity is None:
        return False
    key = normalize_name(candidate.name)
    first = unit.cells[0] if unit.kind == UnitKind.ROW and unit.cells else ""
    places = [first, unit.lead, unit.context.strip().rstrip(":：")]
    return any(place and normalize_name(place) == key for place in places)


#: what may come before a line's first word: list marks, emphasis, a number, a check mark
_LINE_OPENING = re.compile(r"^(?:[\W_]|\d+[.)、]\s)*")


def _opener(names: Sequence[Candidate], unit: EvidenceUnit) -> Candidate | None:
    """The candidate a line opens with, its first words (the longest such name): what it says
    something of ("Foo fuses Bar and Baz", "Gorse 方案：…"), not a thing it names later.

    >>> u = EvidenceUnit(id="d#0-9", doc="d", start=0, end=9, kind="sentence",
    ...     text="**Wisp Turbo** fuses Gorse and Wisp.")
    >>> names = [Candidate(name="Gorse"), Candidate(name="Wisp"), Candidate(name="Wisp Turbo")]
    >>> _opener(names, u).name, _opener(names[:1], u), _opener([Candidate(name="Wi")], u)
    ('Wisp Turbo', None, None)
    >>> label = u.model_copy(update={"text": "首选：Gorse。"})
    >>> _opener([Candidate(name="首选")], label), _opener([Candidate(name="Cpu", entity="hw:cpu")],
    ...     label.model_copy(update={"text": "CPU: 省电。"})).name
    (None, 'Cpu')
    """
    text = _LINE_OPENING.sub("", strip_markup(unit.text)).casefold()

    def opens(candidate: Candidate) -> bool:
        name = candidate.name.casefold()
        after = text[len(name) : len(name) + 1]
        if not text.startswith(name) or (after.isascii() and after.isalnum()):
            return False  # the whole name: "Wi" does not open "Wisp …"
        # a name the graph does not know before a colon labels what follows ("首选：…")
        return candidate.entity is not None or not text[len(name) :].lstrip().startswith(COLONS)

    opening = [c for c in names if opens(c)]
    return max(opening, key=lambda c: len(c.name), default=None)


def _own(said: Sequence[Candidate], unit: EvidenceUnit) -> list[Candidate]:
    """The candidates a line is about: those it describes by its place (`_described_by`), and
    the one it opens with (`_opener`)."""
    own = [c for c in said if _described_by(c, unit)]
    opener = _opener(said, unit)
    return [*own, opener] if opener is not None and opener not in own else own


def _in_words(candidate: Candidate, unit: EvidenceUnit) -> bool:
    """Whether a unit's own words name a candidate (a mention linking found in them, or the
    name as a word), not only its subject, the topic of its page or section."""
    return names_unit(candidate, unit, "", titles=False, subject=False)


def _total(a: float | None, b: float | None) -> float | None:
    """The sum of two counts, either of which a server may not have given (None).

    >>> _total(3, 4), _total(None, 4), _total(None, None)
    (7, 4, None)
    """
    return None if a is None and b is None else (a or 0) + (b or 0)


def _sum(counts: Iterable[int | None]) -> int | None:
    """The sum of token counts a server may not have given (None), as `_total` adds two.

    >>> _sum([3, None, 4]), _sum([None])
    (7, None)
    """
    given = [count for count in counts if count is not None]
    return sum(given) if given else None


def _as_object(mode: str, data: Any) -> dict[str, Any]:
    """A short answer (a bare pick, bare numbers) as the object a full one is.

    >>> _as_object("pick", "QAT"), _as_object("evidence", [2, 1])
    ({'pick': 'QAT'}, {'evidence': [2, 1]})
    """
    if mode == "pick" and isinstance(data, str):
        return {"pick": data}
    if mode == "evidence" and isinstance(data, list):
        return {"evidence": data}
    if mode in ("full", "cited") and isinstance(data, dict):
        return data
    raise LLMBadResponse(f"the reader's answer does not have the {mode} shape: {str(data)[:120]!r}")


def _names(point: DraftPoint, candidate: Candidate) -> bool:
    """Whether a point speaks of the candidate: an edge of its entity, or its name in the text.

    >>> point = DraftPoint(doc="d", start=0, end=9, quote="Set `--gpu_mem`.", text="Set --gpu_mem.")
    >>> _names(point, Candidate(name="GPU")), _names(point, Candidate(name="--gpu-mem"))
    (False, True)
    """
    if _cites(point, candidate):
        return True
    seen = f"{point.context} {strip_markup(point.quote)} {point.text} {point.heading}"
    return names_in(candidate.name, seen)  # as a word of what a reader sees, as a line names it


def _titled(point: DraftPoint, unit: EvidenceUnit, pick: Candidate) -> DraftPoint:
    """A point as the reason for a pick that only a title above its own section names (a
    line under "When to use" in the section "Graph folding"): shown under that title,
    the section it is in that names the pick, so that what names it is on screen.

    >>> u = EvidenceUnit(id="d#0-9", doc="d", start=0, end=9, kind="item", text="No data.",
    ...     heading_path=("Guide", "Graph folding", "When to use"))
    >>> point = DraftPoint(doc="d", start=0, end=9, quote="No data.", text="No data.",
    ...     heading="When to use")
    >>> _titled(point, u, Candidate(name="Graph folding")).heading
    'Graph folding'
    >>> _titled(point, u, Candidate(name="Pruning")).heading
    'When to use'
    """
    if _names(point, pick):
        return point
    title = next((t for t in reversed(unit.heading_path[:-1]) if names_in(pick.name, t)), None)
    return point if title is None else point.model_copy(update={"heading": title})


def _reasons(points: list[DraftPoint], pick: Candidate, limit: int) -> list[DraftPoint]:
    """The first `limit` points that speak of a pick and, for a pick the graph knows, one citing
    an edge of it among them: that edge is what verifies the pick (the verifier drops a
    recommendation no kept edge backs), so it takes the last place where none before it cites
    one.

    >>> from qa.schema import PathEdge
    >>> def p(start, end, edge=False):
    ...     edges = [PathEdge(source="a:x", relation="SUPPORTS", target="b:y")] if edge else []
    ...     return DraftPoint(doc="d", start=start, end=end, quote="q", text="q", edges=edges)
    >>> pick = Candidate(name="X", entity="a:x")
    >>> [(q.start, bool(q.edges)) for q in _reasons([p(0, 9), p(10, 19), p(20, 29),
    ...     p(30, 39, edge=True)], pick, 3)]
    [(0, False), (10, False), (30, True)]
    >>> [q.start for q in _reasons([p(0, 9), p(10, 19, edge=True), p(30, 39, edge=True)], pick, 2)]
    [0, 10]
    """
    chosen = points[:limit]
    if pick.entity and chosen and not any(_cites(p, pick) for p in chosen):
        edged = next((q for q in points[limit:] if _cites(q, pick)), None)
        if edged is not None:
            chosen[-1] = edged
    return chosen


def _further(
    reading: Reading,
    points: list[DraftPoint],
    point: PointMaker,
    limit: int,
    about: Candidate | None = None,
    pool: list[EvidenceUnit] | None = None,
) -> list[DraftPoint]:
    """The best units of `reading.further` (or of `pool`: `reading.around`, the units next to
    those read) that lie in a section one of `points` lies in (and, `about` given, speak of it:
    its name in the text or the section's title, or an edge of it), none inside a point's span:
    what the section goes on to say, which retrieval ranked below what the reader read.

    >>> from kg.documents import UnitKind
    >>> def u(i, title, text="s"):
    ...     return EvidenceUnit(id=f"d#{i}", doc="d", start=i * 10, end=i * 10 + 9,
    ...                         kind=UnitKind.SENTENCE, text=text, heading_path=(title,))
    >>> def pt(unit, prefer):
    ...     return DraftPoint(doc=unit.doc, start=unit.start, end=unit.end, quote=unit.text,
    ...                       text=unit.text, heading=unit.heading_path[-1])
    >>> reading = Reading(question="q", language="en", choose=True, evidence=[u(0, "QAT")],
    ...                   further=[u(1, "PTQ"), u(2, "Tips"), u(3, "QAT"), u(4, "QAT")])
    >>> [p.start for p in _further(reading, [pt(u(0, "QAT"), None)], pt, 2)]
    [30, 40]
    >>> said = [pt(u(2, "Tips"), None)]
    >>> [p.start for p in _further(reading, said, pt, 2, Candidate(name="QAT"))]
    []

    Two sections with one title are two sections:

    >>> def v(i, path):
    ...     return EvidenceUnit(id=f"d#{i}", doc="d", start=i * 10, end=i * 10 + 9,
    ...                         kind=UnitKind.SENTENCE, text="s", heading_path=path)
    >>> reading = Reading(question="q", language="en", choose=True,
    ...                   evidence=[v(0, ("QAT", "Usage"))],
    ...                   further=[v(1, ("PTQ", "Usage")), v(2, ("QAT", "Usage"))])
    >>> [p.start for p in _further(reading, [pt(v(0, ("QAT", "Usage")), None)], pt, 2)]
    [20]
    """
    # a section by its whole heading path where a unit read holds the point (two sections may
    # share a last title: "Usage" under each method), else by the title the point has
    units = [*reading.evidence, *reading.further]
    paths: set[tuple[str, tuple[str, ...]]] = set()
    titles: set[tuple[str, str]] = set()
    for p in points:
        holder = next((u for u in units if u.doc == p.doc and u.start <= p.start < u.end), None)
        if holder is not None:
            paths.add((p.doc, tuple(holder.heading_path)))
        else:
            titles.add((p.doc, p.heading))
    found: list[DraftPoint] = []
    for unit in reading.further if pool is None else pool:
        if len(found) >= limit:
            break
        last = unit.heading_path[-1] if unit.heading_path else ""
        if (unit.doc, tuple(unit.heading_path)) not in paths and (unit.doc, last) not in titles:
            continue
        made = point(unit, about.entity if about is not None else None)
        inside = any(q.doc == made.doc and q.start <= made.start < q.end for q in [*points, *found])
        if not inside and (about is None or _names(made, about)):
            found.append(made)
    return found


def _add_unseen(
    facts: list[DraftPoint], new: Iterable[DraftPoint], picked: list[DraftPoint]
) -> None:
    """Append to `facts` each of `new` not on screen yet: no point of `facts` or `picked` starts
    where it starts or holds its span.

    >>> def p(start, end): return DraftPoint(doc="d", start=start, end=end, quote="x", text="x")
    >>> facts = [p(0, 10)]
    >>> _add_unseen(facts, [p(2, 5), p(0, 3), p(20, 30), p(20, 25), p(40, 50)], [p(40, 45)])
    >>> [(f.start, f.end) for f in facts]
    [(0, 10), (20, 30)]
    """
    for fact in new:
        if not any(
            q.doc == fact.doc
            and (q.start == fact.start or q.start <= fact.start <= fact.end <= q.end)
            for q in [*facts, *picked]
        ):
            facts.append(fact)


def _cites(point: DraftPoint, candidate: Candidate) -> bool:
    """Whether a point cites an edge of the candidate's entity (a bare name has none)."""
    return bool(candidate.entity) and any(
        candidate.entity in (e.source, e.target) for e in point.edges
    )


def _backed_key(pick: Candidate, points: list[DraftPoint]) -> str:
    """The id a reader's pick goes under: its entity's where a point cites an edge of
    it (the verifier checks that path), else its name as a value, which the verifier checks in
    the points' verbatim text: a thing the graph knows that the evidence read names without a
    relation of it (an install line naming the engine) is still the text's answer.

    >>> point = DraftPoint(doc="d", start=0, end=9, quote="Use vLLM.", text="Use vLLM.")
    >>> _backed_key(Candidate(name="vLLM", entity="engine:vllm"), [point])
    'value:vLLM'
    >>> _backed_key(Candidate(name="QAT"), [point])
    'value:QAT'
    """
    if any(_cites(p, pick) for p in points):
        return pick.key
    return f"value:{pick.name}"


def _same(candidate: Candidate, recommendation: DraftRecommendation) -> bool:
    """Whether a candidate is the thing a recommendation names (its entity, or its name)."""
    return candidate.key == recommendation.id or normalize_name(candidate.name) == normalize_name(
        recommendation.name
    )


def _graph_bound(
    pick: Candidate, base: AnswerDraft, offered: Sequence[Candidate] = ()
) -> DraftRecommendation | None:
    """The graph's first pick, where it stands in for the reader's: the reader picked a thing
    the graph knows (an entity) that the graph did not pick, and the graph picked a thing it
    knows, on verified paths. Among the things it knows the graph weighs their edges, which the
    reader is not shown; what the graph cannot weigh (a name only the text gives) is the
    reader's. Measured with the 0.5B reader on the three public sets (`README.md`): the
    READMEs' and the bundled articles' accuracy rose by 14 and 9 points, the docs pages' and
    tutorials' stayed. Of a question that offers alternatives ("A or B?"; `offered`, the
    candidates that are those), the answer is one of them: the graph's pick stands in for a
    pick that is none of them (one only the text gives too) where it is one of them (it too
    may be a name only the text gives), and not for a pick that is one where it is none.

    >>> point = DraftPoint(doc="d", start=0, end=1, quote="x", text="x")
    >>> graph = AnswerDraft(question="q", language="en", recommendations=[
    ...     DraftRecommendation(id="engine:vllm", name="vLLM", points=[point])])
    >>> _graph_bound(Candidate(name="TGI", entity="engine:tgi"), graph).name
    'vLLM'
    >>> _graph_bound(Candidate(name="PD 分离"), graph) is None  # a name only the text gives
    True
    >>> _graph_bound(Candidate(name="vLLM", entity="engine:vllm"), graph) is None  # the same
    True
    >>> tgi = Candidate(name="TGI", entity="engine:tgi", offered=True)  # "TGI or Wisp?"
    >>> _graph_bound(tgi, graph, [tgi, Candidate(name="Wisp", offered=True)]) is None
    True
    >>> vllm = Candidate(name="vLLM", entity="engine:vllm", offered=True)  # "vLLM or TGI?"
    >>> _graph_bound(Candidate(name="Hutch Cloud"), graph, [vllm, tgi]).name
    'vLLM'
    """
    if not base.recommendations:
        return None
    first = base.recommendations[0]
    if not first.points:
        return None
    if offered:
        graphs = any(_same(c, first) for c in offered)
        if pick not in offered and graphs:
            return first  # "A or B?" answered with neither: the graph's, which is one of them
        if pick in offered and not graphs:
            return None  # and not with a third thing for one of them
    if pick.entity is None or first.id.startswith("value:"):
        return None
    if any(_same(pick, r) for r in base.recommendations):
        return None  # one of the graph's own picks: the reader's choice among them stands
    return first


def draft_from_verdict(
    reading: Reading,
    verdict: Verdict,
    point: PointMaker,
    base: AnswerDraft,
    *,
    max_reasons: int = 3,
    max_facts: int = 6,
    max_further: int = 2,
    max_next: int = 4,
) -> AnswerDraft:
    """The answer draft a verdict makes over `base` (the graph's draft of the same question:
    its conflicts, caveats, snippets and notes stay). The pick comes with the graph's reasons
    when the graph picked it too, else with the evidence that speaks of it (what the reader cited
    first), and, the reader's pick standing, at most `max_further` units retrieval ranked below
    what the reader read that lie in the sections of those and speak of the pick (`_further`),
    then as many of the units next to them in those sections (`Reading.around`); the graph's
    other picks follow as alternatives. The facts are the evidence the reader cited, at most
    `max_further` units ranked below it that its sections go on with and as many of the units
    next to it there, the graph's facts, then the rest of what the reader read, each span once:
    at most `max_facts`, but never fewer than the units the reader read and those added, so
    that what it decided from is on screen; after them, `max_next` units retrieval ranked next
    below those read (`Reading.further`), each span once. The sentence is the prose.

    The units next to a line are what a reader of the page sees around it: measured with the
    embedded 0.5B reader on the three public sets, 14 of real-articles' required facts that
    answers missed lay in the section of a unit read, one to three units from it, and retrieval
    had ranked most of them below the 32 units an answer draws from."""
    cited = [reading.evidence[n - 1] for n in verdict.evidence]
    rest = [u for u in reading.evidence if u not in cited]
    recommendations: list[DraftRecommendation] = []
    notes = list(base.notes)
    if verdict.pick is not None:
        pick = verdict.pick
        drafted = next((r for r in base.recommendations if _same(pick, r)), None)
        offered = [c for c in reading.candidates if c.offered]
        bound = _graph_bound(pick, base, offered)
        if bound is not None:
            notes.append(
                f"the reader picked {pick.name}, none of the alternatives the question offers: "
                f"the graph's pick {bound.name}, one of them, stands"
                if offered and pick not in offered
                else f"the reader picked {pick.name}, a thing the graph knows and did not pick: "
                f"the graph's pick {bound.name} stands"
            )
            recommendations.append(bound)
        elif drafted is not None and drafted.points:
            recommendations.append(drafted)
        else:
            points = [_titled(point(u, pick.entity), u, pick) for u in [*cited, *rest]]
            backing = _reasons([p for p in points if _names(p, pick)], pick, max_reasons)
            if backing:
                recommendations.append(
                    DraftRecommendation(
                        id=_backed_key(pick, backing), name=pick.name, points=backing
                    )
                )
            else:
                notes.append(f"the reader picked {pick.name}, which no evidence shown names")
        if recommendations:
            first = recommendations[0]
            if bound is None:  # the reader's pick stands: its section goes on
                about = Candidate(
                    name=first.name, entity=None if first.id.startswith("value:") else first.id
                )
                more = _further(reading, first.points, point, max_further, about)
                more += _further(
                    reading, [*first.points, *more], point, max_further, about, reading.around
                )
                first = first.model_copy(update={"points": [*first.points, *more]})
                recommendations[0] = first
            # the graph's own picks, after the reader's, each with its best reason
            recommendations += [
                r for r in base.recommendations if r is not first and not _same(pick, r)
            ][:2]
    picked = [p for r in recommendations for p in r.points]
    facts: list[DraftPoint] = []
    said = [point(u, None) for u in cited]
    goes_on = _further(reading, said, point, max_further)
    goes_on += _further(reading, [*said, *goes_on], point, max_further, pool=reading.around)
    _add_unseen(facts, [*said, *goes_on, *base.facts, *(point(u, None) for u in rest)], picked)
    # never fewer than the reader read: what it decided from is on screen, each span once
    limit = max(max_facts - (2 if recommendations else 0), len(reading.evidence)) + len(goes_on)
    facts = facts[: max(limit, len(cited))]
    # then what retrieval ranked next: the sources go on a little past what the reader read
    _add_unseen(facts, [point(u, None) for u in reading.further[:max_next]], picked)
    return base.model_copy(
        update={
            "recommendations": recommendations,
            "candidates": [],
            "facts": facts,
            "prose": verdict.sentence,
            "abstain": None,
            "backend": f"llm:{verdict.model}",
            "notes": notes,
        }
    )
