"""Per-session chat context: which questions are follow-ups, and what they are read as.

A follow-up ("and for inference?", "那推理呢？") has no subject of its own; it is read together with
the previous question of the same session. The rule is deliberately simple and visible to the user
(the chat shows what the question was read as):

- a question that starts like a follow-up ("and ...", "what about ...", "那 ...", "...呢？") or
- a question that names no graph entity and no known term

is prefixed with the previous question of the session.
"""

from __future__ import annotations

import re

from pydantic import BaseModel, Field

from kg.errors import QuestionError
from qa.api import Assistant

__all__ = ["ChatState", "is_follow_up_phrase", "resolve_question"]

_FOLLOW_UP_EN = re.compile(
    r"^(and|or|but|also|then|what about|how about|what if|and if|same)\b", re.IGNORECASE
)
_FOLLOW_UP_ZH = re.compile(r"^(那么?|如果|还有|另外|换成|要是|假如|那要是)|呢[？?]?$")


class ChatState(BaseModel):
    """What one browser session remembers between questions."""

    questions: list[str] = Field(default_factory=list, description="questions as they were read")

    @property
    def previous(self) -> str | None:
        """The last question as it was read (with its own context), if any."""
        return self.questions[-1] if self.questions else None


def is_follow_up_phrase(text: str) -> bool:
    """Whether a question is worded as a follow-up.

    >>> is_follow_up_phrase("and for inference?"), is_follow_up_phrase("那推理呢？")
    (True, True)
    >>> is_follow_up_phrase("Which framework should I learn first?")
    False
    """
    stripped = text.strip()
    return bool(_FOLLOW_UP_EN.match(stripped) or _FOLLOW_UP_ZH.search(stripped))


def resolve_question(assistant: Assistant, text: str, previous: str | None) -> str:
    """The question to ask: `text` alone, or `previous + " " + text` when it is a follow-up."""
    if previous is None:
        return text
    if is_follow_up_phrase(text):
        return f"{previous} {text.strip()}"
    try:
        parsed = assistant.understand(text)
    except QuestionError:
        return text
    if not parsed.entity_ids and not parsed.terms:
        return f"{previous} {text.strip()}"
    return text
