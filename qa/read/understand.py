"""Question understanding: validate, detect language and kind, link entities and situation terms.

Linking tolerates spacing ("Tensor flow"), aliases ("英伟达显卡") and typos ("pytorh"): lexicon and
graph surface forms first, then fuzzy matching of leftover Latin words against known names.
Text in a question is data: instructions inside it ("ignore previous instructions") are noted,
never followed.
"""

from __future__ import annotations

import re
import unicodedata
from functools import cached_property

from kg import cues
from kg.errors import QuestionError
from kg.graph import KnowledgeGraph
from kg.lexicon import Lexicon, surface_pattern
from kg.schema import NodeType, normalize_name
from qa.schema import Language, LinkedEntity, Question, QuestionKind

__all__ = [
    "MAX_QUESTION_CHARS",
    "QuestionReader",
    "clean_question",
    "detect_kind",
    "detect_language",
    "gpu_count",
    "has_choice_cue",
]

MAX_QUESTION_CHARS = 2000

#: Entity types a question is about (an unknown criterion or concept is not a topic).
_TOPIC_TYPES = frozenset(
    {
        NodeType.FRAMEWORK,
        NodeType.LIBRARY,
        NodeType.INFERENCE_ENGINE,
        NodeType.TOOL,
        NodeType.HARDWARE,
        NodeType.MODEL,
        NodeType.ORGANIZATION,
        NodeType.FORMAT,
    }
)
_CJK = re.compile(r"[\u4e00-\u9fff]")
_LATIN_WORD = re.compile(r"[A-Za-z][A-Za-z0-9.+#&\-]*")
_INJECTION = cues.pattern("question.injection")
_KIND_PATTERNS: list[tuple[QuestionKind, re.Pattern[str]]] = [
    (QuestionKind.CHOOSE, cues.pattern("question.kind.choose")),
    (QuestionKind.COMPARE, cues.pattern("question.kind.compare")),
    (QuestionKind.HOW_TO, cues.pattern("question.kind.how_to")),
    (QuestionKind.FACT, cues.pattern("question.kind.fact")),
]
#: "A 还是 B": a comparison whatever it names
_COMPARES_ANYWAY = cues.pattern("question.kind.compare_always")


def clean_question(text: object) -> str:
    """Reject what is not a usable question; strip control characters and outer space.

    >>> clean_question("  PyTorch\\x00 还是 JAX？ ")
    'PyTorch 还是 JAX？'
    """
    if not isinstance(text, str):
        raise QuestionError("a question must be text")
    cleaned = "".join(
        ch if ch in "\n\t" or unicodedata.category(ch)[0] != "C" else "" for ch in text
    ).strip()
    if not cleaned:
        raise QuestionError(
            "the question is empty: ask something, e.g. “我是零基础，先学哪个框架？”"
        )
    if len(cleaned) > MAX_QUESTION_CHARS:
        raise QuestionError(
            f"the question is {len(cleaned)} characters long; the limit is {MAX_QUESTION_CHARS}: "
            "ask one question at a time"
        )
    return cleaned


def has_choice_cue(text: str) -> bool:
    """Whether the question's words ask to pick something ("选哪个", "which … should", "recommend").

    >>> has_choice_cue("PyTorch 和 JAX 该选哪个？"), has_choice_cue("What exactly does FSDP shard?")
    (True, False)
    """
    return dict(_KIND_PATTERNS)[QuestionKind.CHOOSE].search(text) is not None


def detect_language(text: str) -> Language:
    """zh, en or mixed, by the share of CJK characters among letters.

    >>> detect_language("先学哪个框架？"), detect_language("Which one?")
    (<Language.ZH: 'zh'>, <Language.EN: 'en'>)
    >>> detect_language("PyTorch 还是 JAX 更适合研究")
    <Language.ZH: 'zh'>
    """
    cjk = len(_CJK.findall(text))
    latin = sum(len(w) for w in _LATIN_WORD.findall(text))
    if cjk == 0:
        return Language.EN
    if latin == 0 or cjk * 2 >= latin:
        return Language.ZH
    return Language.MIXED


def detect_kind(text: str, solution_mentions: int) -> QuestionKind:
    """choose / compare / fact / how-to from cue words.

    >>> detect_kind("DDP 和 FSDP 有什么区别？", 2)
    <QuestionKind.COMPARE: 'compare'>
    >>> detect_kind("We use Foo or Bar for serving; which library wins?", 2)
    <QuestionKind.CHOOSE: 'choose'>
    >>> detect_kind("Which backend does Keras use by default?", 1)
    <QuestionKind.FACT: 'fact'>
    """
    for kind, pattern in _KIND_PATTERNS:
        if pattern.search(text):
            if (
                kind == QuestionKind.COMPARE
                and solution_mentions < 2
                and not _COMPARES_ANYWAY.search(text)
            ):
                continue
            return kind
    return QuestionKind.CHOOSE


_MORE = re.compile(cues.alternatives("question.count.more"), re.I)
_FEWER = re.compile(cues.alternatives("question.count.fewer"), re.I)
_GPU_COUNT = re.compile(
    rf"({_MORE.pattern}|{cues.alternatives('question.count.at_least')}|{_FEWER.pattern})?\s*"
    rf"(\d+)\s*{cues.alternatives('question.count.classifier')}?\s*"
    rf"{cues.alternatives('question.count.gpu')}",
    re.I,
)


def gpu_count(text: str) -> int | None:
    """The number of GPUs a question states.

    >>> gpu_count("单机 8 张卡训练"), gpu_count("on 16 GPUs"), gpu_count("more than 64 GPUs")
    (8, 16, 65)
    """
    match = _GPU_COUNT.search(text)
    if match is None:
        return None
    count = int(match.group(2))
    if match.group(1) and _MORE.fullmatch(match.group(1)):
        return count + 1
    if match.group(1) and _FEWER.fullmatch(match.group(1)):
        return max(count - 1, 0)
    return count


class QuestionReader:
    """Links questions to one graph; build once per store, share across threads (read-only)."""

    def __init__(self, graph: KnowledgeGraph, lexicon: Lexicon) -> None:
        self.graph = graph
        self.lexicon = lexicon

    @cached_property
    def _graph_names(self) -> tuple[re.Pattern[str], dict[str, str]]:
        names: dict[str, str] = {}
        for entity in self.graph.entities():
            for name in [entity.name, *entity.aliases]:
                if len(normalize_name(name)) >= 2 and len(name) <= 30:
                    names.setdefault(normalize_name(name), entity.id)
        surfaces = sorted(
            {
                n
                for e in self.graph.entities()
                for n in [e.name, *e.aliases]
                if normalize_name(n) in names
            },
            key=len,
            reverse=True,
        )
        pattern = re.compile("|".join(surface_pattern(s) for s in surfaces) or "(?!)", re.I)
        return pattern, names

    @cached_property
    def _fuzzy_choices(self) -> dict[str, str]:
        choices: dict[str, str] = {}
        for entity in self.graph.entities():
            for name in [entity.name, *entity.aliases]:
                key = normalize_name(name)
                if re.fullmatch(r"[a-z0-9.+#&]{4,}", key):
                    choices.setdefault(key, entity.id)
        return choices

    def read(self, raw: object) -> Question:
        """Validate and link a question."""
        original = clean_question(raw)
        # full-width Latin from Chinese input methods ("ＰｙＴｏｒｃｈ") matches like ASCII; the
        # question keeps its own text
        text = unicodedata.normalize("NFKC", original)
        linked: list[LinkedEntity] = []
        covered: list[tuple[int, int]] = []
        unknown: list[str] = []
        for mention in self.lexicon.entity_mentions(text):
            covered.append((mention.start, mention.end))
            if mention.key in self.graph:
                linked.append(
                    LinkedEntity(
                        id=mention.key, surface=mention.surface, how="lexicon", start=mention.start
                    )
                )
            elif self.lexicon.entries[mention.key].type in _TOPIC_TYPES and not self._named_within(
                mention.key
            ):
                unknown.append(self.lexicon.entries[mention.key].name)
        kept = [
            i
            for i, ch in enumerate(text)
            if not (
                ch.isspace()
                and 0 < i < len(text) - 1
                and text[i - 1].isascii()
                and text[i - 1].isalpha()
                and text[i + 1].isascii()
                and text[i + 1].isalpha()
            )
        ]
        if len(kept) != len(text):
            # "v llm", "open vino": spacing typos inside a name
            compact = "".join(text[i] for i in kept)
            known = {e.id for e in linked}
            for mention in self.lexicon.entity_mentions(compact):
                if mention.key in self.graph and mention.key not in known:
                    known.add(mention.key)
                    linked.append(
                        LinkedEntity(
                            id=mention.key,
                            surface=mention.surface,
                            how="lexicon",
                            start=kept[mention.start],
                        )
                    )
        pattern, names = self._graph_names
        for match in pattern.finditer(text):
            if any(s < match.end() and match.start() < e for s, e in covered):
                continue
            node = names.get(normalize_name(match.group(0)))
            if node is not None:
                covered.append((match.start(), match.end()))
                linked.append(
                    LinkedEntity(id=node, surface=match.group(0), how="graph", start=match.start())
                )
        apart = self._spelled_apart(text, covered, names)
        # a name spelled apart outranks another, shorter one inside it ("LLaMA" in
        # "LLaMA-Factory")
        linked = [
            e
            for e in linked
            if not any(
                a.id != e.id
                and a.start <= e.start
                and e.start + len(e.surface) <= a.start + len(a.surface)
                for a in apart
            )
        ]
        spans = [(e.start, e.start + len(e.surface)) for e in linked]
        linked.extend(
            e
            for e in apart
            if not any(s < e.start + len(e.surface) and e.start < t for s, t in spans)
        )
        linked.extend(self._fuzzy(text, covered))
        linked.sort(key=lambda e: e.start)
        solution_mentions = len(
            {e.id for e in linked if not e.id.startswith(("scenario", "persona", "criterion"))}
        )
        return Question(
            text=original,
            language=detect_language(text),
            kind=detect_kind(text, solution_mentions),
            entities=linked,
            unknown_entities=sorted(set(unknown)),
            terms=self._terms(text),
            injection=bool(_INJECTION.search(text)),
        )

    def _named_within(self, key: str) -> bool:
        """Whether a lexicon entity absent from the graph is part of a graph name ("Intel" in
        "Intel Hardware"): then the sources do speak of it."""
        entry = self.lexicon.entries[key]
        surfaces = {normalize_name(s) for s in entry.surfaces}
        return any(any(s and s in name for s in surfaces) for name in self._graph_names[1])

    def _terms(self, text: str) -> set[str]:
        """Thesaurus keys, plus `multi-gpu` when the question states two or more GPUs."""
        terms = self.lexicon.term_keys(text)
        count = gpu_count(text)
        if count is not None and count >= 2 and "multi-gpu" in self.lexicon.terms:
            terms.add("multi-gpu")
        return terms

    def _spelled_apart(
        self, text: str, covered: list[tuple[int, int]], names: dict[str, str]
    ) -> list[LinkedEntity]:
        """Names written with other spacing or dashes: "LLaMA-Factory" for LlamaFactory, "Flash
        Attention" for FlashAttention (runs of up to three words, normalised, looked up)."""
        words = [m for m in re.finditer(r"[A-Za-z0-9][\w.+]*", text)]
        found = []
        i = 0
        while i < len(words):
            hit = None
            for n in (3, 2, 1):
                if i + n > len(words):
                    continue
                start, end = words[i].start(), words[i + n - 1].end()
                gap = text[words[i].end() : end]
                if n > 1 and re.search(r"[^\s\-_A-Za-z0-9.+]", gap):
                    continue
                key = normalize_name(text[start:end])
                if len(key) >= 4 and key in names:
                    if not any(
                        s < end
                        and start < e
                        and not (start <= s and e <= end and e - s < end - start)
                        for s, e in covered
                    ):
                        hit = (start, end, names[key], n)
                    break
            if hit is None:
                i += 1
                continue
            start, end, node, n = hit
            covered.append((start, end))
            found.append(LinkedEntity(id=node, surface=text[start:end], how="graph", start=start))
            i += n
        return found

    def _fuzzy(self, text: str, covered: list[tuple[int, int]]) -> list[LinkedEntity]:
        from rapidfuzz import fuzz, process

        found = []
        for match in _LATIN_WORD.finditer(text):
            word = normalize_name(match.group(0))
            if len(word) < 5 or any(s < match.end() and match.start() < e for s, e in covered):
                continue
            if self.lexicon.term_keys(match.group(0)):
                continue
            best = process.extractOne(
                word, list(self._fuzzy_choices), scorer=fuzz.ratio, score_cutoff=88
            )
            if best is not None:
                found.append(
                    LinkedEntity(
                        id=self._fuzzy_choices[best[0]],
                        surface=match.group(0),
                        how="fuzzy",
                        start=match.start(),
                    )
                )
        return found
