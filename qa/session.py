"""A conversation with an `Assistant`: follow-ups are read against the previous turn.

`Session(assistant).ask(text)` answers like `Assistant.ask` and remembers the turn. A follow-up
("那如果是英伟达显卡呢？", "what about TPUs?", "and on Windows?") is read as the previous question
with what changed: a thing it names replaces the thing of the same kind in the previous question
(one piece of hardware for another, one scenario, criterion or tool for another); anything else
it adds is appended as a further constraint. The question that was answered is kept with the turn
(`Turn.read_as`) so that a user can see how a follow-up was read. `reset()` starts afresh ("New
chat").

A question that cannot be asked (empty, too long, not text) is not a turn: `check(text)` says why
in the question's language (`Rejection`), and `ask_stream` yields the assistant's rejected answer.

    >>> from qa.session import Session                              # doctest: +SKIP
    >>> chat = Session(Assistant.open(".store"))                    # doctest: +SKIP
    >>> chat.ask("昇腾 NPU 上做推理用什么引擎？").recommendations[0].name  # doctest: +SKIP
    'MindIE'
    >>> chat.ask("那如果是英伟达显卡呢？")                             # doctest: +SKIP
    >>> chat.last.read_as                                           # doctest: +SKIP
    '英伟达显卡 上做推理用什么引擎？'

The session is the only state: an `Assistant` stays immutable and shared. `Conversation` (the
turns) is plain data, so a web framework can keep it per browser session and rebuild a `Session`
around it for each request.
"""

from __future__ import annotations

import re
import unicodedata
from collections.abc import Iterator
from typing import TYPE_CHECKING, Literal

from pydantic import BaseModel, Field

from kg.errors import QuestionError
from kg.schema import NodeType
from qa.read.understand import MAX_QUESTION_CHARS, clean_question, detect_language, has_choice_cue
from qa.schema import Answer, Language, Question

if TYPE_CHECKING:
    from qa.api import AnswerEvent, Assistant

__all__ = [
    "Change",
    "Conversation",
    "Named",
    "Reading",
    "Rejection",
    "Session",
    "Turn",
    "is_follow_up_phrase",
    "kind_group",
    "rejection_of",
    "substitute",
]

_FOLLOW_UP_EN = re.compile(
    r"^(and|or|but|also|then|what about|how about|what if|and if|same|instead)\b",
    re.IGNORECASE,
)
_FOLLOW_UP_ZH = re.compile(r"^(那么?|如果|还有|另外|换成|要是|假如|那要是|改成|若)|呢[？?]?$")
#: words that make a text a question of its own (a follow-up without them only adds a constraint)
_ASKS = re.compile(
    r"\b(what|which|how|why|where|when|who|does|do|is|are|can|could|should|will|would)\b|"
    r"什么|哪|怎么|如何|吗|是否|多少|为什么|能否|可以|区别|比较",
    re.IGNORECASE,
)
#: kinds of named things that replace each other in a follow-up
_GROUPS: dict[NodeType, str] = {
    NodeType.HARDWARE: "hardware",
    NodeType.PLATFORM: "platform",
    NodeType.SCENARIO: "situation",
    NodeType.PERSONA: "situation",
    NodeType.CRITERION: "criterion",
    NodeType.LANGUAGE: "language",
    NodeType.LICENSE: "license",
    NodeType.FORMAT: "format",
    NodeType.MODEL: "model",
    NodeType.FRAMEWORK: "solution",
    NodeType.LIBRARY: "solution",
    NodeType.INFERENCE_ENGINE: "solution",
    NodeType.TOOL: "solution",
    NodeType.PARALLEL_STRATEGY: "strategy",
    NodeType.TECHNIQUE: "technique",
}

_MESSAGES: dict[str, tuple[str, str]] = {
    "empty": (
        "请输入一个问题，例如：“我是零基础，先学哪个框架？”",
        "Please type a question, e.g. “Which framework should I learn first?”",
    ),
    "too-long": (
        "问题太长了：{length} 个字符，上限是 {limit}。请一次只问一个问题。",
        "The question is too long: {length} characters; the limit is {limit}. "
        "Please ask one question at a time.",
    ),
    "rejected": ("这个问题无法处理：{detail}", "This question cannot be asked: {detail}"),
}


class Turn(BaseModel):
    """One question of a conversation: what was typed and what was answered."""

    asked: str = Field(description="the text the user typed")
    read_as: str = Field(description="the question answered (a follow-up read with its context)")
    language: Language


class Conversation(BaseModel):
    """The turns of one conversation (plain data: safe to copy, store and send)."""

    turns: list[Turn] = Field(default_factory=list)

    @property
    def last(self) -> Turn | None:
        """The latest turn, if any."""
        return self.turns[-1] if self.turns else None


class Named(BaseModel):
    """A thing a question names: where, the surface, and its kind (a `kind_group`)."""

    start: int
    end: int
    surface: str
    id: str
    group: str


class Change(BaseModel):
    """What a follow-up changed in the previous question (`before` None: added)."""

    before: str | None
    after: str


class Reading(BaseModel):
    """How a question was read: alone, or as a follow-up of the previous turn."""

    text: str = Field(description="the question to answer")
    follow_up: bool = False
    changes: list[Change] = Field(default_factory=list)


class Rejection(BaseModel):
    """Why a question cannot be asked, said once, in the question's language."""

    kind: Literal["empty", "too-long", "rejected"]
    language: Literal["zh", "en"]
    message: str
    length: int = 0


def kind_group(node_type: NodeType) -> str:
    """The kind a named thing is replaced by in a follow-up (hardware by hardware, ...).

    >>> kind_group(NodeType.HARDWARE), kind_group(NodeType.INFERENCE_ENGINE)
    ('hardware', 'solution')
    >>> kind_group(NodeType.PERSONA) == kind_group(NodeType.SCENARIO)
    True
    """
    return _GROUPS.get(node_type, node_type.value.lower())


def is_follow_up_phrase(text: str) -> bool:
    """Whether a question is worded as a follow-up.

    >>> is_follow_up_phrase("and for inference?"), is_follow_up_phrase("那推理呢？")
    (True, True)
    >>> is_follow_up_phrase("Which framework should I learn first?")
    False
    """
    stripped = text.strip()
    return bool(_FOLLOW_UP_EN.match(stripped) or _FOLLOW_UP_ZH.search(stripped))


def _ui_language(text: str, fallback: Literal["zh", "en"] = "en") -> Literal["zh", "en"]:
    """zh for a text with Chinese, en for one without, `fallback` for one without letters.

    >>> _ui_language("问题"), _ui_language("why?"), _ui_language("   ", "zh")
    ('zh', 'en', 'zh')
    """
    if not any(ch.isalpha() for ch in text):
        return fallback
    return "en" if detect_language(text) == Language.EN else "zh"


def rejection_of(text: object, fallback: Literal["zh", "en"] = "en") -> Rejection | None:
    """Why `text` cannot be asked (None: it can), in its language (`fallback` when it has no
    letters: an empty question takes the conversation's or the browser's language).

    >>> rejection_of("  ", "zh").message
    '请输入一个问题，例如：“我是零基础，先学哪个框架？”'
    >>> r = rejection_of("为什么" * 1000)
    >>> r.kind, r.language, r.length
    ('too-long', 'zh', 3000)
    >>> rejection_of("Which engine runs on AMD GPUs?") is None
    True
    """
    try:
        clean_question(text)
    except QuestionError as err:
        words = text if isinstance(text, str) else ""
        cleaned = words.strip()
        lang = _ui_language(cleaned, fallback)
        if not cleaned:
            kind: Literal["empty", "too-long", "rejected"] = "empty"
        elif len(cleaned) > MAX_QUESTION_CHARS:
            kind = "too-long"
        else:
            kind = "rejected"
        template = _MESSAGES[kind][0 if lang == "zh" else 1]
        message = template.format(length=len(cleaned), limit=MAX_QUESTION_CHARS, detail=err)
        return Rejection(kind=kind, language=lang, message=message, length=len(cleaned))
    return None


def substitute(text: str, before: list[Named], after: list[Named]) -> tuple[str, list[Change]]:
    """The previous question `text` with each thing of `after` in place of the first thing of
    the same kind in `before` (once each); things of a kind `before` lacks are left out and
    returned as additions (`Change.before` None).

    >>> old = [Named(start=0, end=4, surface="昇腾芯片", id="hardware:ascend", group="hardware")]
    >>> new = [Named(start=4, end=9, surface="英伟达显卡", id="hardware:nvidia-gpu",
    ...              group="hardware")]
    >>> substitute("昇腾芯片上做推理用什么引擎？", old, new)[0]
    '英伟达显卡上做推理用什么引擎？'
    """
    changes: list[Change] = []
    replaced: dict[int, Named] = {}
    for thing in after:
        if any(b.id == thing.id for b in before):
            continue  # named again: nothing changed
        slot = next(
            (
                i
                for i, b in enumerate(before)
                if b.group == thing.group and i not in replaced and b.id != thing.id
            ),
            None,
        )
        if slot is None:
            changes.append(Change(before=None, after=thing.surface))
        else:
            replaced[slot] = thing
            changes.append(Change(before=before[slot].surface, after=thing.surface))
    out = text
    for slot in sorted(replaced, key=lambda i: before[i].start, reverse=True):
        old = before[slot]
        out = out[: old.start] + replaced[slot].surface + out[old.end :]
    return out, changes


class Session:
    """One conversation over one assistant (see the module docstring). Not thread-safe: one
    session per user; the assistant under it is shared."""

    def __init__(self, assistant: Assistant, conversation: Conversation | None = None) -> None:
        self.assistant = assistant
        self.conversation = conversation if conversation is not None else Conversation()

    @property
    def last(self) -> Turn | None:
        """The latest turn, if any."""
        return self.conversation.last

    def reset(self) -> None:
        """Forget every turn: the next question is read on its own."""
        self.conversation = Conversation()

    def language(self, fallback: Literal["zh", "en"] = "en") -> Literal["zh", "en"]:
        """The conversation's language so far (its latest turn's), else `fallback`."""
        last = self.last
        if last is None:
            return fallback
        return "en" if last.language == Language.EN else "zh"

    def check(self, text: object, fallback: Literal["zh", "en"] = "en") -> Rejection | None:
        """Why `text` cannot be asked here (None: it can); an empty text takes the
        conversation's language, else `fallback`."""
        return rejection_of(text, self.language(fallback))

    def read(self, text: str) -> Reading:
        """How `text` is read in this conversation (raises nothing: a question the assistant
        rejects is returned as it is, and `ask` rejects it)."""
        last = self.last
        if last is None:
            return Reading(text=text)
        try:
            question = self.assistant.understand(text)
            previous = self.assistant.understand(last.read_as)
        except QuestionError:
            return Reading(text=text)
        after = self._named(question)
        if not self._is_follow_up(question, after):
            return Reading(text=text)
        before = self._named(previous)
        base = unicodedata.normalize("NFKC", previous.text)
        if len(base) == len(previous.text):  # the same offsets: keep the text as it was typed
            base = previous.text
        replaced, changes = substitute(base, before, after)
        added = [c for c in changes if c.before is None]
        if changes and not added:
            return Reading(text=replaced, follow_up=True, changes=changes)
        # something new (a constraint the previous question did not have, or no named thing
        # at all): the previous question, then the follow-up's own words
        tail = text.strip()
        if replaced.rstrip().endswith(("?", "？")) and not tail.endswith(("?", "？")):
            tail += "？" if question.language != Language.EN else "?"
        return Reading(text=f"{replaced} {tail}", follow_up=True, changes=changes)

    def ask_stream(
        self, text: str, *, use_llm: bool = True, reading: Reading | None = None
    ) -> Iterator[AnswerEvent]:
        """`Assistant.ask_stream` of the question as read in this conversation (`reading`: as
        `read(text)` already read it); the turn is remembered once the final answer is there (a
        rejected question is not a turn)."""
        if reading is None:
            reading = self.read(text) if isinstance(text, str) else Reading(text=text)
        for event in self.assistant.ask_stream(reading.text, use_llm=use_llm):
            if event.kind == "final" and event.answer is not None:
                self._remember(text, reading, event.answer)
            yield event

    def ask(self, text: str, *, use_llm: bool = True) -> Answer:
        """One answer in this conversation (follow-ups read against the previous turn)."""
        final: Answer | None = None
        for event in self.ask_stream(text, use_llm=use_llm):
            if event.kind == "final":
                final = event.answer
        assert final is not None
        return final

    # -- pieces -------------------------------------------------------------------------------
    def _remember(self, text: str, reading: Reading, answer: Answer) -> None:
        from qa.schema import FallbackKind

        if answer.fallback is not None and answer.fallback.kind is FallbackKind.REJECTED:
            return
        turn = Turn(asked=text, read_as=reading.text, language=detect_language(reading.text))
        self.conversation = Conversation(turns=[*self.conversation.turns, turn])

    def _is_follow_up(self, question: Question, named: list[Named]) -> bool:
        """A follow-up is worded as one, names nothing the graph or lexicon knows, or names only
        constraints without asking anything of its own ("on NVIDIA GPUs?")."""
        text = question.text
        if is_follow_up_phrase(text) or not named:
            return True
        return not has_choice_cue(text) and not _ASKS.search(text)

    def _named(self, question: Question) -> list[Named]:
        """What a question names, from the graph and the lexicon, in order, without overlaps
        (spans in the NFKC form of its text, which linking reads)."""
        graph, lexicon = self.assistant.graph, self.assistant.lexicon
        text = unicodedata.normalize("NFKC", question.text)
        found: list[Named] = []
        for entity in question.entities:
            if entity.start < 0 or entity.id not in graph:
                continue
            kind = graph.entity(entity.id).type
            end = entity.start + len(entity.surface)
            found.append(
                Named(
                    start=entity.start,
                    end=end,
                    surface=text[entity.start : end],
                    id=entity.id,
                    group=kind_group(kind),
                )
            )
        for mention in lexicon.entity_mentions(text):
            if any(n.start < mention.end and mention.start < n.end for n in found):
                continue
            entry = lexicon.entries.get(mention.key)
            if entry is None:
                continue
            found.append(
                Named(
                    start=mention.start,
                    end=mention.end,
                    surface=mention.surface,
                    id=mention.key,
                    group=kind_group(entry.type),
                )
            )
        found.sort(key=lambda n: n.start)
        return _joined(found, text)


def _joined(named: list[Named], text: str) -> list[Named]:
    """Things of one kind written next to each other as one ("Ascend NPUs": a chip family and
    a kind of chip), so that a follow-up replaces the whole phrase.

    >>> a = Named(start=0, end=6, surface="Ascend", id="hardware:ascend", group="hardware")
    >>> b = Named(start=7, end=11, surface="NPUs", id="hardware:npu", group="hardware")
    >>> [(n.surface, n.id) for n in _joined([a, b], "Ascend NPUs")]
    [('Ascend NPUs', 'hardware:ascend')]
    """
    out: list[Named] = []
    for thing in named:
        last = out[-1] if out else None
        if (
            last is not None
            and last.group == thing.group
            and not text[last.end : thing.start].strip(" -")
        ):
            out[-1] = last.model_copy(
                update={"end": thing.end, "surface": text[last.start : thing.end]}
            )
        else:
            out.append(thing)
    return out
