"""Text helpers of the structure parser: display width, `term：rest` definitions, inline shell
commands in prose, the parts of a decision-tree branch, and what makes a line a title."""

from __future__ import annotations

import re

from ingest.text import add_trimmed

__all__ = [
    "BULLET",
    "END_PUNCT",
    "SENTENCE_PUNCT",
    "command_spans",
    "definition_spans",
    "display_width",
    "is_cjk",
    "split_arrows",
    "split_definition",
    "title_ok",
]

END_PUNCT = set("。．.！!？?；;，,：:、…")
SENTENCE_PUNCT = re.compile(r"[。！？；!?;，]|\.\s")
_BRACKETED = re.compile(r"（[^（）]*）|\([^()]*\)|【[^【】]*】|\[[^\[\]]*\]")
BULLET = re.compile(r"^([-*+•·◦▪‣●○])\s+(?=\S)")
_DEFINITION = re.compile(r"^(?P<term>[^：:\n]+?)\s*(?:：|:(?=\s|[^\x00-\x7f]))\s*(?P<rest>\S)")
_ARROW = re.compile(r"\s*(?:[─━-]*[→⟶⇒]|-+>|=+>)\s*")
_CMD_PROGRAM = re.compile(r"[A-Za-z][\w.+-]*")
_CMD_ARG = re.compile(r"-{0,2}[\w.:/=+-]+")
_CMD_OPTION = re.compile(r"--[A-Za-z][\w-]*(?:=\S*)?")
_CMD_END = re.compile(r"[.,;:)](?=\s|$)")


def is_cjk(c: str) -> bool:
    o = ord(c)
    return (
        0x3000 <= o <= 0x303F
        or 0x3400 <= o <= 0x9FFF
        or 0xF900 <= o <= 0xFAFF
        or (0xFF00 <= o <= 0xFFEF)
    )


def display_width(s: str) -> float:
    """Display width in CJK characters (ASCII counts half)."""
    return sum(1.0 if ord(c) >= 0x2E80 else 0.5 for c in s)


def definition_spans(text: str) -> tuple[tuple[int, int], tuple[int, int]] | None:
    """Spans of (term, rest) if `text` reads `term：rest` with a short term, else None.

    >>> t = "首选：PyTorch，先学会搭模型"
    >>> (a, b), (c, d) = definition_spans(t)
    >>> t[a:b], t[c:d]
    ('首选', 'PyTorch，先学会搭模型')
    >>> definition_spans("做好三件事：a") is not None, definition_spans("一切起点。做好三件事：a")
    (True, None)
    """
    m = _DEFINITION.match(text)
    if m is None:
        return None
    term = m.group("term")
    stripped = term.strip()
    if (
        not stripped
        or display_width(stripped) > 16
        or SENTENCE_PUNCT.search(stripped)
        or "://" in text[: m.end()]
        or BULLET.match(stripped)
    ):
        return None
    t_start = len(term) - len(term.lstrip())
    rest = text[m.start("rest") :].rstrip()
    return (t_start, t_start + len(stripped)), (m.start("rest"), m.start("rest") + len(rest))


def split_definition(text: str) -> tuple[str, str] | None:
    """`(term, rest)` of a `term：rest` / `term: rest` line or list item, else None.

    >>> split_definition("一句话定义：框架是三维权衡。")
    ('一句话定义', '框架是三维权衡。')
    >>> split_definition("Note: see docs"), split_definition("no colon here")
    (('Note', 'see docs'), None)
    """
    spans = definition_spans(text)
    if spans is None:
        return None
    (a, b), (c, d) = spans
    return text[a:b], text[c:d]


def command_spans(text: str) -> list[tuple[int, int]]:
    """Spans of command lines written inline in prose: `program [sub ...] --option ...`.

    A command starts where a command can start (line start, after CJK text or punctuation, a
    backtick, or a `$ ` / `> ` prompt), is a lower-case program word followed by at most three
    sub-command or `-m module` words and then at least one `--option`, and stops at CJK text, a
    backtick, a line end or an ASCII sentence end. English prose around options ("Tip: use the
    --fast flag") is not a command.

    >>> t = "启动命令：torchrun --nproc_per_node=4 train.py。另见 the docs, use the --foo flag."
    >>> [t[s:e] for s, e in command_spans(t)]
    ['torchrun --nproc_per_node=4 train.py']
    >>> t = "Run `python -m pip install --upgrade pip`. Tip: use the --fast flag."
    >>> [t[s:e] for s, e in command_spans(t)]
    ['python -m pip install --upgrade pip']
    >>> command_spans("accelerate/torchrun。训练用 2 张卡")
    []
    >>> t = "多卡时用 deepspeed --num_gpus 8 train.py 启动"
    >>> [t[s:e] for s, e in command_spans(t)]
    ['deepspeed --num_gpus 8 train.py']
    """
    spans: list[tuple[int, int]] = []
    p = 0
    while p < len(text):
        if not _command_start(text, p):
            p += 1
            continue
        q = p
        while q < len(text) and text[q] not in "`\n" and ord(text[q]) < 0x2E80:
            q += 1
        run = text[p:q]
        cut = _CMD_END.search(run)
        run = (run[: cut.start()] if cut else run).rstrip()
        tokens = run.split()
        first_option = next((i for i, t in enumerate(tokens) if _CMD_OPTION.fullmatch(t)), None)
        if (
            tokens
            and first_option is not None
            and 1 <= first_option <= 4
            and _CMD_PROGRAM.fullmatch(tokens[0])
            and tokens[0][0].islower()
            and all(_CMD_ARG.fullmatch(t) for t in tokens[1:first_option])
        ):
            spans.append((p, p + len(run)))
            p += max(len(run), 1)
        else:
            p += 1
    return spans


def _command_start(text: str, p: int) -> bool:
    c = text[p]
    if not ("a" <= c.lower() <= "z"):
        return False
    if p == 0:
        return True
    line_start = text.rfind("\n", 0, p) + 1
    head = text[line_start:p]
    gap = head.rstrip(" \t")  # Chinese text often puts a space before English
    return (
        not gap
        or gap[-1] == "`"
        or (ord(gap[-1]) >= 0x2E80 and (gap == head or len(head) - len(gap) <= 1))
        or head.endswith(("$ ", "> "))
    )


def split_arrows(text: str) -> list[tuple[int, int]]:
    """Spans of the parts of a decision-tree item separated by arrows (`→`, `──→`, `->`, `=>`).

    >>> t = "PyTorch（HF）──────→ PyTorch + transformers"
    >>> [t[s:e] for s, e in split_arrows(t)]
    ['PyTorch（HF）', 'PyTorch + transformers']
    """
    spans: list[tuple[int, int]] = []
    pos = 0
    for m in _ARROW.finditer(text):
        add_trimmed(spans, text, pos, m.start())
        pos = m.end()
    add_trimmed(spans, text, pos, len(text))
    return spans


def title_ok(t: str, limit: float, end_ok: str, *, colon_ok: bool = True) -> bool:
    """Short, no sentence punctuation inside (bracketed asides aside), no sentence-final ending."""
    core = _BRACKETED.sub("", t).strip()
    if not t.strip() or display_width(t) > limit or not core:
        return False
    if t[-1] in END_PUNCT and t[-1] not in end_ok:
        return False
    if SENTENCE_PUNCT.search(core[:-1] if core[-1] in end_ok else core):
        return False
    return colon_ok or not re.search(r"：|:\s", core)
