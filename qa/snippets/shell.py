"""Shell snippets are checked as commands: the program exists and accepts the options given.

Nothing is run but `PROGRAM --help`, in the sandbox; training scripts are never started.
"""

from __future__ import annotations

import functools
import re
import shlex
import shutil

from pydantic import BaseModel, Field

from kg.errors import SnippetError
from qa.snippets.sandbox import run_sandboxed

__all__ = ["CommandCheck", "check_command_line", "split_commands"]

_ASSIGN_RE = re.compile(r"^[A-Za-z_]\w*=")
_SEPARATORS = {"&&", "||", ";", "|"}


class CommandCheck(BaseModel):
    """One command of a shell snippet."""

    command: str
    program: str
    found: bool
    options: list[str] = Field(default_factory=list)
    unknown_options: list[str] = Field(default_factory=list)
    reason: str = ""

    @property
    def ok(self) -> bool:
        """Program found and every option listed in its help."""
        return self.found and not self.unknown_options and not self.reason


def split_commands(code: str) -> list[list[str]]:
    """Commands of a shell snippet as token lists (comments, prompts and env assignments dropped).

    >>> split_commands("# train\\n$ FOO=1 torchrun --nproc_per_node=4 train.py && echo ok")
    [['torchrun', '--nproc_per_node=4', 'train.py'], ['echo', 'ok']]
    """
    commands: list[list[str]] = []
    for raw in code.splitlines():
        line = raw.strip().removeprefix("$ ").strip()
        if not line or line.startswith("#"):
            continue
        try:
            lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
            lexer.whitespace_split = True
            tokens = list(lexer)
        except ValueError:
            tokens = line.split()
        current: list[str] = []
        for tok in [*tokens, ";"]:
            if tok in _SEPARATORS:
                while current and _ASSIGN_RE.match(current[0]):
                    current.pop(0)
                if current:
                    commands.append(current)
                current = []
            else:
                current.append(tok)
    return commands


def _option_names(tokens: list[str]) -> list[str]:
    return [t.split("=", 1)[0] for t in tokens[1:] if t.startswith("-") and t not in {"-", "--"}]


def _in_help(option: str, help_text: str) -> bool:
    variants = {option, option.replace("_", "-"), option.replace("-", "_")}
    if option.startswith("--"):
        variants.add("--" + option[2:].replace("-", "_"))
    return any(re.search(re.escape(v) + r"(?![\w-])", help_text) for v in variants)


@functools.lru_cache(maxsize=64)
def _help_text(program: str, timeout_s: float) -> str:
    """`PROGRAM --help`, run sandboxed; cached per program (errors are not cached)."""
    try:
        result = run_sandboxed(
            argv=[program, "--help"], timeout_s=timeout_s, memory_mb=4096, output_limit=256 * 1024
        )
    except SnippetError as exc:
        raise SnippetError(f"could not run {program} --help: {exc}") from exc
    text = result.stdout + result.stderr
    if not text.strip():
        raise SnippetError(f"{program} --help printed nothing ({result.summary()})")
    return text


def check_command_line(tokens: list[str], *, timeout_s: float = 60.0) -> CommandCheck:
    """Check one command: `shutil.which` finds it, `--help` (run sandboxed) lists its options."""
    program = tokens[0]
    command = shlex.join(tokens)
    options = _option_names(tokens)
    if shutil.which(program) is None:
        return CommandCheck(
            command=command,
            program=program,
            found=False,
            options=options,
            reason=f"program {program!r} is not installed here",
        )
    if not options:
        return CommandCheck(command=command, program=program, found=True)
    try:
        help_text = _help_text(program, timeout_s)
    except SnippetError as exc:
        return CommandCheck(
            command=command, program=program, found=True, options=options, reason=str(exc)
        )
    unknown = [o for o in options if not _in_help(o, help_text)]
    return CommandCheck(
        command=command, program=program, found=True, options=options, unknown_options=unknown
    )
