"""Pass 1 of the structure parser: lines, and code regions collapsed into `Code` units.

Code is fenced (```), or lost its fences when the page was scraped: a bare language line
(`python`) followed by code, or a line that can only be code (`import torch`), starts a region that
runs while lines read as code (keywords, assignments, calls, shell commands, open brackets) and
stops where Chinese prose starts outside strings and comments.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ingest.structure.inline import is_cjk

__all__ = ["Code", "Line", "code_like", "line_units"]

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


@dataclass(frozen=True)
class Line:
    raw_start: int  # start of the line (or of the remainder after cut-off code)
    start: int  # start of the stripped content
    end: int  # end of the stripped content
    indent: int
    text: str  # stripped content


@dataclass(frozen=True)
class Code:
    start: int
    end: int
    language: str | None


def _lines(text: str) -> list[Line]:
    out: list[Line] = []
    pos = 0
    for raw in text.split("\n"):
        content = raw.rstrip()
        lead = len(content) - len(content.lstrip(" \t\u3000"))
        indent = len(content[:lead].replace("\t", "    "))
        start = pos + lead
        out.append(Line(pos, start, pos + len(content), indent, content[lead:]))
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
        elif is_cjk(c):
            return i, depth
        i += 1
    return None, depth


def code_like(t: str) -> bool:
    """Whether a line reads as code or a command (a keyword, an assignment, a call, a shell
    command), not prose."""
    if not t or is_cjk(t[0]):
        return False
    return bool(
        t[0] in "#)]}" or _KEYWORD.match(t) or _ASSIGN.match(t) or _CALL.match(t) or _SHELL.match(t)
    )


def _next_nonblank(lines: list[Line], k: int) -> int | None:
    return next((m for m in range(k, len(lines)) if lines[m].text), None)


def _scan_code(lines: list[Line], j: int, text: str) -> tuple[int, int, int, Line | None] | None:
    """Code starting at line j whose fences were lost: (start, end, next line, prose remainder)."""
    if not code_like(lines[j].text):
        return None
    depth, end, k, remainder = 0, -1, j, None
    while k < len(lines):
        ln = lines[k]
        if not ln.text:
            m = _next_nonblank(lines, k)
            if m is None or not (
                depth > 0 or (code_like(lines[m].text) and lines[m].text[0] != "#")
            ):
                break
            k = m
            continue
        if k > j and depth <= 0 and not code_like(ln.text):
            break
        cut, delta = _scan_code_line(ln.text)
        code = ln.text if cut is None else ln.text[:cut].rstrip()
        if not code:
            break
        end, depth, k = ln.start + len(code), depth + delta, k + 1
        if cut is not None:
            rest = ln.start + cut
            remainder = Line(rest, rest, ln.end, 0, text[rest : ln.end])
            break
    if end < 0:
        return None
    return lines[j].raw_start, end, k, remainder


def _closes(line: str, mark: str) -> bool:
    return line.startswith(mark) and not line.strip(mark[0])


def line_units(text: str) -> list[Line | Code]:
    """Lines of the text, with code regions (fenced or lost-fence) collapsed into `Code`s."""
    lines = _lines(text)
    units: list[Line | Code] = []
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
                units.append(Code(body[0].raw_start, body[-1].end, fence.group(2) or None))
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
        units.append(Code(start, end, language))
        if remainder is not None:
            units.append(remainder)
    return units
