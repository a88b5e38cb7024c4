"""Recover code that lost its indentation, and tell Python from shell.

Web pages scraped to text lose code fences and leading whitespace: a `def f():` is followed by an
unindented body. `repair_indentation` searches over indentation choices, cheapest first, until the
code compiles. Block openers (a statement ending in ':') force the next line one level deeper;
elsewhere a line may stay or close blocks. The cost prefers shallow code, and penalises the two
patterns a human would not write: code after `return`/`raise`/`break`/`continue` in the same block,
and a name bound only inside a closed block (an import, a parameter) used after it.
"""

from __future__ import annotations

import ast
import builtins
import functools
import heapq
import io
import itertools
import json
import re
import shlex
import shutil
import tokenize
import tomllib
from dataclasses import dataclass

from pydantic import BaseModel

__all__ = [
    "DATA_LANGUAGES",
    "DOCKERFILE_INSTRUCTIONS",
    "RepairResult",
    "compiles",
    "describe_output",
    "detect_language",
    "dockerfile_lines",
    "normalise_label",
    "repair_indentation",
    "strip_magics",
    "transcript_input",
]

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


def compiles(code: str) -> bool:
    """Whether `code` compiles as Python (top-level `await` allowed, as in a notebook).

    >>> compiles("await f()"), compiles("def f(:")
    (True, False)
    """
    try:  # top-level `await` / `async for` is how notebooks and the asyncio REPL show it
        compile(code, "<snippet>", "exec", flags=ast.PyCF_ALLOW_TOP_LEVEL_AWAIT, dont_inherit=True)
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
            if compiles(_render(lines, list(depths))):
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
    if compiles(code):
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
# Python that shell never is: imports, definitions, dotted calls, `name = value` with spaces
_STRONG_PY = re.compile(
    r"^\s*(import\s+\w|from\s+[\w.]+\s+import\s|(async\s+)?def\s+\w+\s*\(|class\s+\w+|@\w)"
    r"|\w\.\w+\s*\(|^\s*\w+(\[[^\]]*\])?\s+=\s+\S",
    re.MULTILINE,
)
_MAGIC = re.compile(r"^(\s*)([%!]{1,2}[A-Za-z].*)$", re.MULTILINE)
_PROMPT = re.compile(r"^\s*(?:\([\w.-]+\)\s*)?(?:[\w.-]+@[\w.-]+(?::[^$#\n]*)?)?\$(?:\s|$)")
_PYCON = re.compile(r"^\s*>>>(?:\s|$)")
_PYCON_MORE = re.compile(r"^\s*\.\.\.(?:\s|$)")
_TOML_TABLE = re.compile(r"^\s*\[\[?[\w\"'. -]+\]\]?\s*$", re.MULTILINE)
_YAML_KEY = re.compile(r"^(\s*)(?:-\s+)?[\"']?[\w.-]+[\"']?\s*:(?:\s|$)")
_YAML_ITEM = re.compile(r"^(\s*)-(?:\s|$)")
DOCKERFILE_INSTRUCTIONS = frozenset(
    {"FROM", "RUN", "CMD", "LABEL", "MAINTAINER", "EXPOSE", "ENV", "ADD", "COPY", "ENTRYPOINT"}
    | {"VOLUME", "USER", "WORKDIR", "ARG", "ONBUILD", "STOPSIGNAL", "HEALTHCHECK", "SHELL"}
)
_LABELS = {  # fence labels → the language checked
    **dict.fromkeys(["py", "py3", "python3", "python2", "ipython", "ipython3"], "python"),
    **dict.fromkeys(["pycon", "python-repl", "doctest"], "pycon"),
    **dict.fromkeys(["sh", "shell", "zsh", "ksh", "shell-script"], "bash"),
    **dict.fromkeys(["shell-session", "shellsession", "sh-session", "terminal"], "console"),
    **dict.fromkeys(["jsonc", "json5", "jsonl", "ndjson"], "json"),
    **dict.fromkeys(["docker", "containerfile"], "dockerfile"),
    **dict.fromkeys(["txt", "plaintext", "plain", "none"], "text"),
    **dict.fromkeys(["log", "logs"], "output"),
    "yml": "yaml",
    "other": "",
}
DATA_LANGUAGES = ("json", "yaml", "toml", "dockerfile")
"""Languages checked by parsing them (no program is run)."""


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


def normalise_label(label: str | None) -> str:
    """A fence label as a language name ('' when there is none, or it names no language).

    >>> [normalise_label(x) for x in ("Shell", "{.python}", "yml", "json title=a.json", None)]
    ['bash', 'python', 'yaml', 'json', '']
    """
    words = (label or "").strip().strip("{}").lstrip(".").lower().replace(",", " ").split()
    first = words[0] if words else ""
    return _LABELS.get(first, first)


def strip_magics(code: str) -> tuple[str, list[str]]:
    """IPython magics and shell escapes (`%timeit`, `!pip`) replaced by `pass`, and the magics.

    >>> strip_magics("x = 1\\n%timeit f(x)")
    ('x = 1\\npass  # %timeit f(x)', ['%timeit'])
    """
    found = [m.group(2).split()[0] for m in _MAGIC.finditer(code)]
    return _MAGIC.sub(r"\1pass  # \2", code), found


def _is_python(code: str) -> bool:
    """Reads as Python and compiles, or does once its indentation or IPython magics are repaired."""
    body = "\n".join(ln for ln in code.splitlines() if not ln.strip().startswith("#"))
    if not _PY_SIGNAL.search(body):
        return False
    if compiles(code) or repair_indentation(code).repaired:
        return True
    unmagic, magics = strip_magics(code)
    return bool(magics) and (compiles(unmagic) or repair_indentation(unmagic).repaired)


def transcript_input(code: str) -> tuple[str, int]:
    """What was typed in a console (`$ `) or Python (`>>> `) transcript, and how many output lines
    were left out. Continuation lines (`... `, or after a trailing backslash) are kept.

    >>> transcript_input(">>> x = 1 + 1\\n>>> x\\n2")
    ('x = 1 + 1\\nx\\n', 1)
    >>> transcript_input("$ pip install -U peft \\\\\\n    --quiet\\nSuccessfully installed")
    ('pip install -U peft \\\\\\n    --quiet\\n', 1)
    """
    typed: list[str] = []
    output = 0
    python = any(_PYCON.match(ln) for ln in code.splitlines())
    continued = False
    for line in code.splitlines():
        if python and (_PYCON.match(line) or (typed and _PYCON_MORE.match(line))):
            typed.append(line.lstrip()[4:])
        elif not python and (m := _PROMPT.match(line)):
            typed.append(line[m.end() :])
        elif not python and continued:
            typed.append(line)
        elif line.strip():
            output += 1
        continued = not python and bool(typed) and typed[-1].endswith("\\") and line.strip() != ""
    return "".join(t + "\n" for t in typed), output


def _is_transcript(code: str) -> str | None:
    """'pycon' for a `>>>` session, 'console' for `$ ` prompts followed by output, else None.
    (Python that compiles is no session: its `>>>` lines are doctests inside strings.)"""
    lines = code.splitlines()
    if any(_PYCON.match(ln) for ln in lines):
        return None if compiles(code) else "pycon"
    if any(_PROMPT.match(ln) for ln in lines) and transcript_input(code)[1]:
        return "console"
    return None


def _is_json(code: str) -> bool:
    text = code.strip()
    if not text.startswith(("{", "[")):
        return False
    try:
        json.loads(text)
    except ValueError:
        lines = [ln for ln in text.splitlines() if ln.strip()]
        try:
            return len(lines) > 1 and all(isinstance(json.loads(ln), dict) for ln in lines)
        except ValueError:
            return False
    return True


def _is_toml(code: str) -> bool:
    if not _TOML_TABLE.search(code) or "=" not in code:
        return False
    try:
        tomllib.loads(code)
    except tomllib.TOMLDecodeError:
        return False
    return True


def dockerfile_lines(code: str) -> list[tuple[int, str]]:
    """Logical lines of a Dockerfile as (first line number, text): comments and blank lines
    dropped, continuations (a trailing backslash, or the `# escape=` character) joined, heredoc
    bodies (`RUN <<EOF`) skipped.

    >>> dockerfile_lines("FROM x\\n# c\\nRUN a \\\\\\n  && b\\nRUN <<EOF\\necho hi\\nEOF")
    [(1, 'FROM x'), (3, 'RUN a && b'), (5, 'RUN <<EOF')]
    >>> dockerfile_lines("# escape=`\\nFROM x\\nRUN a `\\n  && b")
    [(2, 'FROM x'), (3, 'RUN a && b')]
    """
    out: list[tuple[int, str]] = []
    buf: list[str] = []
    start = 0
    heredoc: str | None = None
    directive = re.match(r"\s*#\s*escape\s*=\s*(\S)", code)
    escape = directive.group(1) if directive else "\\"
    for number, raw in enumerate(code.splitlines(), 1):
        line = raw.strip()
        if heredoc is not None:
            heredoc = None if line == heredoc else heredoc
            continue
        if not buf and (not line or line.startswith("#")):
            continue
        if buf and line.startswith("#"):
            continue  # a comment inside a continued instruction
        start = start if buf else number
        buf.append(line.removesuffix(escape).strip())
        if line.endswith(escape):
            continue
        text = " ".join(p for p in buf if p)
        out.append((start, text))
        buf = []
        if m := re.search(r"<<-?\s*[\"']?(\w+)[\"']?", text):
            heredoc = m.group(1)
    if buf:
        out.append((start, " ".join(p for p in buf if p)))
    return out


def _is_dockerfile(code: str) -> bool:
    lines = dockerfile_lines(code)
    words = [text.split()[0].upper() for _, text in lines]
    return (
        len(words) >= 2
        and words[0] in {"FROM", "ARG"}
        and "FROM" in words
        and all(w in DOCKERFILE_INSTRUCTIONS for w in words)
    )


def _is_yaml(code: str) -> bool:
    """Nested `key:` / `- item` lines only (a flat list of `Word: text` lines may be a log)."""
    lines = [ln for ln in code.splitlines() if ln.strip() and not ln.lstrip().startswith("#")]
    if lines and lines[0].strip() == "---":
        lines = lines[1:]
    if len(lines) < 2 or not (_YAML_KEY.match(lines[0]) or _YAML_ITEM.match(lines[0])):
        return False
    nested = False
    indent = -1
    for ln in lines:
        depth = len(ln) - len(ln.lstrip())
        if _YAML_KEY.match(ln) or _YAML_ITEM.match(ln):
            nested = nested or depth > 0
            indent = depth
        elif depth <= indent or indent < 0:
            return False  # a line that is neither a key, an item, nor a value continued
    return nested


_OUTPUT_KINDS: tuple[tuple[str, re.Pattern[str], float], ...] = (
    ("a Python traceback", re.compile(r"^Traceback \(most recent call last\)", re.M), 0.0),
    ("a usage or help message", re.compile(r"^\s*usage:\s", re.M | re.I), 0.0),
    ("a directory tree", re.compile(r"^[\s│|]*[├└]──", re.M), 0.3),
    (
        "a log",
        re.compile(
            r"^\s*(\[?\d{4}-\d\d-\d\d|\[?\d\d:\d\d:\d\d|\[?(INFO|WARNING|WARN|ERROR|DEBUG)\b)", re.M
        ),
        0.5,
    ),
    ("error messages", re.compile(r"(^|\s)(error|Error|ERROR|fatal|warning):", re.M), 0.0),
)
_SHELL_LABELLED_OUTPUT = {"a Python traceback", "a usage or help message", "a log"}
_NUMBER = re.compile(r"^[-+]?(\d[\d,]*\.?\d*|\.\d+)(e[-+]?\d+)?(%|x|×|ms|s|GB|MB|it/s)?$", re.I)


def describe_output(code: str) -> str | None:
    """What kind of program output a block is, or None if it does not read as output.

    >>> describe_output("model   acc   ms\\nA       0.91  12\\nB       0.88  9.5")
    'a table of numbers'
    >>> describe_output("2024-01-02 10:00:01 INFO loading\\n2024-01-02 10:00:02 INFO done")
    'a log'
    >>> describe_output("import os") is None
    True
    """
    lines = [ln for ln in code.splitlines() if ln.strip()]
    if not lines:
        return None
    for what, pattern, share in _OUTPUT_KINDS:
        hits = sum(1 for ln in lines if pattern.search(ln))
        if hits and hits >= share * len(lines):
            return what
    rows = [re.split(r"[\s|]+", ln.strip(" |")) for ln in lines]
    numeric_rows = sum(1 for row in rows if sum(1 for cell in row if _NUMBER.match(cell)) >= 2)
    return "a table of numbers" if len(rows) >= 2 and numeric_rows * 2 >= len(rows) else None


def _looks_like(language: str, code: str) -> bool:
    """Whether a block labelled as a data language could be one at all (a `json` label on a
    curl command is a mislabel, not a broken JSON file); YAML takes almost any text.

    >>> _looks_like("json", "curl -d '{}' http://x"), _looks_like("dockerfile", "RUN make")
    (False, True)
    """
    text = code.strip()
    if language == "json":
        return re.match(r'[{\["\d-]|true|false|null', text) is not None
    if language == "toml":
        return "=" in text or _TOML_TABLE.search(text) is not None
    if language == "dockerfile":
        return any(
            line.split()[0].upper() in DOCKERFILE_INSTRUCTIONS for _, line in dockerfile_lines(code)
        )
    return True


def _unlabelled(code: str) -> str:
    """What an unlabelled block is: the first kind whose test it passes, tried from the most
    particular (JSON parses or not) to the loosest (a few shell-looking lines)."""
    for language, test in (
        ("json", _is_json),
        ("toml", _is_toml),
        ("dockerfile", _is_dockerfile),
        ("python", _is_python),
        ("bash", _looks_like_shell),
        ("yaml", _is_yaml),
    ):
        if test(code):
            return language
    return "output" if describe_output(code) else "text"


def detect_language(code: str, label: str | None = None) -> str:
    """The language of a code block: its fence label where the text agrees, else what it shows.

    Returns 'python', 'bash', 'pycon' (a `>>>` session), 'console' (`$ ` prompts with output),
    'json', 'yaml', 'toml', 'dockerfile', 'output' (program output: logs, tables of numbers,
    tracebacks), 'text' (nothing recognised), or another label as given ('rust', 'powershell').
    A label wins, except where the text plainly is something else: a transcript under any
    label, JSON or Python under a shell label, shell commands under a Python label.

    >>> detect_language('torch.onnx.export(model, x, "m.onnx")', "bash")
    'python'
    >>> detect_language("torchrun --nproc_per_node=4 train.py", "python")
    'bash'
    >>> detect_language('{"model": "m", "stream": true}', "bash")
    'json'
    >>> detect_language("key: value", "yaml")
    'yaml'
    >>> detect_language("$ echo hi\\nhi")
    'console'
    """
    lab = normalise_label(label)
    transcript = _is_transcript(code)
    if transcript:
        return transcript
    if lab in DATA_LANGUAGES:
        return lab if _looks_like(lab, code) else _unlabelled(code)
    if lab == "python":
        return "bash" if not _is_python(code) and _looks_like_shell(code) else "python"
    if lab in ("bash", "console"):
        if _is_json(code):
            return "json"
        if describe_output(code) in _SHELL_LABELLED_OUTPUT:
            return "output"
        strong = _STRONG_PY.search(code) is not None
        return "python" if strong and _is_python(code) and not _looks_like_shell(code) else "bash"
    if lab in ("text", "output"):
        return "output" if lab == "output" or describe_output(code) else "text"
    return lab or _unlabelled(code)
