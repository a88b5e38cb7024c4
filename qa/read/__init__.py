"""Read: the question, parsed once — validated and linked to the graph (`understand`), framed
(`frame`: what it asks, its options, the kind of thing, a quantity) and its shapes (`shapes`:
parts, a second part that follows the first, the relations it asks about)."""

from qa.read.frame import QuestionFrame, strip_injection
from qa.read.understand import QuestionReader, clean_question

__all__ = ["QuestionFrame", "QuestionReader", "clean_question", "strip_injection"]
