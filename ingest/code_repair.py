"""Recover code that lost its indentation, and tell Python from shell.

Web pages scraped to text lose code fences and leading whitespace: a `def f():` is followed by an
unindented body. `repair_indentation` searches over indentation choices, cheapest first, until the
code compiles. Block openers (a statement ending in ':') force the next line one level deeper;
elsewhere a line may stay or close blocks. The cost prefers shallow code, and penalises the two
patterns a human would not write: code after `return`/`raise`/`break`/`continue` in the same block,
and a name bound only inside a closed block (an import, a parameter) used after it.
"""

from __future__ import annotations

import builtins
import functools
import heapq
import io
import itertools
import re
import shlex
import shutil
import tokenize
from dataclasses import dataclass

from pydantic import BaseModel

__all__ = ["RepairResult", "detect_language", "repair_indentation"]

_INDENT = "    "
_MAX_EXPANSIONS = 20_000
_OPENER_RE = re.compile(
    r"^(async\s+)?(def|class|if|elif|else|for|while|try|except|finally|with|match|case)\b"
)
_CONTINUATION = {
    "elif": {"if", "elif"},
    "else": {"if", "elif", "for", "while", "try", "except"},
    "except": {"try", "except"},
    "finally": {"try", "except", "else"},
}
_TERMINAL_RE = re.compile(r"^(return|raise|break|continue|pass)\b")
_BINDS_RE = re.compile(r"^(?:import\s+([\w.]+)(?:\s+as\s+(\w+))?|from\s+\S+\s+import\s+(.+))")
_NEEDS_DEF_RE = re.compile(r"^(return|yield)\b")
_NEEDS_LOOP_RE = re.compile(r"^(break|continue)\b")
_NAME_RE = re.compile(r"[A-Za-z_]\w*")
_DEAD_CODE_COST = 8
_CLOSED_NAME_COST = 3


class RepairResult(BaseModel):
    """Outcome of an indentation repair."""

    code: str
    repaired: bool
    detail: str


@dataclass(frozen=True)
class _Line:
    """One logical line: its text, the physical lines it spans, its kind and the names it binds."""

    text: str
    physical: tuple[str, ...]
    keyword: str | None  # opener keyword ('def', 'if', ...) or None
    opener: bool
    terminal: bool
    binds: frozenset[str]  # names bound only for the block this line opens (params) or imports
    uses: frozenset[str]


def _compiles(code: str) -> bool:
    try:
        compile(code, "<snippet>", "exec", dont_inherit=True)
    except (SyntaxError, ValueError):
        return False
    return True


def _open_brackets(line: str, depth: int, in_string: str | None) -> tuple[int, str | None]:
    """Bracket depth and open triple-quote after `line` (a rough scan, enough to join lines)."""
    i = 0
    while i < len(line):
        if in_string:
            if line.startswith(in_string, i):
                i, in_string = i + len(in_string), None
                continue
            i += 2 if line[i] == "\\" else 1
            continue
        ch = line[i]
        if ch == "#":
            break
        if line.startswith('"""', i) or line.startswith("'''", i):
            in_string, i = line[i : i + 3], i + 3
            continue
        if ch in "\"'":
            end = line.find(ch, i + 1)
            while end > 0 and line[end - 1] == "\\":
                end = line.find(ch, end + 1)
            i = len(line) if end < 0 else end + 1
            continue
        depth += ch in "([{"
        depth -= ch in ")]}"
        i += 1
    return max(depth, 0), in_string


def _strip_comment(text: str) -> str:
    try:
        toks = list(tokenize.generate_tokens(io.StringIO(text + "\n").readline))
    except (tokenize.TokenError, SyntaxError):
        return text.split("#", 1)[0].rstrip()
    cut = next((t.start[1] for t in toks if t.type == tokenize.COMMENT), len(text))
    return text[:cut].rstrip()


def _logical_lines(code: str) -> list[_Line]:
    """Join physical lines into logical lines (open brackets, strings, backslashes)."""
    out: list[_Line] = []
    buf: list[str] = []
    depth, in_str = 0, None
    for raw in code.splitlines():
        line = raw.strip() if not buf else raw.rstrip()
        if not buf and not line:
            continue
        buf.append(line)
        depth, in_str = _open_brackets(line, depth, in_str)
        if depth or in_str or line.endswith("\\"):
            continue
        out.append(_make_line(buf))
        buf = []
    if buf:
        out.append(_make_line(buf))
    return out


def _make_line(physical: list[str]) -> _Line:
    text = " ".join(p.strip() for p in physical)
    code = _strip_comment(text)
    m = _OPENER_RE.match(code)
    keyword = m.group(2) if m else None
    opener = bool(m) and code.endswith(":")
    binds: set[str] = set()
    if keyword == "def":
        params = code[code.find("(") + 1 : code.rfind(")")]
        binds = {p.split("=")[0].split(":")[0].strip(" *") for p in params.split(",")} - {""}
    if im := _BINDS_RE.match(code):
        if im.group(3):
            binds = {n.split(" as ")[-1].strip(" ()") for n in im.group(3).split(",")}
        else:
            binds = {im.group(2) or im.group(1).split(".")[0]}
    uses = set(_NAME_RE.findall(re.sub(r"(\"[^\"]*\"|'[^']*')", "", code))) - binds
    return _Line(
        text=text,
        physical=tuple(physical),
        keyword=keyword,
        opener=opener,
        terminal=bool(_TERMINAL_RE.match(code)),
        binds=frozenset(binds),
        uses=frozenset(uses - set(dir(builtins))),
    )


@dataclass(frozen=True)
class _State:
    """A partial indentation: open blocks (keyword, names local to the block), per-depth history."""

    blocks: tuple[tuple[str, frozenset[str]], ...]
    last: tuple[str, ...]  # kind of the last statement at each depth 0..len(blocks)
    closed_names: frozenset[str]


def _choices(line: _Line, prev: _Line | None, state: _State) -> list[int]:
    depth = len(state.blocks)
    if prev is not None and prev.opener:
        return [depth]
    if line.keyword in _CONTINUATION:  # elif/else/except/finally close a block of a matching kind
        allowed = _CONTINUATION[line.keyword]
        return [d for d in range(depth - 1, -1, -1) if state.last[d] in allowed]
    return list(range(depth, -1, -1))


def _step(line: _Line, d: int, state: _State) -> tuple[int, _State] | None:
    """Place `line` at depth `d`: the added cost and the new state, or None where Python forbids."""
    closed = state.blocks[d:]
    blocks = state.blocks[:d]
    open_kinds = {k for k, _ in blocks}
    if _NEEDS_DEF_RE.match(line.text) and "def" not in open_kinds:
        return None
    if _NEEDS_LOOP_RE.match(line.text) and not open_kinds & {"for", "while"}:
        return None
    cost = d
    if d < len(state.last) and state.last[d].startswith("terminal"):
        cost += _DEAD_CODE_COST if d == len(state.blocks) else 0
    closed_names = state.closed_names.union(*(names for _, names in closed))
    visible = frozenset().union(*(names for _, names in blocks))
    cost += _CLOSED_NAME_COST * len((line.uses & closed_names) - visible)
    kind = "terminal" if line.terminal else (line.keyword or "stmt")
    last = (*state.last[:d], kind)
    if line.opener:
        local = line.binds if line.keyword == "def" else frozenset()
        blocks = (*blocks, (line.keyword or "block", local))
    elif line.binds and blocks:  # an import inside a block: local to it for our purposes
        k, names = blocks[-1]
        blocks = (*blocks[:-1], (k, names | line.binds))
    return cost, _State(blocks, last, closed_names)


def _render(lines: list[_Line], depths: list[int]) -> str:
    out: list[str] = []
    for line, d in zip(lines, depths, strict=True):
        out.append(_INDENT * d + line.physical[0])
        out.extend(_INDENT * (d + 1) + p.strip() for p in line.physical[1:])
    return "\n".join(out) + "\n"


def _search(lines: list[_Line]) -> list[int] | None:
    """Uniform-cost search over depth assignments; the first one that compiles wins."""
    counter = itertools.count()
    start = _State((), ("start",), frozenset())
    heap: list[tuple[int, int, int, tuple[int, ...], _State]] = [(0, 0, 0, (), start)]
    seen: set[tuple[int, _State]] = set()
    expansions = 0
    while heap and expansions < _MAX_EXPANSIONS:
        cost, _, i, depths, state = heapq.heappop(heap)
        if i == len(lines):
            if _compiles(_render(lines, list(depths))):
                return list(depths)
            continue
        if (i, state) in seen:
            continue
        seen.add((i, state))
        expansions += 1
        prev = lines[i - 1] if i else None
        for d in _choices(lines[i], prev, state):
            stepped = _step(lines[i], d, state)
            if stepped is None:
                continue
            add, new_state = stepped
            heapq.heappush(heap, (cost + add, next(counter), i + 1, (*depths, d), new_state))
    return None


def repair_indentation(code: str) -> RepairResult:
    """Re-indent `code` so that it compiles, choosing the simplest indentation that does.

    Code that already compiles is returned unchanged.

    >>> r = repair_indentation("def f(x):\\nreturn x\\nprint(f(1))")
    >>> print(r.code, end="")
    def f(x):
        return x
    print(f(1))
    >>> r.repaired
    True
    """
    fixed, repaired, detail = _repair_cached(code)
    return RepairResult(code=fixed, repaired=repaired, detail=detail)


@functools.lru_cache(maxsize=256)
def _repair_cached(code: str) -> tuple[str, bool, str]:
    if _compiles(code):
        return code, False, "compiles as given"
    lines = _logical_lines(code)
    if not lines:
        return code, False, "empty"
    depths = _search(lines)
    if depths is None:
        return code, False, "no indentation makes it compile (not Python?)"
    moved = sum(1 for d in depths if d)
    detail = f"indentation recovered: {moved} of {len(lines)} statements indented"
    return _render(lines, depths), True, detail


_SHELL_START = re.compile(r"^(\$\s|sudo\s|export\s|[A-Z_]+=\S+\s)")
_SHELL_OPTION = re.compile(r"(^|\s)--?[A-Za-z][\w-]*(=\S+)?(\s|$)")
_PY_SIGNAL = re.compile(r"(^\s*(import|from|def|class)\s)|(\w\s*=[^=])|(\w\()|(\.\w)")


def _looks_like_shell(code: str) -> bool:
    lines = [
        ln.strip() for ln in code.splitlines() if ln.strip() and not ln.strip().startswith("#")
    ]
    if not lines:
        return False
    hits = 0
    for ln in lines:
        try:
            first = shlex.split(ln)[0] if ln else ""
        except ValueError:
            continue
        first = first.removeprefix("$").strip() or first
        if _SHELL_START.match(ln) or _SHELL_OPTION.search(ln) or shutil.which(first) or "|" in ln:
            hits += 1
    return hits * 2 >= len(lines)


def detect_language(code: str, label: str | None = None) -> str:
    """'python', 'bash' or 'other', from the code itself; the label only breaks ties.

    Web pages often mislabel code, so a label never overrides what the text shows.

    >>> detect_language('torch.onnx.export(model, x, "m.onnx")', "bash")
    'python'
    >>> detect_language("torchrun --nproc_per_node=4 train.py", "python")
    'bash'
    >>> detect_language("key: value", "yaml")
    'other'
    """
    label_norm = (label or "").strip().lower()
    label_lang = {
        "py": "python",
        "python3": "python",
        "sh": "bash",
        "shell": "bash",
        "console": "bash",
        "zsh": "bash",
    }.get(label_norm, label_norm)
    body = "\n".join(ln for ln in code.splitlines() if not ln.strip().startswith("#"))
    is_python = (_compiles(code) or repair_indentation(code).repaired) and bool(
        _PY_SIGNAL.search(body)
    )
    if is_python:
        return "python"
    if _looks_like_shell(code):
        return "bash"
    if label_lang in {"python", "bash"} and not body.strip():
        return label_lang
    return "other"
