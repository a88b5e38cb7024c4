"""Inline markup removal: what a reader sees, and the map from every clean character to the file.

Hand-written one-line inputs for each kind of markup; a seeded generator of mixed inline Markdown
for the offset-map invariant; hostile 1 MB lines that must simply come back.
"""

from __future__ import annotations

import html
import random
import re
from collections.abc import Callable

import pytest

from ingest.markup import CleanText, clean_inline, is_decorative, is_link_alone, strip_markup

_ENTITY = re.compile(r"&(?:[A-Za-z]{2,10}|#\d{1,7}|#x[0-9A-Fa-f]{1,6});")


def _explains(source: str, at: int, ch: str) -> bool:
    """Whether `source[at]` is the clean character `ch` or the start of the markup it stands for."""
    src = source[at]
    if src == ch:
        return True
    if ch == " " and (
        src.isspace() or src == "<"
    ):  # collapsed whitespace, a tag or <br> read as a space
        return True
    if src == "\\" and source[at + 1 : at + 2] == ch:  # an escape: its backslash starts it
        return True
    if src == "&":
        m = _ENTITY.match(source, at)
        if m is not None:
            decoded = html.unescape(m.group(0))
            return ch in decoded or (ch == " " and decoded.isspace())
    return False


def _check_offsets(source: str, clean: CleanText, start: int = 0, end: int | None = None) -> None:
    """The offset map's invariants: one offset per character, in order, each one explained by
    the source."""
    stop = len(source) if end is None else end
    assert len(clean.offsets) == len(clean.text)
    assert clean.text == clean.text.strip()
    assert "  " not in clean.text and "\n" not in clean.text and "\t" not in clean.text
    previous = -1
    for i, (ch, at) in enumerate(zip(clean.text, clean.offsets, strict=True)):
        assert start <= at < stop, (i, ch, at)
        assert at >= previous, f"offsets go back at {i}: {clean.offsets[max(0, i - 3) : i + 1]}"
        previous = at
        around = source[max(0, at - 10) : at + 10]
        assert _explains(source, at, ch), f"clean[{i}]={ch!r} -> source[{at}] in {around!r}"


def _clean(source: str) -> str:
    result = clean_inline(source)
    _check_offsets(source, result)
    return result.text


# -- each kind of markup -----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "expected"),
    [
        # badges and images vanish, a linked badge too
        ("[![CI](https://ci.example/x.svg)](https://ci.example) Candle", "Candle"),
        ("![logo](docs/logo.png) Candle", "Candle"),
        ("![logo][brand] Candle", "Candle"),
        # links keep their text, lose the URL (inline, reference, with a title, with parentheses)
        ("see [PyTorch](https://pytorch.org) now", "see PyTorch now"),
        ("see [the docs][docs] now", "see the docs now"),
        ('see [docs](https://x.org "Docs") now', "see docs now"),
        ("see [wiki](https://en.wikipedia.org/wiki/A_(b)) now", "see wiki now"),
        ("[link with [nested] brackets](https://u.org)", "link with [nested] brackets"),
        # bare URLs and autolinks are dropped
        ("visit https://example.com/a?b=1 now", "visit now"),
        ("mail <mailto:team@example.com> now", "mail now"),
        # HTML tags read as a space; <br> too
        ("OpenVINO runs on <b>Intel</b> GPUs", "OpenVINO runs on Intel GPUs"),
        ("<td>a</td><td>b</td>", "a b"),
        ("one<br>two<br/>three", "one two three"),
        ('<a href="https://x.org">home</a> page', "home page"),
        # entities are decoded
        ("Intel&nbsp;GPUs &amp; CPUs", "Intel GPUs & CPUs"),
        ("&lt;tag&gt; &#169; &#x41;", "<tag> © A"),
        ("&bogus; stays", "&bogus; stays"),
        # emphasis, strikethrough and backticks
        ("**bold** *it* ***both*** __under__ ~~gone~~ _em_", "bold it both under gone em"),
        ("use `jax.jit` and snake_case_names", "use jax.jit and snake_case_names"),
        ("code ``a ` b`` here", "code a ` b here"),
        # emoji and trademark signs vanish; check marks and stars stay
        ("Rocket 🚀 fast", "Rocket fast"),
        ("OpenVINO™ and Intel® chips", "OpenVINO and Intel chips"),
        ("supported ✅ no ❌ rated ★★☆", "supported ✅ no ❌ rated ★★☆"),
        ("zero\u200bwidth and \ufe0fselector", "zerowidth and selector"),
        # heading anchors, footnotes
        ("## Install {#install}", "## Install"),
        ("Claim[^1] and more[^note].", "Claim and more."),
        # block quote markers, nested, and GitHub alerts
        ("> quoted text", "quoted text"),
        ("> > nested quote", "nested quote"),
        ("> [!NOTE]\n> Useful information.", "Useful information."),
        ("> [!WARNING]\n> Mind the gap.", "Mind the gap."),
        # an alert a formatter wrote with its brackets escaped
        (r"> \[!TIP\]" "\n> Mind the gap.", "Mind the gap."),
        # emoji shortcodes, not times
        ("Fast :rocket: and :white_check_mark: at 10:30:00", "Fast and at 10:30:00"),
        # reStructuredText's links read as their text; a cross-reference's target is no text,
        # another role's is (a textbook's Markdown writes both)
        ("see `Open MPI <https://x.y/faq/?c=b>`__ first", "see Open MPI first"),
        ("As :numref:`fig_ring` shows, :class:`Ring` wins", "As shows, Ring wins"),
        # backslash escapes keep the escaped character
        (r"\*not emphasis\* and \[not a link\]", "*not emphasis* and [not a link]"),
        # comments, closed or not
        ("<!-- hidden --> visible", "visible"),
        ("visible <!-- hidden to the end", "visible"),
        # whitespace collapses, ends are trimmed
        ("  a\tb\n\n c  ", "a b c"),
        # text that only looks like markup stays
        ("a < b > c and <3", "a < b > c and <3"),
        ("C# and C++ at 100%", "C# and C++ at 100%"),
        ("中文 **粗体** [链接](http://x.cn)", "中文 粗体 链接"),
        ("", ""),
    ],
)
def test_clean_inline_removes_markup(source: str, expected: str) -> None:
    assert _clean(source) == expected


def test_offsets_point_at_the_characters_they_came_from() -> None:
    source = "see [PyTorch](https://pytorch.org) &amp; **JAX**"
    clean = clean_inline(source)
    assert clean.text == "see PyTorch & JAX"
    assert clean.offsets == (0, 1, 2, 3, 5, 6, 7, 8, 9, 10, 11, 34, 35, 40, 43, 44, 45)
    _check_offsets(source, clean)


def test_escape_maps_to_its_backslash() -> None:
    clean = clean_inline(r"a \* b")
    assert clean.text == "a * b"
    assert clean.offsets == (0, 1, 2, 4, 5)
    assert clean.ends[2] == 4  # the escaped character spans "\*"


def test_tag_and_entity_map_to_their_start() -> None:
    source = "x<br>y&lt;z"
    clean = clean_inline(source)
    assert clean.text == "x y<z"
    assert clean.offsets == (0, 1, 5, 6, 10)
    assert source[clean.offsets[1]] == "<" and source[clean.offsets[3]] == "&"


def test_window_maps_into_the_whole_source() -> None:
    source = "prefix **Candle** is *fast* suffix"
    start, end = 7, 27
    clean = clean_inline(source, start, end)
    assert clean.text == "Candle is fast"
    _check_offsets(source, clean, start, end)
    alone = clean_inline(source[start:end])
    assert alone.text == clean.text
    assert clean.offsets == tuple(o + start for o in alone.offsets)


def test_empty_and_markup_only_input() -> None:
    for source in ["", "   ", "**", "![x](y.png)", "<br>", "<!-- c -->"]:
        clean = clean_inline(source)
        assert (clean.text, clean.offsets, clean.ends) == ("", (), ())
        assert len(clean) == 0
        assert clean.source_span(0, 0) == (0, 0)


# -- source_span -------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("source", "word", "span"),
    [
        ("see [PyTorch](https://pytorch.org) now", "PyTorch", (4, 34)),
        ("is **fast** now", "fast", (3, 11)),
        ("use `jit` now", "jit", (4, 9)),
        ("on <b>Intel</b> GPUs", "Intel", (6, 11)),
        ("中文 **粗体** 后", "粗体", (3, 9)),
    ],
)
def test_source_span_of_a_word(source: str, word: str, span: tuple[int, int]) -> None:
    """A word's span takes the markup around it with it: the quote reads back as the word."""
    clean = clean_inline(source)
    at = clean.text.index(word)
    assert clean.source_span(at, at + len(word)) == span
    assert clean_inline(source, *span).text == word


def test_source_span_empty_range() -> None:
    clean = clean_inline("ab **cd**")
    assert clean.source_span(3, 3) == (5, 5)
    assert clean.source_span(5, 5) == (0, 0)  # past the end


def test_source_span_round_trips_inside_emphasis_code_and_tags() -> None:
    source = "**Bold** start, `code` middle and <i>tag</i> end."
    clean = clean_inline(source)
    assert clean.text == "Bold start, code middle and tag end."
    for s, e in [(0, len(clean.text)), (0, 4), (5, 16), (28, 36)]:
        a, b = clean.source_span(s, e)
        assert clean_inline(source, a, b).text == clean.text[s:e], (s, e, source[a:b])


def _words(text: str) -> list[tuple[int, int]]:
    return [(m.start(), m.end()) for m in re.finditer(r"\S+", text)]


@pytest.mark.parametrize("seed", range(40))
def test_source_span_round_trips_every_word(seed: int) -> None:
    """Every word of the clean text maps back to a source span that cleans to that word
    (generated inline Markdown without entities, whose span the next tests cover)."""
    source = _generate_inline(random.Random(seed), entities=False, escapes=False)
    clean = clean_inline(source)
    for s, e in _words(clean.text):
        a, b = clean.source_span(s, e)
        assert clean_inline(source, a, b).text == clean.text[s:e], (source, source[a:b])


def test_source_span_round_trips_a_sentence_ending_in_a_link() -> None:
    source = "See [PyTorch](https://pytorch.org)"
    clean = clean_inline(source)
    a, b = clean.source_span(0, len(clean.text))
    assert clean_inline(source, a, b).text == "See PyTorch"


def test_source_span_round_trips_a_sentence_starting_in_a_link() -> None:
    source = "[PyTorch](https://pytorch.org) is fast"
    clean = clean_inline(source)
    a, b = clean.source_span(0, len(clean.text))
    assert clean_inline(source, a, b).text == "PyTorch is fast"


def test_source_span_round_trips_a_final_entity() -> None:
    source = "a &lt; b &gt;"
    clean = clean_inline(source)
    assert clean.text == "a < b >"
    a, b = clean.source_span(0, len(clean.text))
    assert source[a:b] == source


def test_source_span_round_trips_an_escaped_character() -> None:
    source = r"a \* b"
    clean = clean_inline(source)
    a, b = clean.source_span(2, 3)
    assert clean_inline(source, a, b).text == "*"


# -- known misreadings -------------------------------------------------------------------------


def test_code_span_content_is_literal() -> None:
    assert (
        strip_markup("edit `__init__.py` and pass `**kwargs`")
        == "edit __init__.py and pass **kwargs"
    )


def test_caret_is_kept() -> None:
    assert strip_markup("a context of 2^10 tokens") == "a context of 2^10 tokens"


def test_lone_asterisk_is_kept() -> None:
    assert strip_markup("2 * 3 = 6") == "2 * 3 = 6"


def test_plus_one_shortcode_is_dropped() -> None:
    assert strip_markup("Thumbs :+1: up") == "Thumbs up"


# -- strip_markup / is_decorative --------------------------------------------------------------


def test_strip_markup_is_the_clean_text() -> None:
    source = "## [Install](#install) ⚡ **now**"
    assert strip_markup(source) == clean_inline(source).text == "## Install now"


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("[![CI](https://b/x.svg)](https://ci) [![PyPI](https://p.svg)](https://p)", True),
        ('<img src="logo.png" width="200">', True),
        ("---", True),
        ("| --- | --- |", True),
        ("🚀 ✨ 🔥", True),
        ("", True),
        ("Candle is a framework", False),
        ("[Docs](https://d) | [Blog](https://b)", False),
        ("中文", False),
        ("x", True),  # a single letter is no word
    ],
)
def test_is_decorative(line: str, expected: bool) -> None:
    assert is_decorative(line, 0, len(line)) is expected


def test_is_decorative_reads_only_its_window() -> None:
    text = "Candle is a framework\n[![CI](https://b/x.svg)](https://ci)"
    newline = text.index("\n")
    assert is_decorative(text, newline + 1, len(text)) is True
    assert is_decorative(text, 0, newline) is False


# -- generated inline Markdown -----------------------------------------------------------------

_WORDS = [
    "Candle",
    "runs",
    "on",
    "GPUs",
    "fast",
    "model",
    "推理",
    "框架",
    "llama.cpp",
    "v2.1",
    "x86_64",
]


def _generate_inline(rng: random.Random, *, entities: bool = True, escapes: bool = True) -> str:
    """A line or two of mixed inline Markdown and HTML, fragments separated by spaces."""

    def word() -> str:
        return rng.choice(_WORDS)

    makers: list[Callable[[], str]] = [
        word,
        word,
        lambda: f"**{word()}**",
        lambda: f"*{word()}*",
        lambda: f"__{word()}__",
        lambda: f"~~{word()}~~",
        lambda: f"`{word()}`",
        lambda: f"[{word()} {word()}](https://example.com/{word()})",
        lambda: f"[{word()}][ref]",
        lambda: f"![{word()}](img/{rng.randint(0, 9)}.png)",
        lambda: f"[![badge](https://img.shields.io/{rng.randint(0, 9)}.svg)](https://ci)",
        lambda: f"<b>{word()}</b>",
        lambda: f'<a href="https://x.org/{rng.randint(0, 9)}">{word()}</a>',
        lambda: "<br>",
        lambda: rng.choice(["🚀", "✨", "™", "✅", "★"]),
        lambda: f"{word()}[^{rng.randint(1, 9)}]",
        lambda: ":rocket:",
        lambda: f"https://example.com/{word()}",
        lambda: "{#anchor}",
        lambda: "\n> ",
        lambda: "<!-- note -->",
    ]
    if escapes:
        makers += [lambda: f"\\{rng.choice('*_[]#')}"]
    if entities:
        makers += [lambda: rng.choice(["&amp;", "&lt;", "&gt;", "&nbsp;", "&#169;", "&#x4E2D;"])]
    return " ".join(rng.choice(makers)() for _ in range(rng.randint(1, 25)))


@pytest.mark.parametrize("seed", range(200))
def test_offset_map_on_generated_markdown(seed: int) -> None:
    rng = random.Random(seed)
    source = _generate_inline(rng)
    clean = clean_inline(source)
    _check_offsets(source, clean)
    assert not re.search(r"\]\(|https?://|<br|<b>|\*\*|`|:rocket:|\{#", clean.text), clean.text
    if len(source) > 4:
        start = rng.randrange(0, len(source) // 2)
        end = rng.randrange(start, len(source) + 1)
        _check_offsets(source, clean_inline(source, start, end), start, end)


# -- hostile input -----------------------------------------------------------------------------

_MB = 1_000_000


@pytest.mark.parametrize(
    ("name", "source", "expected_len"),
    [
        ("words", "word " * (_MB // 5), _MB - 1),
        ("unclosed <", "<" * _MB, _MB),
        ("unclosed tag", "<a " + "x" * _MB, _MB + 3),
        ("open brackets", "[" * (_MB // 2) + "]" * (_MB // 2), _MB),
        ("unclosed link", "[a](" * (_MB // 4), _MB),
        ("asterisks", "*" * _MB, 0),
        ("ampersands", "&" * _MB, _MB),
        ("unclosed comment", "<!--" + "x" * _MB, 0),
        ("long url", "https://" + "a" * _MB, None),
    ],
)
def test_hostile_one_megabyte_line_returns(
    name: str, source: str, expected_len: int | None
) -> None:
    clean = clean_inline(source)
    assert len(clean.offsets) == len(clean.text)
    if expected_len is not None:
        assert len(clean.text) == expected_len, name
    assert all(a <= b for a, b in zip(clean.offsets, clean.offsets[1:], strict=False))


def test_hostile_deeply_nested_brackets() -> None:
    depth = 5000
    source = "[" * depth + "deep" + "](u)" * depth
    clean = clean_inline(source)
    _check_offsets(source, clean)
    assert "deep" in clean.text


def test_hostile_many_image_openers() -> None:
    source = "![" * 50_000  # each opener scans a bounded window: linear, if slower per character
    clean = clean_inline(source)
    assert clean.text == source


@pytest.mark.parametrize(
    ("line", "alone"),
    [
        ("- [Install on Windows](docs/windows.md)", True),
        ("* `Tuning guide <https://example.org/tune>`__", True),
        ("1. :doc:`Batching <../batching>`.", True),
        ("- [安装指南](#安装指南)", True),
        ("- <https://example.org/changelog>", True),
        ("- Windows needs the [redistributable](docs/vc.md) first.", False),
        ("- [Batching](b.md) and [caching](c.md)", False),
        ("Use `--fast` for short prompts.", False),
        ("- **Speed**: 2x on CPUs", False),
    ],
)
def test_a_line_that_is_a_link_alone_is_a_pointer(line: str, alone: bool) -> None:
    page = f"# Guide\n\n{line}\nA closing sentence.\n"
    at = page.index(line)
    middle = at + len(line) // 2
    assert is_link_alone(page, middle, middle + 1) is alone
