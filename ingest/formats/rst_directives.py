"""Directives docutils does not know (Sphinx's and its extensions'), read instead of refused.

Plain docutils turns a directive it does not know (`.. toctree::`, `.. autoclass::`,
`.. tab-set::`), or a known one with an option it does not know (Sphinx's
`.. code-block:: python` with `:caption:`), into an error and drops its content. Here:

- code directives (`code-block`, `sourcecode`, `code`, `testcode`, `jupyter-execute`, ...) take
  any option and give a literal block with the language of their argument;
- listing directives (`toctree`, `autosummary`, ...) whose content is a list of page or object
  names give nothing (their lines are no statement);
- every other name the document uses and docutils does not know gives a container of its
  content, parsed as reStructuredText, with the option values that read as text (a card's
  `:header:` and `:description:`) as paragraphs.

`register_for(text)` registers these for the directive names a document uses, once per name
and process; docutils' own directives are left as they are, except the code ones.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any, ClassVar

from docutils import nodes
from docutils.parsers.rst import Directive, directives
from docutils.parsers.rst.languages import en

__all__ = ["CODE_DIRECTIVES", "LISTING_DIRECTIVES", "register_for"]

#: Directives whose content is code (the argument, if any, names its language).
CODE_DIRECTIVES = frozenset(
    """
    code code-block sourcecode testcode testsetup testcleanup doctest jupyter-execute ipython
    code-cell literalinclude highlight prompt
    """.split()  # noqa: SIM905 - a word list reads best as words
)
#: Directives whose content lists names of pages or objects, not statements.
LISTING_DIRECTIVES = frozenset(
    """
    toctree autosummary automodule autoclass autofunction automethod autoattribute autodata
    autoexception currentmodule module index tabularcolumns productionlist bibliography
    mermaid graphviz digraph graph inheritance-diagram plot image figure-md
    """.split()  # noqa: SIM905 - a word list reads best as words
)
_DIRECTIVE = re.compile(r"(?m)^[ \t]*\.\.[ \t]+((?:(?!_)\w)+(?:[-._+:](?:(?!_)\w)+)*)[ \t]*::")
_TEXT_OPTION = re.compile(r"\w.*\s\S")  # two words or more
_NOT_TEXT = re.compile(r"https?:|/|\.html?\b|[{}=<>]|^[\w.-]+$")
_registered: set[str] = set()


class _AnyOption(dict[str, Callable[[str], Any]]):
    """An option spec that takes every option, its value as written (never empty: docutils
    reads no options for an empty spec)."""

    def __init__(self) -> None:
        super().__init__({"class": directives.class_option, "name": directives.unchanged})

    def __missing__(self, key: str) -> Callable[[str], Any]:
        return directives.unchanged


class _Code(Directive):
    """Code with any options: a literal block in the language of the argument."""

    has_content = True
    optional_arguments = 1
    final_argument_whitespace = True
    option_spec: ClassVar[dict[str, Callable[[str], Any]]] = _AnyOption()

    def run(self) -> list[nodes.Node]:
        code = "\n".join(self.content)
        if not code.strip():
            return []
        language = self.arguments[0].split()[0] if self.arguments else ""
        block = nodes.literal_block(code, code, language=language)
        block.line = self.content_offset + 1
        return [block]


class _Listing(Directive):
    """Content that names pages or objects: nothing to read."""

    has_content = True
    optional_arguments = 99
    final_argument_whitespace = True
    option_spec: ClassVar[dict[str, Callable[[str], Any]]] = _AnyOption()

    def run(self) -> list[nodes.Node]:
        return []


class _Container(Directive):
    """A directive docutils does not know: its content read as reStructuredText, its text-like
    option values as paragraphs."""

    has_content = True
    optional_arguments = 99
    final_argument_whitespace = True
    option_spec: ClassVar[dict[str, Callable[[str], Any]]] = _AnyOption()

    def run(self) -> list[nodes.Node]:
        node = nodes.container(classes=["kgqa-directive", self.name])
        for value in self.options.values():
            text = str(value or "").strip()
            if "\n" not in text and _TEXT_OPTION.match(text) and not _NOT_TEXT.search(text):
                node += nodes.paragraph(text, text)
        if self.content:
            self.state.nested_parse(self.content, self.content_offset, node)
        return [node] if node.children else []


def _known(name: str) -> bool:
    """Whether docutils (in English) has a directive of this name."""
    return name in en.directives


def register_for(text: str) -> None:
    """Register the stand-ins above for the directive names `text` uses (see the module
    docstring); the code directives always."""
    names = {m.group(1).lower() for m in _DIRECTIVE.finditer(text)} | {"code", "code-block"}
    for name in sorted(names - _registered):
        if name in CODE_DIRECTIVES or name.split(":")[-1] in CODE_DIRECTIVES:
            directives.register_directive(name, _Code)
        elif name in LISTING_DIRECTIVES or name.split(":")[-1] in LISTING_DIRECTIVES:
            directives.register_directive(name, _Listing)
        elif not _known(name):
            directives.register_directive(name, _Container)
        _registered.add(name)
