"""Pick between the alternatives a question names, by what the sources say of each.

Three readings of the evidence, in order of how directly they decide:

- **tables**: a table that has the options as columns (`| 3090Ti | 4090 |`) or as rows (`| LoRA |`,
  `| QLoRA |`) is read as a comparison: the row or column the question's other words select, the
  value the question asks about (speed, memory) and the direction it wants (faster, less);
  a feature matrix of ✅ and ❌ counts the features the question asks for;
- **cues**: a sentence that names one option with a recommending or discouraging word around it
  ("强烈建议…runtime", "not recommended … devel", "often JAX");
- **coverage**: how much of the rest of the question the option's own units answer.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

from kg import cues
from kg.documents import EvidenceUnit, UnitKind
from kg.schema import normalize_name
from qa import weights as W
from qa.read.frame import MEMORY_WORDS, SPEED_WORDS, Option

__all__ = ["OptionVerdict", "resolve_options"]

_MORE = cues.pattern("question.direction.more")
_LESS = cues.pattern("question.direction.less")
#: a sentence naming one alternative favourably or not; ✅ and ❌ say it in a table
_POSITIVE = re.compile(cues.alternatives("document.option_positive") + "|✅|✔", re.I)
_NEGATIVE = re.compile(cues.alternatives("document.option_negative") + "|❌", re.I)
_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


@dataclass
class OptionVerdict:
    """How one alternative fares: its score, the units that decide, the name the sources use."""

    option: Option
    node: str | None
    score: float = 0.0
    units: list[EvidenceUnit] = field(default_factory=list)
    shown: str = ""


def _core(text: str) -> str:
    """What must match of an option: the model number after a product line's short prefix
    ("RTX 3090 Ti" -> "3090ti", "MX 450" -> "450": a table heads its column "450"), else the
    whole name; a short number is no model number ("FP16", "INT8" stay whole).

    >>> _core("RTX 3090 Ti"), _core("MX 450"), _core("runtime"), _core("Quokka-2"), _core("FP16")
    ('3090ti', '450', 'runtime', 'quokka2', 'fp16')
    """
    norm = normalize_name(text)
    prefix = re.match(r"[a-z]{2,4}(?=\d)", norm)
    if prefix is None:
        return norm
    number = norm[prefix.end() :]
    digits = re.match(r"\d+", number)
    assert digits is not None  # the look-ahead saw one
    return number if len(digits.group(0)) >= 3 or len(number) > len(digits.group(0)) else norm


def _names(cell: str, core: str) -> bool:
    """Whether a cell names an option: all of it, its end ("RTX 4090" for "4090"), or its first
    word ("CTranslate2 3.6.0" for "CTranslate2").

    >>> _names("Wisp2 3.6.0", "wisp2"), _names("Torchy-py 3.0.4", "torchypy")
    (True, True)
    >>> _names("llamakit 0.8", "llama")
    False
    """
    cell_norm = normalize_name(cell)
    first = normalize_name(cell.split()[0]) if cell.split() else ""
    return bool(cell_norm) and (
        cell_norm == core or (len(core) >= 3 and (cell_norm.endswith(core) or first == core))
    )


def _value(cell: str) -> float | None:
    m = _NUMBER.search(cell.replace(",", ""))
    return float(m.group(0)) if m else None


def _direction(question: str) -> int:
    """+1 when the question wants more of something (faster), -1 less (memory), 0 unsaid."""
    if _LESS.search(question):
        return -1
    if _MORE.search(question):
        return 1
    return 0


_QUALIFIED = {
    # a quantity the question qualifies with a comparative: "less memory", "内存更少", "faster"
    "memory": cues.pattern("question.qualified.memory"),
    "speed": cues.pattern("question.qualified.speed"),
}


def _columns_for(header: list[str], question: str) -> list[tuple[int, int]]:
    """The columns of the quantities a question asks about (memory, speed), each with the way
    it is better (more tokens per second, less memory). A quantity the question qualifies
    ("which one uses less memory, and what about its throughput?") decides alone.

    >>> head = ["", "Tokens per second", "Max. memory", "BLEU"]
    >>> _columns_for(head, "How do they compare in tokens/s and memory?")
    [(2, -1), (1, 1)]
    >>> _columns_for(head, "Which one uses less memory, and what about its throughput?")
    [(2, -1)]
    """
    wanted = [
        ("memory", MEMORY_WORDS, -1, bool(MEMORY_WORDS.search(question))),
        ("speed", SPEED_WORDS, 1, bool(SPEED_WORDS.search(question))),
    ]
    qualified = {q for q, pattern in _QUALIFIED.items() if pattern.search(question)}
    out: list[tuple[int, int]] = []
    for quantity, pattern, way, asked in wanted:
        if not asked or (qualified and quantity not in qualified):
            continue
        index = next((i for i, t in enumerate(header) if pattern.search(t)), None)
        if index is not None and all(index != i for i, _w in out):
            out.append((index, way))
    return out


def _overlap(unit: EvidenceUnit, terms: Sequence[str]) -> int:
    """How many of the question's other words a unit has, with its table's header and the
    section and row-group labels above it ("CPU", "OpenNMT-py WMT14 model")."""
    text = normalize_name(" ".join([unit.text, *unit.header, unit.context]))
    return sum(1 for t in terms if t and t in text)


def _tables(
    verdicts: list[OptionVerdict], rows: list[EvidenceUnit], question: str, terms: Sequence[str]
) -> bool:
    """Decide from comparison tables; True when a table decided."""
    cores = [_core(v.option.text) for v in verdicts]
    direction = _direction(question)
    # options as columns: pick the row the question's other words select
    columns: list[tuple[int, EvidenceUnit, list[int]]] = []
    for row in rows:
        idx = [next((i for i, h in enumerate(row.header) if _names(h, c)), -1) for c in cores]
        if all(i >= 0 for i in idx) and len(set(idx)) == len(idx):
            columns.append((_overlap(row, terms), row, idx))
    if columns:
        best_overlap = max(c[0] for c in columns)
        chosen = [c for c in columns if c[0] == best_overlap]
        _, row, idx = chosen[0]
        marks = [row.cells[i] if i < len(row.cells) else "" for i in idx]
        if any("✅" in m or "❌" in m or "✔" in m for m in marks):
            for v, i in zip(verdicts, idx, strict=True):
                v.score += sum(
                    1.0 + _overlap(r, terms)
                    for _o, r, _i in columns
                    if i < len(r.cells)
                    and ("✅" in r.cells[i] or "✔" in r.cells[i])
                    and _overlap(r, terms) > 0
                )
                v.units = [r for o, r, _i in columns if o > 0][:3]
                v.shown = row.header[i]
            return any(v.score > 0 for v in verdicts)
        values = [_value(m) for m in marks]
        if direction and all(x is not None for x in values):
            best = (max if direction > 0 else min)(
                range(len(values)), key=lambda k: values[k] or 0.0
            )
            for k, (v, i) in enumerate(zip(verdicts, idx, strict=True)):
                v.score += W.TABLE_VOTE if k == best else 0.0
                v.units = [row]
                v.shown = row.header[i]
            return True
    # options as rows of one table: compare the column the question asks about
    by_table: dict[tuple[str, ...], list[list[EvidenceUnit]]] = {}
    for row in rows:
        for k, core in enumerate(cores):
            if any(_names(cell, core) for cell in row.cells):
                slots = by_table.setdefault(tuple(row.header), [[] for _ in cores])
                slots[k].append(row)
    tables: list[tuple[int, list[EvidenceUnit], list[tuple[int, list[float | None]]]]] = []
    for header, slots in by_table.items():
        asked = _columns_for(list(header), question)
        if not all(slots) or not asked:
            continue
        picked = [max(s, key=lambda r: _overlap(r, terms)) for s in slots]
        table_values: list[tuple[int, list[float | None]]] = []
        for column, way in asked:
            values = [_value(r.cells[column]) if column < len(r.cells) else None for r in picked]
            if all(x is not None for x in values):
                table_values.append((way, values))
        if table_values:
            # the section above it counts most ("On CPU": the CPU benchmark's table, whose
            # neighbour has a "Max. CPU memory" column too)
            said = sum(_overlap(r, terms) for r in picked)
            above = normalize_name(" ".join([*picked[0].heading_path[-1:], picked[0].context]))
            said += W.TABLE_SECTION_WEIGHT * sum(1 for t in terms if t and t in above)
            tables.append((said, picked, table_values))
    if tables:
        # the table the question's other words select ("On CPU": the CPU benchmark's); each
        # quantity asked is a vote for the option that does better on it
        _o, picked, table_values = max(tables, key=lambda t: t[0])
        for way, values in table_values:
            best = (max if way > 0 else min)(range(len(values)), key=lambda k: values[k] or 0.0)
            verdicts[best].score += W.TABLE_VOTE
        for v, r in zip(verdicts, picked, strict=True):
            v.units = [r]
        return True
    return False


def _cues(verdicts: list[OptionVerdict], pool: list[EvidenceUnit], terms: Sequence[str]) -> None:
    """Recommending or discouraging words in the clause that names one option."""
    cores = [_core(v.option.text) for v in verdicts]
    for unit in pool:
        if unit.kind == UnitKind.ROW:
            continue
        for clause in re.split(r"[。；;]|(?<=[.!?])\s", unit.text):
            norm = normalize_name(clause)
            hits = [k for k, c in enumerate(cores) if c and c in norm]
            if len(hits) != 1:
                continue
            polarity = 0.0
            if _NEGATIVE.search(clause):
                polarity = -1.0
            elif _POSITIVE.search(clause):
                polarity = 1.0
            if polarity:
                verdict = verdicts[hits[0]]
                verdict.score += polarity
                if polarity > 0 and unit not in verdict.units:
                    verdict.units.insert(0, unit)


def resolve_options(
    options: Sequence[Option],
    nodes: Sequence[str | None],
    pool: list[EvidenceUnit],
    question: str,
    terms: Sequence[str],
    coverage: Callable[[int], tuple[float, list[EvidenceUnit]]],
    tables_only: bool = False,
) -> list[OptionVerdict]:
    """The alternatives, best first (see the module docstring). `terms` are the question's other
    words (normalised); `coverage(k)` scores option k by its own units and returns them. With
    `tables_only` ("how does A compare with B in speed?") only a table decides: otherwise every
    verdict is left without units."""

    def fresh() -> list[OptionVerdict]:
        return [OptionVerdict(o, n, shown=o.text) for o, n in zip(options, nodes, strict=True)]

    verdicts = fresh()
    rows = [u for u in pool if u.kind == UnitKind.ROW]
    decided = _tables(verdicts, rows, question, terms)
    if tables_only and not decided:
        return fresh()  # what an undecided table left in them says nothing
    if not decided:
        _cues(verdicts, pool, terms)
        for k, verdict in enumerate(verdicts):
            score, units = coverage(k)
            verdict.score += score
            verdict.units.extend(u for u in units if u not in verdict.units)
    return sorted(verdicts, key=lambda v: -v.score)
