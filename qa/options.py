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

from kg.documents import EvidenceUnit, UnitKind
from kg.schema import normalize_name
from qa.frame import Option

__all__ = ["OptionVerdict", "resolve_options"]

_MORE = re.compile(r"faster|quicker|more|higher|better|larger|快|高|多|强", re.I)
_LESS = re.compile(r"less|lower|fewer|smaller|least|cheaper|少|低|省|小", re.I)
_MEMORY = re.compile(r"memory|vram|\bgi?b\b|显存|内存", re.I)
_SPEED = re.compile(r"speed|fast|throughput|tokens?|t/s|tok/s|速度|吞吐|快", re.I)
_POSITIVE = re.compile(
    r"recommend|strongly suggest|\bbest\b|fastest|\boften\b|prefer|建议|推荐|首选|最快|✅|✔",
    re.I,
)
_NEGATIVE = re.compile(
    r"not recommended|don't|do not|avoid|not supported|unsupported|"
    r"不建议|不推荐|不要|避免|❌|不支持",
    re.I,
)
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
    """What must match of an option: its digits-bearing part if any ("RTX 3090 Ti" -> "3090ti").

    >>> _core("RTX 3090 Ti"), _core("runtime"), _core("FlashAttention-2")
    ('3090ti', 'runtime', 'flashattention2')
    """
    norm = normalize_name(text)
    digits = re.search(r"\d[\w.]*", norm)
    if digits and re.match(r"^[a-z]{2,4}\d", norm) and not re.match(r"^[a-z]+\d+$", norm[:12]):
        return norm[digits.start() :]
    m = re.match(r"^(?:rtx|gtx|nvidia|geforce)(\d.*)$", norm)
    return m.group(1) if m else norm


def _names(cell: str, core: str) -> bool:
    cell_norm = normalize_name(cell)
    return bool(cell_norm) and (cell_norm == core or (len(core) >= 3 and cell_norm.endswith(core)))


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


def _column_for(header: list[str], question: str) -> int | None:
    """The column of the quantity a question asks about (memory, speed)."""
    wants_memory = bool(_MEMORY.search(question))
    wants_speed = bool(_SPEED.search(question))
    for index, title in enumerate(header):
        if wants_memory and _MEMORY.search(title):
            return index
    for index, title in enumerate(header):
        if wants_speed and _SPEED.search(title):
            return index
    return None


def _overlap(unit: EvidenceUnit, terms: Sequence[str]) -> int:
    text = normalize_name(" ".join([unit.text, *unit.header]))
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
                v.score += 10.0 if k == best else 0.0
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
    for header, slots in by_table.items():
        if not all(slots) or not direction:
            continue
        column = _column_for(list(header), question)
        if column is None:
            continue
        picked = [max(s, key=lambda r: _overlap(r, terms)) for s in slots]
        values = [_value(r.cells[column]) if column < len(r.cells) else None for r in picked]
        if any(x is None for x in values):
            continue
        best = (max if direction > 0 else min)(range(len(values)), key=lambda k: values[k] or 0.0)
        for k, (v, r) in enumerate(zip(verdicts, picked, strict=True)):
            v.score += 10.0 if k == best else 0.0
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
                verdict.score += polarity * (1.0 + 0.5 * _overlap(unit, terms))
                if polarity > 0 and unit not in verdict.units:
                    verdict.units.insert(0, unit)


def resolve_options(
    options: Sequence[Option],
    nodes: Sequence[str | None],
    pool: list[EvidenceUnit],
    question: str,
    terms: Sequence[str],
    coverage: Callable[[int], tuple[float, list[EvidenceUnit]]],
) -> list[OptionVerdict]:
    """The alternatives, best first (see the module docstring). `terms` are the question's other
    words (normalised); `coverage(k)` scores option k by its own units and returns them."""
    verdicts = [OptionVerdict(o, n, shown=o.text) for o, n in zip(options, nodes, strict=True)]
    rows = [u for u in pool if u.kind == UnitKind.ROW]
    if not _tables(verdicts, rows, question, terms):
        _cues(verdicts, pool, terms)
        for k, verdict in enumerate(verdicts):
            score, units = coverage(k)
            verdict.score += score
            verdict.units.extend(u for u in units if u not in verdict.units)
    return sorted(verdicts, key=lambda v: -v.score)
