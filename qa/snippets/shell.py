"""Shell snippets are checked as commands: the program exists and accepts the options given.

Nothing is run but `PROGRAM [SUBCOMMAND] --help`, in the sandbox, and for an option that help does
not list, `PROGRAM [SUBCOMMAND] OPTION --help`, so that the program itself says whether it knows
the option; training scripts are never started.

A command fails only on evidence: the program rejects the option ("unrecognized option '--x'"),
or its help is generated from its argument parser (argparse lists every option) and names no such
option. Whatever cannot be checked is "not checked", with the reason, and is not a failure: shell
builtins, programs not installed here, files of the project (`./install.sh`), options that belong
to a script (`python train.py --lr 1`) or to a module (`python -m pkg --model-path m`), and options
missing from a help text that may not list them all (`curl --help`).
"""

from __future__ import annotations

import ast
import contextlib
import difflib
import functools
import itertools
import os
import re
import shlex
import shutil
from typing import Literal, NamedTuple

from pydantic import BaseModel, Field

from kg.errors import SnippetError
from qa.snippets.sandbox import run_sandboxed
from qa.snippets.static import module_found

__all__ = ["CommandCheck", "check_command_line", "command_dependencies", "split_commands"]

Verdict = Literal["ok", "failed", "not checked", "builtin"]

_ASSIGN_RE = re.compile(r"^[A-Za-z_]\w*=")
_SEPARATORS = {"&&", "||", ";", "|", "&", "|&", "(", ")", ";;", ";&"}
_REDIRECTS = {">", ">>", "<", "<<", "<<<", ">&", "<&", "&>", "&>>", ">|", "<>"}
_HEAD_WORDS = {"!", "if", "then", "else", "elif", "do", "while", "until", "{", "time"}
_SKIP_WORDS = {"fi", "done", "esac", "}", "for", "select", "case", "function", "[["}
_SUBST_RE = re.compile(r"\$\([^()]*\)|`[^`]*`")
_HEREDOC_RE = re.compile(r"<<-?\s*[\"']?(\w+)[\"']?")
_BUILTINS = frozenset(  # bash's builtins (`compgen -b`)
    {".", ":", "[", "alias", "bg", "bind", "break", "builtin", "caller", "cd", "command"}
    | {"compgen", "complete", "compopt", "continue", "declare", "dirs", "disown", "echo"}
    | {"enable", "eval", "exec", "exit", "export", "false", "fc", "fg", "getopts", "hash"}
    | {"help", "history", "jobs", "kill", "let", "local", "logout", "mapfile", "popd"}
    | {"printf", "pushd", "pwd", "read", "readarray", "readonly", "return", "set", "shift"}
    | {"shopt", "source", "suspend", "test", "times", "trap", "true", "type", "typeset"}
    | {"ulimit", "umask", "unalias", "unset", "wait"}
)
# wrapper → its options that take a value; the command it runs follows
_WRAPPERS: dict[str, set[str]] = {
    "sudo": {"-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-T", "-U"},
    "env": {"-u", "-C", "-S"},
    "nohup": set(),
    "exec": {"-a"},
    "nice": {"-n"},
    "stdbuf": {"-i", "-o", "-e"},
}
_PYTHON_RE = re.compile(r"^(python(\d+(\.\d+)?)?|pypy3?)$")
_INTERPRETERS = {"bash", "sh", "zsh", "dash", "node", "perl", "ruby", "Rscript", "julia", "lua"}
_SCRIPT_RE = re.compile(r"\.(py|sh|bash|zsh|js|mjs|cjs|ts|rb|pl|r|jl|lua|php|ps1)$", re.I)
_HAS_OPTIONS = re.compile(r"^\s*-{1,2}[A-Za-z0-9?]", re.MULTILINE)
_HELP_OPTION = re.compile(r"(?<![\w-])--?[A-Za-z][\w-]*")
_ARGPARSE_OPTIONS = re.compile(r"^(options|optional arguments):", re.MULTILINE)
_COMMAND_LINE = re.compile(
    r"^[ \t]{1,10}([a-z][\w-]*)(?:,[ \t]*[\w-]+)*(?:[ \t]{2,}\S|[ \t]*$)", re.M
)
_CHOICES = re.compile(r"\{([\w-]+(?:,[\w-]+)+)\}")
_REJECTS = re.compile(
    r"unrecogni[sz]ed (option|argument)|unknown (shorthand )?(option|flag|argument)|"
    r"no such option|invalid option(?! (argument|value))|illegal option|option \S+: is unknown|"
    r"unexpected argument|bad option",
    re.IGNORECASE,
)


class CommandCheck(BaseModel):
    """One command of a shell snippet: the verdict, and the evidence or why it was not checked."""

    command: str
    program: str
    found: bool
    verdict: Verdict = "ok"
    options: list[str] = Field(default_factory=list, description="the program's own options")
    unknown_options: list[str] = Field(default_factory=list, description="rejected, on evidence")
    unchecked_options: list[str] = Field(default_factory=list)
    reason: str = ""

    @property
    def ok(self) -> bool:
        """Program found and every option it was given is one it accepts."""
        return self.verdict == "ok"


def _logical_lines(code: str) -> list[str]:
    """Lines with continuations joined, multi-line quotes kept whole, heredoc bodies dropped."""
    out: list[str] = []
    buf = ""
    heredoc: str | None = None
    for raw in code.splitlines():
        if heredoc is not None:
            heredoc = None if raw.strip() == heredoc else heredoc
            continue
        line = raw.strip() if not buf else raw
        if not buf and (not line or line.startswith("#")):
            continue
        buf = f"{buf}\n{line}" if buf and not buf.endswith(" ") else buf + line
        if buf.endswith("\\"):
            buf = buf[:-1] + " "
            continue
        try:
            shlex.split(buf, comments=True)
        except ValueError:
            continue  # an open quote: the string goes on on the next line
        out.append(buf)
        if m := _HEREDOC_RE.search(_SUBST_RE.sub("", buf)):
            heredoc = m.group(1)
        buf = ""
    if buf.strip():
        out.append(buf)
    return out


def _tokens(line: str) -> list[str]:
    while _SUBST_RE.search(line):  # command substitutions: innermost first, not checked
        line = _SUBST_RE.sub("__substitution__", line)
    try:
        lexer = shlex.shlex(line, posix=True, punctuation_chars=True)
        lexer.whitespace_split = True
        return list(lexer)
    except ValueError:
        return line.split()


def split_commands(code: str) -> list[list[str]]:
    """Commands of a shell snippet as token lists: comments, prompts, env assignments,
    redirections and shell keywords dropped; continued lines and multi-line quotes joined.

    >>> split_commands("# train\\n$ FOO=1 torchrun --nproc_per_node=4 train.py && echo ok")
    [['torchrun', '--nproc_per_node=4', 'train.py'], ['echo', 'ok']]
    >>> split_commands("for f in *.py; do\\n  python $f 2>&1 > log\\ndone")
    [['python', '$f']]
    """
    commands: list[list[str]] = []
    for line in _logical_lines(code):
        line = re.sub(r"^\s*\$\s+", "", line)
        current: list[str] = []
        skip_next = False
        tokens = [*_tokens(line), ";"]
        for i, tok in enumerate(tokens):
            if tok == "()" or (tok == "(" and tokens[i + 1 : i + 2] == [")"]):
                current = []  # `name() {`: a function definition, not a command
            elif tok in _SEPARATORS:
                _flush(current, commands)
                current, skip_next = [], False
            elif skip_next:
                skip_next = False  # the file of a redirection
            elif tok in _REDIRECTS:
                skip_next = True
                if current and current[-1].isdigit():
                    current.pop()  # the 2 of 2>&1
            else:
                current.append(tok)
    return commands


def _flush(tokens: list[str], commands: list[list[str]]) -> None:
    while tokens and (tokens[0] in _HEAD_WORDS or _ASSIGN_RE.match(tokens[0])):
        tokens.pop(0)
    if not tokens or tokens[0] in _SKIP_WORDS:
        return
    commands.append(tokens)


def _unwrap(tokens: list[str]) -> list[str]:
    """The command a wrapper runs: `sudo -u me make install` → `make install`.

    >>> _unwrap(["sudo", "-E", "env", "A=1", "make", "-j8"])
    ['make', '-j8']
    """
    while tokens and tokens[0] in _WRAPPERS:
        takes_value = _WRAPPERS[tokens[0]]
        i = 1
        while i < len(tokens) and (tokens[i].startswith("-") or _ASSIGN_RE.match(tokens[i])):
            i += 2 if tokens[i] in takes_value else 1
        tokens = tokens[i:]
    return tokens


def command_dependencies(code: str) -> tuple[list[str], list[str]]:
    """The programs a shell snippet runs (through wrappers such as sudo) and the modules it runs
    with `python -m`, in order, without duplicates: what its check depends on.

    >>> command_dependencies("sudo make install && python3 -m pip install -U x")
    (['make', 'python3'], ['pip'])
    """
    programs: dict[str, None] = {}
    modules: dict[str, None] = {}
    for tokens in split_commands(code):
        tokens = _unwrap(tokens) or tokens
        programs[tokens[0]] = None
        if _PYTHON_RE.match(tokens[0]) and "-m" in tokens[1:-1]:
            modules[tokens[tokens.index("-m") + 1]] = None
    return list(programs), list(modules)


class _Split(NamedTuple):
    """A command's arguments: the program's own options, and what belongs to a script/module."""

    own: list[str]
    positionals: list[str]
    handed_to: str | None  # "the script train.py", "the module pkg"
    handed: list[str]  # options after it
    python_code: str | None  # python -c CODE
    region: list[str]  # the program's own arguments, in order (before a script or module)


def _split(program: str, args: list[str]) -> _Split:
    own: list[str] = []
    positionals: list[str] = []
    python = bool(_PYTHON_RE.match(program))
    interpreter = python or program in _INTERPRETERS
    i = 0
    while i < len(args):
        tok = args[i]
        if tok == "--":
            positionals += args[i + 1 :]
            break
        if python and tok in ("-m", "-c") and i + 1 < len(args):
            own.append(tok)
            rest, region = _opts(args[i + 2 :]), args[: i + 2]
            if tok == "-c":
                return _Split(own, positionals, "the code after -c", rest, args[i + 1], region)
            return _Split(own, positionals, f"the module {args[i + 1]}", rest, None, region)
        if tok.startswith("-") and tok != "-":
            own.append(_option_name(tok))
            i += 2 if python and tok in ("-W", "-X") else 1
            continue
        positionals.append(tok)
        if interpreter or _SCRIPT_RE.search(tok):
            rest = _opts(args[i + 1 :])
            return _Split(own, positionals, f"the script {tok}", rest, None, args[: i + 1])
        i += 1
    return _Split(own, positionals, None, [], None, args)


def _opts(tokens: list[str]) -> list[str]:
    return [_option_name(t) for t in tokens if t.startswith("-") and t not in {"-", "--"}]


def _option_name(token: str) -> str:
    """The option a token names, without its value.

    >>> [_option_name(t) for t in ("--ipc=host", "-fsSL", "-es/ /_/g", "-j8")]
    ['--ipc', '-fsSL', '-e', '-j8']
    """
    name = token.split("=", 1)[0]
    if not name.startswith("--") and not re.fullmatch(r"-[A-Za-z0-9]+", name):
        return name[:2]
    return name


class _Help(NamedTuple):
    text: str
    argparse: bool
    commands: frozenset[str]
    lists_options: bool


def _run_help(argv: list[str], timeout_s: float) -> str:
    try:
        result = run_sandboxed(
            argv=argv, timeout_s=timeout_s, memory_mb=4096, output_limit=256 * 1024
        )
    except SnippetError as exc:
        raise SnippetError(f"could not run `{shlex.join(argv)}`: {exc}") from exc
    text = result.stdout + result.stderr
    if not text.strip():
        raise SnippetError(f"`{shlex.join(argv)}` printed nothing ({result.summary()})")
    return text


@functools.lru_cache(maxsize=128)
def _read_help(prefix: tuple[str, ...], timeout_s: float) -> _Help:
    """`PREFIX --help` (else `-h`), run sandboxed; the full listing where the first is partial."""
    text = _run_help([*prefix, "--help"], timeout_s)
    if not _HAS_OPTIONS.search(text) and not _COMMAND_LINE.search(text):
        with contextlib.suppress(SnippetError):
            text = _run_help([*prefix, "-h"], timeout_s)
    if re.search(r"--help all\b", text):  # curl: "This is not the full help"
        text += _run_help([*prefix, "--help", "all"], timeout_s)
    elif re.search(r"--help-all\b", text):
        text += _run_help([*prefix, "--help-all"], timeout_s)
    commands = set(_COMMAND_LINE.findall(text))
    for group in _CHOICES.findall(text):
        commands.update(group.split(","))
    # argparse: `usage: PROG [-h] ...` (a subparser's: `usage: PROG ... SUB [-h] ...`)
    usage = rf"\s*usage: [^\n]*?(?<![\w-]){re.escape(os.path.basename(prefix[-1]))} \[-h\]"
    argparse = bool(re.match(usage, text) and _ARGPARSE_OPTIONS.search(text))
    return _Help(text, argparse, frozenset(commands), bool(_HAS_OPTIONS.search(text)))


def _takes_value(option: str, text: str) -> bool:
    """Whether the help line that lists `option` shows a value after it (`--name string`,
    `-o, --output <file>`, `--width=COLS`; not an optional `--color[=WHEN]`).

    >>> _takes_value("-p", "  -d, --detach         Run\\n  -p, --publish list   Publish")
    True
    >>> _takes_value("-d", "  -d, --detach         Run\\n  -p, --publish list   Publish")
    False
    """
    for line in text.splitlines():
        spec = re.split(r"\s{2,}|\t| : ", line.strip(), maxsplit=1)[0]
        if not spec.startswith("-"):
            continue
        words = [w for w in re.split(r"[,\s]+", spec) if w]
        names = {re.split(r"[=\[]", w)[0] for w in words if w.startswith("-")}
        if option in names or option.replace("_", "-") in names:
            return "[=" not in spec and ("=" in spec or any(not w.startswith("-") for w in words))
    return False


def _words_before(region: list[str], text: str) -> tuple[dict[str, int], list[str]]:
    """Option → how many words (neither options nor their values) come before it; the words.

    >>> _words_before(["run", "--name", "web", "-d", "img", "--rm"], "  --name string  Name")
    ({'--name': 1, '-d': 1, '--rm': 2}, ['run', 'img'])
    """
    out: dict[str, int] = {}
    words: list[str] = []
    value_next = False
    for tok in region:
        if value_next:
            value_next = False
        elif tok.startswith("-") and tok != "-":
            name = _option_name(tok)
            out.setdefault(name, len(words))
            value_next = "=" not in tok and _takes_value(name, text)
        else:
            words.append(tok)
    return out, words


def _in_help(option: str, text: str) -> bool:
    variants = {option, option.replace("_", "-"), option.replace("-", "_")}
    variants.add(option[:2] + option[2:].replace("-", "_"))
    if option.startswith("--no-"):
        variants |= {"--[no-]" + option[5:], "--" + option[5:]}
    return any(re.search(r"(?<![\w-])" + re.escape(v) + r"(?![\w-])", text) for v in variants)


def _listed(option: str, help_: _Help) -> bool:
    """Whether the help lists `option` (or its letters `-fsSL`, or `-j` of `-j8`, or, for
    argparse, a long option it abbreviates)."""
    name = option.split("=", 1)[0]
    if _in_help(name, help_.text):
        return True
    letters = name[1:] if not name.startswith("--") and len(name) > 2 else ""
    if letters and (
        all(_in_help("-" + ch, help_.text) for ch in letters) or _in_help(name[:2], help_.text)
    ):
        return True
    if help_.argparse and name.startswith("--"):
        longs = {o.replace("_", "-") for o in _HELP_OPTION.findall(help_.text)}
        return any(o.startswith(name.replace("_", "-")) for o in longs)
    return False


def _mentions(line: str, option: str) -> bool:
    name = option.lstrip("-")
    if len(name) > 1:
        return name in line
    return f"-{name}" in line or f"'{name}'" in line


@functools.lru_cache(maxsize=256)
def _rejection(prefix: tuple[str, ...], option: str, timeout_s: float) -> str | None:
    """The program's own message rejecting `option`, from `PREFIX OPTION --help`; None if none."""
    try:
        result = run_sandboxed(
            argv=[*prefix, option, "--help"],
            timeout_s=min(timeout_s, 30.0),
            memory_mb=4096,
            output_limit=64 * 1024,
        )
    except SnippetError:
        return None
    if result.ok:
        return None
    for line in (result.stderr + "\n" + result.stdout).splitlines():
        if _REJECTS.search(line) and _mentions(line, option):
            return line.strip()[:200]
    return None


def _suggestion(option: str, text: str) -> str:
    known = sorted(set(_HELP_OPTION.findall(text)))
    close = difflib.get_close_matches(option, known, n=1, cutoff=0.75)
    return f" (did you mean {close[0]}?)" if close else ""


def _subcommands(program: str, leading: list[str], timeout_s: float) -> tuple[str, ...]:
    """`(pip, install)` for `pip install -r r.txt`: of the words right after the program, those
    its help lists as commands (or, for a `<command>` usage such as git's, whose own help lists
    options)."""
    prefix: tuple[str, ...] = (program,)
    for word in leading[:2]:
        if not re.fullmatch(r"[a-z][\w-]*", word):
            break
        try:
            help_ = _read_help(prefix, timeout_s)
            listed = word in help_.commands
            if not listed and not (len(prefix) == 1 and "<command>" in help_.text[:600]):
                break
            sub = _read_help((*prefix, word), timeout_s)
        except SnippetError:
            break
        if sub.text == help_.text or not (listed or sub.lists_options):
            break  # `docker compose` without the plugin: the same top-level help again
        prefix = (*prefix, word)
    return prefix


def _not_checked(command: str, program: str, reason: str, *, found: bool) -> CommandCheck:
    return CommandCheck(
        command=command, program=program, found=found, verdict="not checked", reason=reason
    )


def check_command_line(tokens: list[str], *, timeout_s: float = 60.0) -> CommandCheck:
    """Check one command: the program is here (`shutil.which`), and each of its own options is
    listed in its help or, if not, whether the program itself rejects it (both run sandboxed)."""
    command = shlex.join(tokens)
    tokens = _unwrap(tokens) or tokens
    program, args = tokens[0], tokens[1:]
    if program in _BUILTINS:
        reason = f"{program} is a shell builtin: not checked"
        return CommandCheck(
            command=command, program=program, found=True, verdict="builtin", reason=reason
        )
    if "$" in program or "__substitution__" in program:
        return _not_checked(command, program, "the program is a variable: not checked", found=False)
    if "/" in program or "\\" in program:
        if not (os.path.isfile(program) and os.access(program, os.X_OK)):
            why = f"{program} is a file of the project, not here: not checked"
            return _not_checked(command, program, why, found=False)
    elif shutil.which(program) is None:
        why = f"{program} is not installed here: not checked"
        return _not_checked(command, program, why, found=False)
    split = _split(program, args)
    code_error = _python_code_error(split.python_code)
    if code_error:
        reason = f"{program} -c: the code does not parse: {code_error}"
        return CommandCheck(
            command=command, program=program, found=True, verdict="failed", reason=reason
        )
    return _check_options(command, program, split, timeout_s)


def _python_code_error(code: str | None) -> str | None:
    if code is None:
        return None
    try:
        ast.parse(code)
    except SyntaxError as exc:
        return f"SyntaxError: {exc.msg} (line {exc.lineno})"
    return None


def _check_options(command: str, program: str, split: _Split, timeout_s: float) -> CommandCheck:
    base = CommandCheck(command=command, program=program, found=True, options=split.own)
    handed = _handed_reason(split)
    if not split.own:
        return _finish(base, program, handed, [], [])
    leading = list(itertools.takewhile(lambda t: not t.startswith("-"), split.region))
    prefix = _subcommands(program, leading, timeout_s)
    name = " ".join(prefix)
    try:
        help_ = _read_help(prefix, timeout_s)
        if not help_.lists_options:
            first = help_.text.strip().splitlines()[0][:120]
            raise SnippetError(f"`{name} --help` lists no options ({first})")
    except SnippetError as exc:
        base.unchecked_options = split.own
        return _finish(base, name, handed, [f"{exc}: its options are not checked"], [])
    failures: list[str] = []
    unchecked: list[str] = []
    after, words = _words_before(split.region, help_.text)
    placed = len(prefix) - 1  # the words that are subcommands
    unplaced: list[str] = []
    for option in dict.fromkeys(split.own):
        if _listed(option, help_):
            continue
        opt = option.split("=", 1)[0]
        if after.get(option, 0) > placed:
            # after a word that is no known subcommand: it may be an unlisted subcommand's, or
            # go to what that word names (`torchrun -m pkg.train --cfg c`)
            unplaced.append(opt)
            continue
        said = None if help_.argparse else _rejection(prefix, opt, timeout_s)
        if said:
            failures.append(f"{name} does not accept {opt}: `{name} {opt} --help` says: {said}")
        elif help_.argparse:
            tip = _suggestion(opt, help_.text)
            failures.append(
                f"{name} does not accept {opt}: its argparse help lists every option, "
                f"not this one{tip}"
            )
        else:
            base.unchecked_options.append(opt)
            continue
        base.unknown_options.append(opt)
    if base.unchecked_options:
        unchecked.append(
            f"{name}: {', '.join(base.unchecked_options)} not in its --help, which may not list "
            "every option: not checked"
        )
    if unplaced:
        unchecked.append(
            f"{name}: {', '.join(unplaced)} not in its --help and after {words[placed]!r}, "
            f"which may take {'it' if len(unplaced) == 1 else 'them'}: not checked"
        )
        base.unchecked_options += unplaced
    return _finish(base, name, handed, unchecked, failures)


def _handed_reason(split: _Split) -> tuple[str, bool] | None:
    """What is said about a script's or module's part of the command, and whether that part is
    left unchecked (options handed to it, or a module that is not installed here)."""
    if split.handed_to is None:
        return None
    module = re.fullmatch(r"the module (\S+)", split.handed_to)
    if module and not module_found(module.group(1)):
        return f"{split.handed_to} is not installed here: its arguments are not checked", True
    if split.handed:
        return f"{', '.join(split.handed)} go to {split.handed_to}: not checked", True
    return (f"{split.handed_to} is installed here", False) if module else None


def _finish(
    base: CommandCheck,
    name: str,
    handed: tuple[str, bool] | None,
    unchecked: list[str],
    failures: list[str],
) -> CommandCheck:
    note = ""
    if handed and handed[1]:
        unchecked.append(f"{name}: {handed[0]}")
    elif handed:
        note = f" ({handed[0]})"
    if failures:
        base.verdict, base.reason = "failed", "; ".join(failures + unchecked)
    elif unchecked:
        base.verdict, base.reason = "not checked", "; ".join(unchecked)
    else:
        known = list(dict.fromkeys(base.options))
        base.reason = (f"{name} accepts {', '.join(known)}" if known else f"{name} found") + note
    return base
