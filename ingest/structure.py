"""Cut a `Document` into structural `Block`s, each with its exact span in `Document.text`.

Recognised: headings (Markdown `#`, and in plain text: `一、` / `（一）` / `第一章` / `1.` / `1.1`
numbered lines, a document title, and short standalone title lines), pipe tables (outer pipes
optional), decision trees (`├─ └─ │`), bullet and numbered lists (nested by indentation), `A：B`
definitions, code (fenced, or a bare language line such as `python` followed by code whose fences
were lost), and prose paragraphs. Invariants: `block.text == doc.text[block.start:block.end]`,
blocks are sorted and never overlap, and every item/cell span slices the document to its string.

Markdown mode (media type Markdown/HTML, or any `#` heading in the text) only trusts `#` headings.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from kg.documents import Block, BlockKind, Document

__all__ = [
    "command_spans",
    "definition_spans",
    "parse_blocks",
    "split_arrows",
    "split_definition",
    "split_sentences",
]

_END_PUNCT = set("。．.！!？?；;，,：:、…")
_SENTENCE_PUNCT = re.compile(r"[。！？；!?;，]|\.\s")
_BRACKETED = re.compile(r"（[^（）]*）|\([^()]*\)|【[^【】]*】|\[[^\[\]]*\]")
_LANGS = {
    "python",
    "py",
    "python3",
    "bash",
    "sh",
    "shell",
    "console",
    "zsh",
    "powershell",
    "json",
    "yaml",
    "yml",
    "toml",
    "javascript",
    "js",
    "typescript",
    "ts",
    "cpp",
    "c++",
    "java",
    "go",
    "rust",
    "sql",
    "dockerfile",
    "ini",
    "makefile",
    "julia",
    "lua",
    "cuda",
}
_FENCE = re.compile(r"^(`{3,}|~{3,})\s*([\w+#.-]*)")
_STRONG_CODE = re.compile(r"^(?:import\s+[\w.]+|from\s+[\w.]+\s+import\b)")
_KEYWORD = re.compile(
    r"^(?:import|from|def|class|return|if|elif|else|for|while|with|try|except|finally|raise|"
    r"yield|pass|break|continue|async|await|assert|del|global|nonlocal|print|lambda)\b|^@\w"
)
_ASSIGN = re.compile(r"^[A-Za-z_][\w.]*(?:\[[^\]]*\])?(?:\s*,\s*[A-Za-z_][\w.]*)*\s*[-+*/%@&|^]?=")
_CALL = re.compile(r"^[A-Za-z_][\w.]*\(")
_SHELL = re.compile(
    r"^(?:\$ |pip3? |python3? |torchrun |conda |export |cd |git |docker |curl |wget |sudo |"
    r"apt(?:-get)? |accelerate |deepspeed |nvidia-smi|mkdir |echo |\./)"
)
_ATX = re.compile(r"^(#{1,6})\s+(.*?)(?:\s+#+)?$")
_BULLET = re.compile(r"^([-*+•·◦▪‣●○])\s+(?=\S)")
_NUMBERED = re.compile(r"^(\d{1,3})(?:[.)．]\s+|、\s*)(?=\S)")
_NESTED_NUM = re.compile(r"^(\d{1,3}(?:\.\d{1,3})+)\.?\s+(?=\S)")
_CN_NUM = re.compile(r"^[一二三四五六七八九十百零〇两]+[、.．]\s*(?=\S)")
_CN_PAREN = re.compile(r"^[（(][一二三四五六七八九十]+[）)]\s*(?=\S)")
_CHAPTER = re.compile(r"^第[一二三四五六七八九十百零〇\d]+([章节篇部])\s*(?=\S)")
_TREE = re.compile(r"^([ \t\u3000│┃]*)([├└┣┗][─━]*)[ \t]*")
_SPACER = re.compile(r"^[ \t\u3000]*[│┃][ \t\u3000│┃]*$")
_TABLE_SEP = re.compile(r"^\|?\s*:?-+:?\s*(?:\|\s*:?-+:?\s*)*\|?$")
_GLUED_ITEM = re.compile(r"(?<=[。！？!?；])\s+[-•*]\s+(?=\S)")
_DEFINITION = re.compile(r"^(?P<term>[^：:\n]+?)\s*(?:：|:(?=\s|[^\x00-\x7f]))\s*(?P<rest>\S)")
_ARROW = re.compile(r"\s*(?:[─━-]*[→⟶⇒]|-+>|=+>)\s*")
_CMD_PROGRAM = re.compile(r"[A-Za-z][\w.+-]*")
_CMD_ARG = re.compile(r"-{0,2}[\w.:/=+-]+")
_CMD_OPTION = re.compile(r"--[A-Za-z][\w-]*(?:=\S*)?")
_CMD_END = re.compile(r"[.,;:)](?=\s|$)")
_ABBREV = {"vs", "e.g", "i.e", "etc", "cf", "mr", "dr", "no", "fig", "al", "approx"}


def _is_cjk(c: str) -> bool:
    o = ord(c)
    return (
        0x3000 <= o <= 0x303F
        or 0x3400 <= o <= 0x9FFF
        or 0xF900 <= o <= 0xFAFF
        or (0xFF00 <= o <= 0xFFEF)
    )


def _weight(s: str) -> float:
    """Display width in CJK characters (ASCII counts half)."""
    return sum(1.0 if ord(c) >= 0x2E80 else 0.5 for c in s)


# --- public helpers -----------------------------------------------------------------------------


def split_sentences(text: str) -> list[tuple[int, int]]:
    """Sentence spans in `text` (Chinese and English), whitespace-trimmed; newlines always end one.

    >>> t = "先学 PyTorch。再看 JAX！Use vs. compare. Done"
    >>> [t[s:e] for s, e in split_sentences(t)]
    ['先学 PyTorch。', '再看 JAX！', 'Use vs. compare.', 'Done']
    """
    spans: list[tuple[int, int]] = []
    pos = 0
    for m in re.finditer(r"[。！？；!?]+|;(?=\s)|\.(?=\s|$)|…+|\n", text):
        if m.start() < pos:
            continue
        end = m.end()
        if m.group() == ".":
            word = re.search(r"([A-Za-z.]+)$", text[pos : m.start()])
            if word and word.group(1).lower() in _ABBREV:
                continue
        if m.group() == "\n":
            end = m.start()
        else:
            while end < len(text) and text[end] in "”’\"'）)」』】]":
                end += 1
        _add_trimmed(spans, text, pos, end)
        pos = m.end() if m.group() == "\n" else end
    _add_trimmed(spans, text, pos, len(text))
    return spans


def _add_trimmed(spans: list[tuple[int, int]], text: str, start: int, end: int) -> None:
    piece = text[start:end]
    stripped = piece.strip()
    if stripped:
        s = start + len(piece) - len(piece.lstrip())
        spans.append((s, s + len(stripped)))


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
        or _weight(stripped) > 16
        or _SENTENCE_PUNCT.search(stripped)
        or "://" in text[: m.end()]
        or _BULLET.match(stripped)
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
        _add_trimmed(spans, text, pos, m.start())
        pos = m.end()
    _add_trimmed(spans, text, pos, len(text))
    return spans


# --- lines and code (pass 1) --------------------------------------------------------------------


@dataclass(frozen=True)
class _Line:
    raw_start: int  # start of the line (or of the remainder after cut-off code)
    start: int  # start of the stripped content
    end: int  # end of the stripped content
    indent: int
    text: str  # stripped content


@dataclass(frozen=True)
class _Code:
    start: int
    end: int
    language: str | None


def _lines(text: str) -> list[_Line]:
    out: list[_Line] = []
    pos = 0
    for raw in text.split("\n"):
        content = raw.rstrip()
        lead = len(content) - len(content.lstrip(" \t\u3000"))
        indent = len(content[:lead].replace("\t", "    "))
        start = pos + lead
        out.append(_Line(pos, start, pos + len(content), indent, content[lead:]))
        pos += len(raw) + 1
    return out


def _scan_code_line(t: str) -> tuple[int | None, int]:
    """(index where CJK prose starts outside strings/comments or None, bracket balance)."""
    quote, depth, i = "", 0, 0
    while i < len(t):
        c = t[i]
        if quote:
            if c == "\\":
                i += 1
            elif c == quote:
                quote = ""
        elif c in "'\"":
            quote = c
        elif c == "#":
            break
        elif c in "([{":
            depth += 1
        elif c in ")]}":
            depth -= 1
        elif _is_cjk(c):
            return i, depth
        i += 1
    return None, depth


def _code_like(t: str) -> bool:
    if not t or _is_cjk(t[0]):
        return False
    return bool(
        t[0] in "#)]}" or _KEYWORD.match(t) or _ASSIGN.match(t) or _CALL.match(t) or _SHELL.match(t)
    )


def _next_nonblank(lines: list[_Line], k: int) -> int | None:
    return next((m for m in range(k, len(lines)) if lines[m].text), None)


def _scan_code(lines: list[_Line], j: int, text: str) -> tuple[int, int, int, _Line | None] | None:
    """Code starting at line j whose fences were lost: (start, end, next line, prose remainder)."""
    if not _code_like(lines[j].text):
        return None
    depth, end, k, remainder = 0, -1, j, None
    while k < len(lines):
        ln = lines[k]
        if not ln.text:
            m = _next_nonblank(lines, k)
            if m is None or not (
                depth > 0 or (_code_like(lines[m].text) and lines[m].text[0] != "#")
            ):
                break
            k = m
            continue
        if k > j and depth <= 0 and not _code_like(ln.text):
            break
        cut, delta = _scan_code_line(ln.text)
        code = ln.text if cut is None else ln.text[:cut].rstrip()
        if not code:
            break
        end, depth, k = ln.start + len(code), depth + delta, k + 1
        if cut is not None:
            rest = ln.start + cut
            remainder = _Line(rest, rest, ln.end, 0, text[rest : ln.end])
            break
    if end < 0:
        return None
    return lines[j].raw_start, end, k, remainder


def _closes(line: str, mark: str) -> bool:
    return line.startswith(mark) and not line.strip(mark[0])


def _units(text: str) -> list[_Line | _Code]:
    """Lines of the text, with code regions (fenced or lost-fence) collapsed into `_Code`s."""
    lines = _lines(text)
    units: list[_Line | _Code] = []
    i = 0
    while i < len(lines):
        ln = lines[i]
        fence = _FENCE.match(ln.text) if ln.indent < 4 else None
        if fence:
            mark = fence.group(1)
            close = next(
                (j for j in range(i + 1, len(lines)) if _closes(lines[j].text, mark)), len(lines)
            )
            body = [b for b in lines[i + 1 : close] if b.text]
            if body:
                units.append(_Code(body[0].raw_start, body[-1].end, fence.group(2) or None))
            i = close + 1
            continue
        scan = None
        language: str | None = None
        if ln.text.lower() in _LANGS and i + 1 < len(lines):
            scan, language = _scan_code(lines, i + 1, text), ln.text.lower()
        elif _STRONG_CODE.match(ln.text):
            scan, language = _scan_code(lines, i, text), "python"
        if scan is None:
            units.append(ln)
            i += 1
            continue
        start, end, i, remainder = scan
        units.append(_Code(start, end, language))
        if remainder is not None:
            units.append(remainder)
    return units


# --- structure (pass 2) -------------------------------------------------------------------------


@dataclass(frozen=True)
class _Head:
    key: str
    rank: int  # only compared between Markdown headings
    title: str


class _Parser:
    def __init__(self, doc: Document) -> None:
        self.text = doc.text
        self.units = _units(doc.text)
        lines = [u for u in self.units if isinstance(u, _Line)]
        self.markdown = doc.media_type in ("text/markdown", "text/html") or any(
            _ATX.match(u.text) for u in lines
        )
        self.first = next((k for k, u in enumerate(self.units) if not _blank(u)), -1)
        self.blocks: list[Block] = []
        self.stack: list[tuple[_Head, int]] = []  # (heading, number of blocks when opened)

    # navigation helpers
    def line(self, k: int) -> _Line | None:
        u = self.units[k] if 0 <= k < len(self.units) else None
        return u if isinstance(u, _Line) else None

    def nonblank(self, k: int, step: int) -> int | None:
        while 0 <= k < len(self.units):
            if not _blank(self.units[k]):
                return k
            k += step
        return None

    def path(self) -> tuple[str, ...]:
        return tuple(h.title for h, _ in self.stack)

    def emit(self, kind: BlockKind, start: int, end: int, **fields: object) -> None:
        self.blocks.append(
            Block.model_validate(
                {
                    "kind": kind,
                    "start": start,
                    "end": end,
                    "text": self.text[start:end],
                    "heading_path": self.path(),
                    **fields,
                }
            )
        )

    # classification
    def is_tree(self, k: int) -> bool:
        ln = self.line(k)
        raw = self.text[ln.raw_start : ln.end] if ln else ""
        return bool(ln and ln.text and (_TREE.match(raw) or _SPACER.match(raw)))

    def is_special(self, k: int) -> bool:
        ln = self.line(k)
        if ln is None or not ln.text:
            return True
        t = ln.text
        return bool(
            self.is_tree(k)
            or "|" in t
            or _BULLET.match(t)
            or _NUMBERED.match(t)
            or (self.markdown and _ATX.match(t))
        )

    def heading(self, k: int, after_open_prose: bool = False) -> _Head | None:
        ln = self.line(k)
        if ln is None or not ln.text or "|" in ln.text or self.is_tree(k):
            return None
        t = ln.text
        if self.markdown:
            m = _ATX.match(t)
            return _Head("md", len(m.group(1)), m.group(2).strip() or t) if m else None
        if ln.indent > 1:
            return None
        for pattern, key in ((_CHAPTER, "chapter"), (_CN_NUM, "cn"), (_CN_PAREN, "cn-paren")):
            m = pattern.match(t)
            if m:
                name = f"{key}-{m.group(1)}" if key == "chapter" else key
                return _Head(name, 0, t) if _title_ok(t[m.end() :], 40, "？?！!") else None
        m = _NESTED_NUM.match(t)
        if m and _title_ok(t[m.end() :], 30, "？?"):
            return _Head(f"num{m.group(1).count('.') + 1}", 0, t)
        m = _NUMBERED.match(t)
        if m:
            isolated = not any(self.numbered_at(n, ln.indent) for n in self.neighbours(k))
            ok = isolated and _title_ok(t[m.end() :], 30, "？?")
            return _Head("num1", 0, t) if ok else None
        if self.is_special(k) or self.nonblank(k + 1, 1) is None:
            return None
        if k == self.first:
            return _Head("title", 0, t) if _title_ok(t, 30, "？?！!") else None
        if after_open_prose or not _title_ok(t, 24, "", colon_ok=self.blank_after(k)):
            return None
        return _Head("bare", 0, t)

    def neighbours(self, k: int) -> list[int]:
        return [n for n in (self.nonblank(k - 1, -1), self.nonblank(k + 1, 1)) if n is not None]

    def numbered_at(self, k: int, indent: int) -> bool:
        ln = self.line(k)
        return bool(ln and ln.indent == indent and _NUMBERED.match(ln.text))

    def blank_after(self, k: int) -> bool:
        ln = self.line(k + 1)
        return ln is not None and not ln.text

    # block builders
    def open_heading(self, head: _Head, ln: _Line) -> None:
        keys = [h.key for h, _ in self.stack]
        if head.key == "title":
            self.stack = []
        elif head.key == "bare":
            if keys and keys[-1] == "title" and self.stack[-1][1] == len(self.blocks) - 1:
                head = _Head("title", 0, head.title)  # an empty title line above: replace it
                self.stack = []
            elif "bare" in keys:
                self.stack = self.stack[: keys.index("bare")]
        elif head.key == "md":
            cut = [
                n for n, (h, _) in enumerate(self.stack) if h.key == "md" and h.rank >= head.rank
            ]
            self.stack = self.stack[: cut[0]] if cut else self.stack
        elif head.key in keys:
            self.stack = self.stack[: keys.index(head.key)]
        self.stack.append((head, len(self.blocks)))
        self.emit(BlockKind.HEADING, ln.start, ln.end, level=len(self.stack))

    def table(self, k: int) -> int:
        header = self.line(k)
        assert header is not None
        rows_src = [header]
        j = k + 2
        while (
            (ln := self.line(j)) is not None and ln.text and "|" in ln.text and not self.is_tree(j)
        ):
            if not _TABLE_SEP.match(ln.text):
                rows_src.append(ln)
            j += 1
        width = len(_cells(self.text, header))
        rows: list[list[str]] = []
        spans: list[list[tuple[int, int]]] = []
        for ln in rows_src:
            cells = _cells(self.text, ln)[:width]
            cells += [(ln.end, ln.end)] * (width - len(cells))
            spans.append(cells)
            rows.append([self.text[s:e] for s, e in cells])
        self.emit(BlockKind.TABLE, header.start, rows_src[-1].end, rows=rows, cell_spans=spans)
        return j

    def tree(self, k: int, root: bool) -> int:
        items: list[tuple[int, int]] = []
        cols: list[int | None] = []  # None marks the root question
        kinds: list[str] = []
        if root:
            ln = self.line(k)
            assert ln is not None
            items.append((ln.start, ln.end))
            cols.append(None)
            kinds.append("root")
            k += 1
        start = items[0][0] if items else -1
        end = start
        while self.is_tree(k):
            ln = self.line(k)
            assert ln is not None
            raw = self.text[ln.raw_start : ln.end]
            m = _TREE.match(raw)
            if m:
                items.append((ln.raw_start + m.end(), ln.end))
                cols.append(len(m.group(1).replace("\t", "    ")))
                kinds.append("last" if m.group(2)[0] in "└┗" else "mid")
            start = ln.start if start < 0 else start
            end = ln.end
            k += 1
        self.emit(
            BlockKind.DECISION_TREE,
            start,
            end,
            items=[self.text[s:e] for s, e in items],
            item_spans=items,
            depths=_tree_depths(cols, kinds),
        )
        return k

    def list_block(self, k: int) -> int:
        items: list[list[int]] = []  # [start, end, indent]
        j = k
        while (ln := self.line(j)) is not None:
            if not ln.text:
                m = self.nonblank(j, 1)
                nxt = self.line(m) if m is not None else None
                if m is None or nxt is None or not _list_marker(nxt.text) or self.heading(m):
                    break
                j = m
                continue
            marker = _list_marker(ln.text)
            if marker is not None and not self.heading(j):
                items.append([ln.start + marker, ln.end, ln.indent])
            elif self.continues_item(j, items[-1]):
                items[-1][1] = ln.end  # a wrapped continuation line of the item
            else:
                break
            j += 1
        spans, indents = _split_glued(self.text, items)
        first = self.line(k)
        assert first is not None
        self.emit(
            BlockKind.LIST,
            first.start,
            spans[-1][1],
            items=[self.text[s:e] for s, e in spans],
            item_spans=spans,
            depths=_indent_depths(indents),
        )
        return j

    def continues_item(self, j: int, item: list[int]) -> bool:
        """Line j (right after the item, no blank line) is a wrapped part of that item."""
        ln, above = self.line(j), self.line(j - 1)
        if ln is None or above is None or not above.text or self.is_special(j) or self.heading(j):
            return False
        return self.text[item[1] - 1] not in _END_PUNCT or ln.indent > item[2]

    def prose(self, k: int) -> int:
        first = self.line(k)
        assert first is not None
        end = first.end
        j = k + 1
        while (
            (ln := self.line(j)) is not None
            and ln.text
            and self.text[end - 1] not in _END_PUNCT
            and not self.is_special(j)
            and not self.heading(j, True)
            and not self.tree_root(j)
        ):
            end, j = ln.end, j + 1
        spans = definition_spans(first.text) if j == k + 1 else None
        if spans is not None:
            term = first.text[spans[0][0] : spans[0][1]]
            self.emit(BlockKind.DEFINITION, first.start, end, term=term)
        else:
            self.emit(BlockKind.PROSE, first.start, end)
        return j

    def tree_root(self, k: int) -> bool:
        """A short question/lead line right above a tree's first branch is the tree's root."""
        ln = self.line(k)
        if ln is None or not ln.text or self.is_special(k) or not self.is_tree(k + 1):
            return False
        head = None if self.markdown else self.heading(k)
        return (
            _weight(ln.text) <= 40
            and ln.text[-1] not in "。.；;"
            and (head is None or head.key in ("bare", "title"))
        )

    def after_open_prose(self, k: int) -> bool:
        """The line above k ends a prose block mid-sentence (so k is likely its continuation)."""
        prev = self.blocks[-1] if self.blocks else None
        above = self.units[k - 1] if k > 0 else None
        return bool(
            prev is not None
            and prev.kind in (BlockKind.PROSE, BlockKind.DEFINITION)
            and isinstance(above, _Line)
            and above.end == prev.end
            and prev.text[-1] not in _END_PUNCT
        )

    def run(self) -> list[Block]:
        k = 0
        while k < len(self.units):
            unit = self.units[k]
            if isinstance(unit, _Code):
                code = self.text[unit.start : unit.end]
                self.emit(BlockKind.CODE, unit.start, unit.end, language=unit.language, code=code)
                k += 1
                continue
            if not unit.text:
                k += 1
                continue
            nxt = self.line(k + 1)
            if (
                "|" in unit.text
                and nxt is not None
                and "|" in nxt.text
                and _TABLE_SEP.match(nxt.text)
            ):
                k = self.table(k)
                continue
            if self.is_tree(k) or self.tree_root(k):
                k = self.tree(k, root=not self.is_tree(k))
                continue
            head = self.heading(k, self.after_open_prose(k))
            if head is not None:
                self.open_heading(head, unit)
                k += 1
            elif _list_marker(unit.text) is not None:
                k = self.list_block(k)
            else:
                k = self.prose(k)
        return self.blocks


def _blank(u: _Line | _Code) -> bool:
    return isinstance(u, _Line) and not u.text


def _title_ok(t: str, limit: float, end_ok: str, *, colon_ok: bool = True) -> bool:
    """Short, no sentence punctuation inside (bracketed asides aside), no sentence-final ending."""
    core = _BRACKETED.sub("", t).strip()
    if not t.strip() or _weight(t) > limit or not core:
        return False
    if t[-1] in _END_PUNCT and t[-1] not in end_ok:
        return False
    if _SENTENCE_PUNCT.search(core[:-1] if core[-1] in end_ok else core):
        return False
    return colon_ok or not re.search(r"：|:\s", core)


def _list_marker(t: str) -> int | None:
    m = _BULLET.match(t) or _NUMBERED.match(t)
    return m.end() if m else None


def _cells(text: str, ln: _Line) -> list[tuple[int, int]]:
    """Spans of the stripped cells of a pipe-table row (outer pipes optional, `\\|` escaped)."""
    pipes = [i for i, c in enumerate(ln.text) if c == "|" and (i == 0 or ln.text[i - 1] != "\\")]
    bounds = [ln.start - 1, *(ln.start + i for i in pipes), ln.end]
    cells: list[tuple[int, int]] = []
    for a, b in itertools.pairwise(bounds):
        piece = text[a + 1 : b]
        s = a + 1 + len(piece) - len(piece.lstrip())
        cells.append((s, max(s, a + 1 + len(piece.rstrip()))))
    if ln.text.startswith("|"):
        cells = cells[1:]
    if ln.text.endswith("|") and len(ln.text) > 1 and cells:
        cells = cells[:-1]
    return cells


def _split_glued(text: str, items: list[list[int]]) -> tuple[list[tuple[int, int]], list[int]]:
    """Split items that scraping glued together (`...。 - next item`) into separate items."""
    spans: list[tuple[int, int]] = []
    indents: list[int] = []
    for start, end, indent in items:
        pos = start
        for m in _GLUED_ITEM.finditer(text, start, end):
            spans.append((pos, m.start()))
            indents.append(indent)
            pos = m.end()
        spans.append((pos, end))
        indents.append(indent)
    return spans, indents


def _indent_depths(indents: list[int]) -> list[int]:
    """Nesting depth of each list item from its indentation.

    >>> _indent_depths([0, 2, 4, 2, 0, 3])
    [0, 1, 2, 1, 0, 1]
    """
    stack: list[int] = []
    depths: list[int] = []
    for x in indents:
        while stack and x < stack[-1]:
            stack.pop()
        if not stack or x > stack[-1]:
            stack.append(x)
        depths.append(len(stack) - 1)
    return depths


def _tree_depths(cols: list[int | None], kinds: list[str]) -> list[int]:
    """Depths from branch columns; the root question (None) is 0.

    A branch drawn at a depth that a `└─` already closed must be a child of that last branch
    whose indentation was lost in scraping, so it moves one level deeper.

    >>> _tree_depths([None, 0, 2, 0, 0, 0], ["root", "mid", "last", "last", "mid", "last"])
    [0, 1, 2, 1, 2, 2]
    """
    present = [c for c in cols if c]
    unit = min(present) if present else 1
    depths: list[int] = []
    closed: set[int] = set()
    for col, kind in zip(cols, kinds, strict=True):
        if col is None:
            depths.append(0)
            continue
        depth = 1 + col // unit
        while depth in closed:
            depth += 1
        closed = {d for d in closed if d < depth}
        if kind == "last":
            closed.add(depth)
        depths.append(depth)
    return depths


def parse_blocks(doc: Document) -> list[Block]:
    """Cut `doc` into structural blocks, in document order, with spans and heading paths.

    HEADING blocks have `level` = depth in the heading tree (1 = outermost) and a `heading_path`
    that ends with their own title; every other block's `heading_path` is its enclosing headings.
    """
    return _Parser(doc).run()
