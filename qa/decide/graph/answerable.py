"""Whether the sources can answer a question: the specific names of its asking sentence must
appear in some document, a price or a rate it asks for must be stated, and something relevant
must have been retrieved. Knowing a name in the lexicon does not make it covered; only evidence
does."""

from __future__ import annotations

import re

from kg import cues
from kg.documents import UnitKind
from kg.schema import IDEA_TYPES, NodeType, normalize_name
from qa import weights as W
from qa.read.frame import QuestionFrame, named_things
from qa.read.shapes import version_after
from qa.retrieve.unit_index import CHOOSABLE, UnitIndex
from qa.retrieve.units import RankedUnit
from qa.schema import (
    AbstainReason,
)

__all__ = ["Answerability"]

_MONEY_TEXT = re.compile(r"[$€£¥]\s?\d|" + cues.alternatives("value.money"), re.I)


_RATE_TEXT = cues.pattern("value.rate")


_VAGUE_PREFIXES = frozenset(
    t.prefix for t in (NodeType.CRITERION, *IDEA_TYPES, NodeType.SCENARIO, NodeType.PERSONA)
)


_CJK_TEXT = re.compile(r"[\u4e00-\u9fff]")


#: words a spread name may have between its own in a unit: a gloss ("AMD (ROCm) GPUs"), a
#: model ("NVIDIA A100 GPUs")
_SPREAD_GAP = 2


def _spread_name(name: str) -> re.Pattern[str] | None:
    """A name of two Latin words or more as a pattern that finds its words in order with at
    most `_SPREAD_GAP` words between them, the last one plural too; None for another name.

    >>> _spread_name("AMD GPU").search("both Nvidia (CUDA) and AMD (ROCm) GPUs") is not None
    True
    >>> _spread_name("AMD GPU").search("AMD CPUs and, on another machine, GPUs") is None
    True
    >>> _spread_name("英伟达 GPU") is None, _spread_name("PyTorch") is None
    (True, True)
    """
    words = name.split()
    if len(words) < 2 or not all(re.fullmatch(r"[A-Za-z][\w.+\-]*", w) for w in words):
        return None
    gap = rf"(?:\W+\w+){{0,{_SPREAD_GAP}}}?\W+"
    body = gap.join(re.escape(w) for w in words)
    return re.compile(rf"(?<!\w){body}(?:e?s)?(?!\w)", re.I)


def _singular_too(word: str) -> list[str]:
    """A Latin word, and its singular where it ends in a plural "s" after a letter or digit.

    >>> _singular_too("A100s"), _singular_too("GPUs"), _singular_too("CUDA"), _singular_too("ss")
    (['A100s', 'A100'], ['GPUs', 'GPU'], ['CUDA'], ['ss'])
    """
    if re.fullmatch(r"[A-Za-z][\w.+\-]*[A-Za-z0-9]s", word) and not word.endswith("ss"):
        return [word, word[:-1]]
    return [word]


class Answerability(UnitIndex):
    """Why the sources cannot answer a question, if they cannot."""

    def entity_present(self, eid: str) -> bool:
        """Whether some document names an entity (under any of its names, the lexicon's too),
        a name of words also with a few words between them in one unit ("AMD (ROCm) GPUs"
        names the AMD GPU)."""
        names = list(self._lexicon_surfaces.get(eid, []))
        if eid in self.graph:
            entity = self.graph.entity(eid)
            names += [entity.name, *entity.aliases]
        if any(self.says(n) for n in names):
            return True
        spread = [p for p in map(_spread_name, names) if p is not None]
        return bool(spread) and any(
            p.search(u.text) for u in self.search.units if u.kind != UnitKind.CODE for p in spread
        )

    def present(self, name: str) -> bool:
        """Whether a name occurs in some document (case, spacing and dashes ignored; a graph
        entity's aliases count; a plural's singular too: "A100s" is there where "A100" is, as
        `_spread_name` reads the last word of a longer name)."""
        node = self.graph.find(name)
        if node is not None:
            entity = self.graph.entity(node)
            if any(normalize_name(n) in self._corpus_norm for n in [entity.name, *entity.aliases]):
                return True
        core = [t for t in re.split(r"[\s/]+", name) if re.search(r"\d", t) or len(t) >= 3]
        if not core:
            core = [name]
        return all(
            any(normalize_name(form) in self._corpus_norm for form in _singular_too(t))
            for t in core
        )

    def abstain_reason(
        self,
        frame: QuestionFrame,
        linked: list[str],
        ranked: list[RankedUnit],
        surfaces: list[tuple[str, int]] | None = None,
        linked_all: list[str] | None = None,
    ) -> tuple[AbstainReason, str, str] | None:
        """Why the sources cannot answer, or None. `surfaces` are the names the question's linked
        entities were found under (with positions in the question)."""
        if not ranked:
            return AbstainReason.NOT_COVERED, "nothing in the sources matches the question", ""
        start, end = frame.asking_sentence
        strict = not frame.choice or frame.yes_no

        def key_requirement(at: int) -> bool:
            return at >= 0 and (strict or start <= at < end)

        spans: list[tuple[int, int]] = []
        for (surface, _at), eid in zip(surfaces or [], linked_all or [], strict=False):
            at = frame.text.find(surface)
            if at < 0:
                continue
            spans.append((at, at + len(surface)))
            if eid.split(":")[0] in _VAGUE_PREFIXES:
                continue  # "兼容性", "latency": what is asked about, not a thing to be found
            if key_requirement(at) and not self.entity_present(eid):
                name = self.graph.entity(eid).name if eid in self.graph else surface
                return AbstainReason.UNKNOWN_NAME, f"no source mentions {name}", name
        names = named_things(frame.text)
        if _CJK_TEXT.search(frame.text):
            # capitalised Latin words in a Chinese question are names ("Caffe 和 Theano 值得学吗")
            names += [
                (m.group(0), m.start())
                for m in re.finditer(r"(?<![A-Za-z])[A-Z][\w.+\-]+", frame.text)
            ]
        # "Kestrel or Zephyr?": an alternative the question offers must be in the sources
        names += [(o.text, o.start) for o in frame.options if re.match(r"[A-Z]", o.text)]
        for name, at in names:
            inside = any(s <= at and at + len(name) <= e for s, e in spans)
            if inside or not key_requirement(at):
                continue
            if not self.present(name):
                return AbstainReason.UNKNOWN_NAME, f"no source mentions {name}", name
        things = {e for e in linked if e in self.graph and self.graph.entity(e).type in CHOOSABLE}
        if frame.quantity is not None:
            pattern = _MONEY_TEXT if frame.quantity == "money" else _RATE_TEXT
            top = [r.unit for r in ranked[: W.QUANTITY_UNITS]]
            about = [
                u for u in top if not things or u.subject in things or things & set(u.mentions)
            ]
            if not any(pattern.search(u.text + " " + " ".join(u.header)) for u in about):
                what = "prices" if frame.quantity == "money" else "that rate"
                return AbstainReason.NO_QUANTITY, f"no source gives {what}", frame.quantity
        for eid in things:
            version = version_after(frame.text, self.graph.entity(eid))
            if version and not any(
                version in u.text
                for u in self.search.by_subject.get(eid, []) + self.search.by_mention.get(eid, [])
            ):
                name = self.graph.entity(eid).name
                return (
                    AbstainReason.UNKNOWN_NAME,
                    f"no source speaks of {name} {version}",
                    f"{name} {version}",
                )
        return None
