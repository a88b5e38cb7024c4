"""Read inline Markdown and HTML as a person does: text without its markup, mapped back to the file.

`clean_inline` returns a `CleanText`: the text a reader sees (link text without the URL, a
reStructuredText link's too, no badges or images, no HTML tags, emphasis markers or backticks,
no emoji, entities decoded, whitespace collapsed) and, for every character of it, the offset of
the character in the original it came from. A span of the clean text maps back to a verbatim
span of the original (`CleanText.source_span`), so a quote can be shown clean and still be
checked against the file.

Every rule is linear in the input (no nested quantifiers over unbounded text): a hostile 1 MB line
costs one pass.
"""

from __future__ import annotations

import html
import re
import unicodedata
from dataclasses import dataclass

from ingest.structure.inline import is_cjk
from ingest.structure.items import list_marker

__all__ = [
    "CleanText",
    "clean_inline",
    "code_fence",
    "emphasized",
    "is_decorative",
    "is_link_alone",
    "strip_markup",
]

#: Chinese characters and punctuation, full-width forms
_CJK = r"\u3000-\u303f\u4e00-\u9fff\uff00-\uffef"
# One alternation, tried left to right at each position: the first group that matches decides.
_TOKEN = re.compile(
    r"(?P<comment><!--.*?(?:-->|\Z))"
    r"|(?P<quote>^[ \t]*(?:>[ \t]?)+)"
    r"|(?P<alert>\\?\[!(?:NOTE|TIP|IMPORTANT|WARNING|CAUTION)\\?\])"
    r"|(?P<titled>:(?:ref|doc|term):`(?P<xtext>[^`<\n]{1,500}?)\s*<[^`<>\n]{1,1000}>`)"
    r"|(?P<xref>:(?:numref|eqref|ref|label|doc|cite[tp]?):`[^`\n]{0,200}`)"
    r"|(?P<shortcode>(?<![\w:]):(?=[a-z0-9_+\-]*[a-z+\-])[a-z0-9+\-][a-z0-9_+\-]{1,30}:(?![\w:]))"
    r"|(?P<image>!\[[^\]\n]{0,500}\]\([^)\n]{0,1000}\))"
    r"|(?P<refimage>!\[[^\]\n]{0,500}\]\[[^\]\n]{0,200}\])"
    r"|(?P<link>\[(?P<ltext>[^\[\]\n]{0,500}(?:\[[^\[\]\n]{0,200}\][^\[\]\n]{0,500})*)\]"
    r"(?:\((?P<lurl>[^()\s]{0,1000}(?:\([^()\s]{0,200}\)[^()\s]{0,500})*)(?:\s+\"[^\"\n]{0,200}\")?\)"
    r"|\[[^\]\n]{0,200}\]))"
    r"|(?P<footnote>\[\^[^\]\n]{1,40}\])"
    r"|(?P<autolink><(?:https?|ftp|mailto):[^>\s]{1,1000}>)"
    r"|(?P<url>\b(?:https?|ftp)://[^\s<>\"')\]]{1,1000})"
    r"|(?P<br><br\s*/?>)"
    r"|(?P<tag></?[A-Za-z][A-Za-z0-9-]{0,20}(?:\s+[^<>]{0,2000})?/?>)"
    r"|(?P<anchor>\{#[\w\-.:]{1,100}\})"
    r"|(?P<entity>&(?:[A-Za-z]{2,10}|#\d{1,7}|#x[0-9A-Fa-f]{1,6});)"
    rf"|(?P<nullspace>(?<=[{_CJK}`])\\ |\\ (?=[{_CJK}`]))"
    r"|(?P<escape>\\[\\`*_{}\[\]()#+\-.!|~<>])"
    r"|(?P<rstlink>`(?P<rtext>[^`<\n]{1,500}?)\s*<[^`<>\n]{1,1000}>`__?)"
    r"|(?P<codespan>(?P<ticks>`+)(?P<ctext>.+?)(?P=ticks))"
    r"|(?P<code>`+)"
    r"|(?P<emph>\*{1,3}(?=\S)|(?<=\S)\*{1,3}|_{2,3}|~~|(?<![A-Za-z0-9])_(?=\S)|(?<=\S)_(?![A-Za-z0-9]))",
    re.DOTALL | re.MULTILINE,
)
_LINK_TAIL = re.compile(
    r"\]\([^()\s]{0,1000}(?:\([^()\s]{0,200}\)[^()\s]{0,500})*(?:\s+\"[^\"\n]{0,200}\")?\)|\]\[[^\]\n]{0,200}\]"
)
_DROP_CATEGORIES = {"So", "Sk", "Cf", "Co", "Cs", "Cn"}
_KEEP_SYMBOLS = set("★☆✓✔✗✘✅❌±×÷°→←↑↓⇒•·©^`")
_DROP_SYMBOLS = set("™®\ufe0f\u200d")


def _dropped(ch: str) -> bool:
    """Emoji, pictographs, trademark signs, variation selectors and invisible format characters.

    >>> [_dropped(c) for c in "a™🚀✅中"]
    [False, True, True, False, False]
    """
    if ch in _KEEP_SYMBOLS:
        return False
    if ch in _DROP_SYMBOLS:
        return True
    return unicodedata.category(ch) in _DROP_CATEGORIES


@dataclass(frozen=True)
class CleanText:
    """Text without markup, and for each of its characters the span of the original it came
    from (`offsets` its start, `ends` its end: an entity `&lt;` is one character of five)."""

    text: str
    offsets: tuple[int, ...]
    ends: tuple[int, ...] = ()
    source: str = ""

    def source_span(self, start: int, end: int) -> tuple[int, int]:
        """The original span that clean characters `[start, end)` came from, widened to the
        markup that wraps its edges (a link's brackets and URL, emphasis, backticks), so that
        the quote reads back as the same text.

        >>> c = clean_inline("see [PyTorch](https://pytorch.org) now")
        >>> c.text, c.source_span(4, 11)
        ('see PyTorch now', (4, 34))
        """
        if start >= end or not self.offsets:
            at = self.offsets[start] if start < len(self.offsets) else 0
            return at, at
        a = self.offsets[start]
        b = self.ends[end - 1] if self.ends else self.offsets[end - 1] + 1
        src = self.source
        if not src:
            return a, b
        # emphasis, backticks and escapes right around the edges
        while (
            a > 0
            and src[a - 1] in "*_`~\\"
            and not (src[a - 1] == "_" and a > 1 and src[a - 2].isalnum())
        ):
            a -= 1
        while b < len(src) and src[b] in "*_`~":
            b += 1
        # a link's brackets and URL when the span holds its text's first or last character
        # (a link cut in two stays out: "[GPUs" of "[GPUs 框架](u)" is no quote)
        if (
            a > 0
            and src[a - 1] == "["
            and (re.search(r"\]\(|\]\[", src[a:b]) or _LINK_TAIL.match(src, b))
        ):
            a -= 1
        tail = _LINK_TAIL.match(src, b)
        if tail is not None and src.rfind("[", 0, b) >= a:
            b = tail.end()
        while b < len(src) and src[b] in "*_`~":
            b += 1
        while a > 0 and src[a - 1] in "*_`~":
            a -= 1
        return a, b

    def __len__(self) -> int:
        return len(self.text)


class _Builder:
    """Accumulates clean characters with their source offsets, collapsing whitespace; a line
    break between two Chinese characters (`is_cjk`: ideographs, CJK and full-width
    punctuation) is no space (CSS's segment-break rule for wide characters: a Chinese
    paragraph wrapped in its file, or in a PDF's text layer, reads as one line: "权重剪\n枝"
    is "权重剪枝")."""

    def __init__(self, source: str) -> None:
        self.source = source
        self.chars: list[str] = []
        self.offsets: list[int] = []
        self.ends: list[int] = []
        self.breaks: set[int] = set()  # the spaces that hold a line break

    def add(self, text: str, start: int) -> None:
        for i, ch in enumerate(text):
            self.char(ch, start + i)

    def char(self, ch: str, at: int, end: int | None = None, *, literal: bool = False) -> None:
        if ch.isspace():
            if self.chars and self.chars[-1] != " ":
                self.chars.append(" ")
                self.offsets.append(at)
                self.ends.append(at + 1)
            if ch == "\n" and self.chars and self.chars[-1] == " ":
                self.breaks.add(len(self.chars) - 1)
            return
        if not literal and _dropped(ch):
            return
        self.chars.append(ch)
        self.offsets.append(at)
        self.ends.append(at + 1 if end is None else end)

    def space(self, at: int) -> None:
        self.char(" ", at)

    def build(self) -> CleanText:
        joined = {
            i
            for i in self.breaks
            if 0 < i < len(self.chars) - 1
            and is_cjk(self.chars[i - 1])
            and is_cjk(self.chars[i + 1])
        }
        if joined:
            keep = [i for i in range(len(self.chars)) if i not in joined]
            self.chars = [self.chars[i] for i in keep]
            self.offsets = [self.offsets[i] for i in keep]
            self.ends = [self.ends[i] for i in keep]
        while self.chars and self.chars[-1] == " ":
            self.chars.pop()
            self.offsets.pop()
            self.ends.pop()
        lead = 0
        while lead < len(self.chars) and self.chars[lead] == " ":
            lead += 1
        return CleanText(
            "".join(self.chars[lead:]),
            tuple(self.offsets[lead:]),
            tuple(self.ends[lead:]),
            self.source,
        )


def _clean_into(out: _Builder, source: str, start: int, end: int) -> None:
    pos = start
    for match in _TOKEN.finditer(source, start, end):
        out.add(source[pos : match.start()], pos)
        pos = match.end()
        kind = match.lastgroup
        if kind == "link":
            text_start = match.start("ltext")
            _clean_into(out, source, text_start, match.end("ltext"))
        elif kind == "titled":  # a cross-reference's own title (`:doc:`the guide <path>``)
            _clean_into(out, source, match.start("xtext"), match.end("xtext"))
        elif kind == "rstlink":  # reStructuredText's `text <url>`_: its text
            _clean_into(out, source, match.start("rtext"), match.end("rtext"))
        elif kind == "br":
            out.space(match.start())
        elif kind == "tag":
            out.space(match.start())  # "<td>a</td><td>b</td>" reads as "a b"
        elif kind == "entity":
            decoded = html.unescape(match.group(0))
            for ch in decoded:
                out.char(ch, match.start(), match.end())
        elif kind == "escape":
            out.char(match.group(0)[1], match.start(), match.end())
        elif kind == "codespan":
            # code is literal: `__init__.py` and `**kwargs` keep their underscores and stars
            text_start = match.start("ctext")
            for i, ch in enumerate(match.group("ctext")):
                out.char(ch, text_start + i, literal=True)
        elif kind == "emph" or kind == "code":
            continue
        # comment, quote, alert, a cross-reference's target (`:numref:`fig_gpu``), shortcode,
        # image, refimage, footnote, autolink, url, anchor, and reStructuredText's escaped
        # space ("用\ ``x``\ 训练": it joins inline markup to the Chinese around it): dropped
    out.add(source[pos:end], pos)


def clean_inline(source: str, start: int = 0, end: int | None = None) -> CleanText:
    """The readable text of `source[start:end]` with a map back into `source`.

    >>> clean_inline("**LocalAI** is the [open-source](http://x.y) AI engine 🚀").text
    'LocalAI is the open-source AI engine'
    >>> clean_inline("[![badge](https://img.shields.io/x.svg)](https://ci) Candle").text
    'Candle'
    >>> clean_inline("OpenVINO™ runs on <b>Intel</b>&nbsp;GPUs").text
    'OpenVINO runs on Intel GPUs'
    >>> clean_inline("use `jax.jit` and snake_case_names").text
    'use jax.jit and snake_case_names'
    >>> clean_inline("Install `Open MPI <https://x.y/faq/?c=b>`__ first.").text
    'Install Open MPI first.'
    >>> clean_inline("As :numref:`fig_gpu` shows, :class:`Ring` is fast.").text
    'As shows, Ring is fast.'
    >>> clean_inline("Read :doc:`the tuning guide <../tuning>` or :ref:`ring-setup`.").text
    'Read the tuning guide or .'
    >>> clean_inline("使用\\\\ ``paddle.amp.GradScaler``\\\\ 缩放 loss").text
    '使用paddle.amp.GradScaler缩放 loss'
    >>> clean_inline("把权重拆成\\n几份存好，\\n再用 Quill\\n加载").text
    '把权重拆成几份存好，再用 Quill 加载'
    """
    stop = len(source) if end is None else end
    out = _Builder(source)
    _clean_into(out, source, start, stop)
    return out.build()


def strip_markup(text: str) -> str:
    """`clean_inline(text).text`: the readable text only.

    >>> strip_markup("## [Install](#install) ⚡")
    '## Install'
    """
    return clean_inline(text).text


def emphasized(source: str) -> list[str]:
    """The texts a writer set apart inline: bold or italic spans and code spans, clean, in order.

    >>> emphasized("用 **分组参数切片的数据并行** 和 `tensor_parallel_size`；*italic* too")
    ['分组参数切片的数据并行', 'tensor_parallel_size', 'italic']
    >>> emphasized("no ** pair here"), emphasized("**open only")
    ([], [])
    """
    marks: list[tuple[str, int, int]] = []  # (marker, start, end); "`" for a code span
    for match in _TOKEN.finditer(source):
        kind = match.lastgroup
        if kind == "codespan":
            marks.append(("`", match.start("ctext"), match.end("ctext")))
        elif kind == "emph":
            if marks and marks[-1][2] == match.start() and marks[-1][0] != "`":
                # a closing "**" before a space tokenizes as two "*": one marker
                marker, start, _end = marks.pop()
                marks.append((marker + match.group(0), start, match.end()))
            else:
                marks.append((match.group(0), match.start(), match.end()))
    found: list[str] = []
    opened: dict[str, int] = {}  # an open emphasis marker -> where the text after it starts
    for marker, start, end in marks:
        if marker == "`":
            text = source[start:end].strip()
        elif marker in opened:
            text = clean_inline(source, opened.pop(marker), start).text
        else:
            if marker != "~~":
                opened[marker] = end
            continue
        if text:
            found.append(text)
    return found


_WORDY = re.compile(r"[A-Za-z]{2,}|[\u4e00-\u9fff]")


def is_decorative(source: str, start: int, end: int) -> bool:
    """Whether a line holds no words once markup is gone (badges, logos, rules, link bars).

    >>> badges = "[![CI](https://b/x.svg)](https://ci) [![PyPI](https://p.svg)](https://p)"
    >>> is_decorative(badges, 0, 71)
    True
    >>> is_decorative("Candle is a framework", 0, 21)
    False
    """
    return _WORDY.search(clean_inline(source, start, end).text) is None


_LINKS = frozenset({"link", "rstlink", "titled", "xref", "autolink", "url"})


def is_link_alone(source: str, start: int, end: int) -> bool:
    r"""Whether the line (or lines) that `source[start:end]` lies on holds one link and nothing
    else, a list item's bullet and a closing stop aside: a pointer to another page, which
    states nothing on this one ("- [Install on Linux](docs/linux.md)", ":doc:`the guide <g>`").

    >>> page = "- [Install on Linux](docs/linux.md)\n- Linux needs glibc 2.28 ([why](w.md)).\n"
    >>> is_link_alone(page, 3, 19), is_link_alone(page, 38, 61)
    (True, False)
    >>> is_link_alone("* `Tuning guide <https://x.y/tune>`__", 3, 15)
    True
    """
    line_start = source.rfind("\n", 0, start) + 1
    line_end = source.find("\n", end)
    line = source[line_start : len(source) if line_end < 0 else line_end]
    body = line.strip()
    body = body[list_marker(body) or 0 :].rstrip(".,;。；")
    match = _TOKEN.fullmatch(body)
    return match is not None and match.lastgroup in _LINKS


def code_fence(code: str) -> str:
    """A backtick fence for `code`: longer than any run of backticks at a line start in it (a
    notebook cell or a web page that shows a Markdown fence stays one block).

    >>> code_fence("x = 1"), code_fence("```\\nnested\\n```")
    ('```', '````')
    """
    runs = [len(m.group(0).lstrip()) for m in re.finditer(r"(?m)^[ \t]*`{3,}", code)]
    return "`" * max([3, *(n + 1 for n in runs)])
