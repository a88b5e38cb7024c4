"""Validate a snippet level by level, and run it in the sandbox where that is safe and possible.

Levels, each with an outcome and a reason:

- Python: language, repair, parse, imports, names, apis, network, machine, (placeholders,) run;
- a `>>>` session: transcript (the output lines are left out), then the Python levels;
- shell: command; a `$ ` console transcript: transcript, then command on what was typed;
- JSON, YAML, TOML, Dockerfile: syntax (parsed, never run);
- output, plain text and other languages: check, always skipped with the reason.

Status: `failed` only on evidence against the code: a parse error, an API that does not exist
or does not take an argument, a program that rejects an option, a run that does not end (it
spends its CPU budget, or waits for nothing), or a non-zero exit in the sandbox that neither what
the sandbox lacks (a GPU, a file, the network, a module) nor a stand-in fixture or substitution
explains. Code that needs what this machine cannot give is not run: a download (a hub model, a
dataset, a URL), an accelerator, a model file, credentials, a service (`qa.snippets.requires`),
and so is an illustration with `...` where code was left out. `passed` if the snippet ran, every
command checked out, or the file parsed; `skipped` otherwise, with the reason.

A failed level says, in one line, the snippet's line, the error, and why it is the code's fault
(`apis: failed — line 2: `shutil.copy("a", "b", follow_symlink=False)` — shutil.copy() has no
keyword argument 'follow_symlink' (did you mean 'follow_symlinks'?) (Python 3.11.7 here): the
call does not bind to the installed signature`); `decisive_reason` picks it for listings.

Run limits: `timeout_s` of wall clock (generous: a busy machine is slow), `cpu_s` of CPU for the
snippet's own code, its imports timed on their own (`qa.snippets.sandbox.runner_source`), so that
`while True: pass` is stopped after 10 s of CPU while `import torch` takes what it takes.
"""

from __future__ import annotations

import ast
import io
import json
import platform
import re
import sys
import time
import tokenize
from collections.abc import Iterable
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, Field

from ingest.code_repair import (
    DATA_LANGUAGES,
    compiles,
    describe_output,
    detect_language,
    repair_indentation,
    strip_magics,
    transcript_input,
)
from kg.documents import Snippet, SnippetStatus, content_hash
from kg.errors import SnippetError
from qa.schema import SnippetReport
from qa.snippets.fixtures import CHECK_MARKER, Completion, Fixture, complete_snippet
from qa.snippets.probe import SignatureProbe, shared_probe
from qa.snippets.requires import (
    accelerator_here,
    describe_needs,
    machine_needs,
    mentions_accelerator,
    placeholders,
)
from qa.snippets.sandbox import AFTER_FILE, SNIPPET_FILE, SandboxResult, run_sandboxed
from qa.snippets.shell import check_command_line, split_commands
from qa.snippets.static import (
    ImportCheck,
    api_calls,
    api_references,
    check_data,
    check_imports,
    first_bindings,
    implicit_imports,
    import_bindings,
    installed_version,
    module_found,
    network_needs,
    serving_calls,
    undefined_names,
    used_before_bound,
)

__all__ = [
    "DECISIVE_LEVELS",
    "IMPORT_CPU_S",
    "RUN_CPU_S",
    "RUN_WALL_S",
    "LevelOutcome",
    "SnippetCheck",
    "check_code",
    "decisive_reason",
    "format_snippet_table",
    "to_report",
    "validate_code",
    "validate_snippet",
]

Outcome = Literal["ok", "failed", "skipped", "info"]
DECISIVE_LEVELS = ("run", "command", "syntax")
"""Levels whose `ok` makes a snippet pass: it ran, its commands checked out, or it parsed."""
RUN_CPU_S = 10
"""CPU seconds a snippet's own code may use (its imports not counted)."""
IMPORT_CPU_S = 240
"""CPU seconds its imports may use on top (torch, transformers and peft take 3-5 s)."""
RUN_WALL_S = 120.0
"""Wall-clock seconds a run may take, imports included: generous, a busy machine is slow."""


class LevelOutcome(BaseModel):
    """One validation level's result."""

    level: str
    outcome: Outcome
    reason: str

    def line(self) -> str:
        """As shown in `Snippet.detail`.

        >>> LevelOutcome(level="parse", outcome="ok", reason="compiles").line()
        'parse: ok — compiles'
        """
        return f"{self.level}: {self.outcome} — {self.reason}"


class SnippetCheck(BaseModel):
    """Everything the validator found about one piece of code."""

    language: str
    code: str = Field(description="after indentation repair")
    repaired: bool = False
    levels: list[LevelOutcome] = Field(default_factory=list)
    fixtures: list[Fixture] = Field(default_factory=list)
    substitutions: list[str] = Field(default_factory=list)
    program: str | None = Field(default=None, description="what ran in the sandbox")
    sandbox: SandboxResult | None = None
    machine: dict[str, str] = Field(
        default_factory=dict,
        description="what of this machine the verdict depends on (`accelerator`: none | nvidia)",
    )
    timings_ms: dict[str, float] = Field(default_factory=dict)

    @property
    def status(self) -> SnippetStatus:
        """failed if a level failed; passed if it ran, its commands check out or it parsed (a
        data file); else skipped."""
        outcomes = {lv.level: lv.outcome for lv in self.levels}
        if "failed" in outcomes.values():
            return SnippetStatus.FAILED
        if any(outcomes.get(level) == "ok" for level in DECISIVE_LEVELS):
            return SnippetStatus.PASSED
        return SnippetStatus.SKIPPED

    @property
    def detail(self) -> str:
        """One line per level."""
        return "\n".join(lv.line() for lv in self.levels)


class _Limits(BaseModel):
    """What a run may use."""

    timeout_s: float
    memory_mb: int
    cpu_s: int


class _Checker:
    def __init__(self, check: SnippetCheck) -> None:
        self.check = check
        self._t = time.perf_counter()

    def add(self, level: str, outcome: Outcome, reason: str) -> None:
        now = time.perf_counter()
        self.check.levels.append(LevelOutcome(level=level, outcome=outcome, reason=reason))
        self.check.timings_ms[level] = round((now - self._t) * 1000, 2)
        self._t = now


def check_code(
    code: str,
    language: str | None = None,
    *,
    execute: bool = True,
    probe: SignatureProbe | None = None,
    timeout_s: float = RUN_WALL_S,
    memory_mb: int = 6144,
    cpu_s: int = RUN_CPU_S,
) -> SnippetCheck:
    """Validate `code` (labelled `language`, which may be wrong or None) at every level; a run
    gets `timeout_s` of wall clock and `cpu_s` of CPU for its own code (imports not counted)."""
    lang = detect_language(code, language)
    check = SnippetCheck(language=lang, code=code)
    c = _Checker(check)
    said = f" (labelled {language!r})" if language and language != lang else ""
    c.add("language", "info", f"{lang}{said}")
    if lang in ("bash", "console"):
        _check_shell(code, c, transcript=lang == "console")
    elif lang in ("python", "pycon"):
        python = _typed(code, c, "a Python session", ">>> / ...") if lang == "pycon" else code
        limits = _Limits(timeout_s=timeout_s, memory_mb=memory_mb, cpu_s=cpu_s)
        _check_python(python, c, execute, probe or shared_probe(), limits)
        if lang == "pycon":
            check.code, check.repaired = code, False  # shown as the session it was
    elif lang in DATA_LANGUAGES:
        outcome, reason = check_data(code, lang)
        c.add("syntax", outcome, reason)
    else:
        c.add("check", "skipped", _not_checked_reason(lang, code))
    return check


def _not_checked_reason(lang: str, code: str) -> str:
    """Why a block is not checked at all: it is output, text, or a language kgqa does not check.

    >>> _not_checked_reason("output", "step  loss\\n1     0.52\\n2     0.47")
    'not checked: a table of numbers (program output), not code'
    >>> _not_checked_reason("rust", "fn main() {}")
    'not checked: rust is not a language kgqa checks (Python, shell, JSON, YAML, TOML, Dockerfile)'
    """
    if lang == "output":
        return f"not checked: {describe_output(code) or 'output'} (program output), not code"
    if lang == "text":
        return "not checked: plain text, not recognised as code or data"
    return (
        f"not checked: {lang} is not a language kgqa checks "
        "(Python, shell, JSON, YAML, TOML, Dockerfile)"
    )


def _typed(code: str, c: _Checker, session: str, prompts: str) -> str:
    """What was typed in a transcript (what is checked), saying how much output is left out."""
    typed, left_out = transcript_input(code)
    lines = sum(1 for ln in typed.splitlines() if ln.strip())
    c.add(
        "transcript",
        "info",
        f"{session}: {lines} line(s) typed after {prompts} prompts are checked, "
        f"{left_out} output line(s) are not",
    )
    return typed


def _check_shell(code: str, c: _Checker, *, transcript: bool) -> None:
    if transcript:
        code = _typed(code, c, "a console session", "$")
    commands = split_commands(code)
    if not commands:
        c.add("command", "skipped", "no command to check (only comments or variable assignments)")
        return
    checks = [check_command_line(tokens) for tokens in commands]
    verdicts = {cc.verdict for cc in checks}
    outcome: Outcome = "skipped"
    if "failed" in verdicts:
        outcome = "failed"
    elif "ok" in verdicts and verdicts <= {"ok", "builtin"}:
        outcome = "ok"
    first = [cc.reason for cc in checks if cc.verdict == "failed"]
    reasons = dict.fromkeys(first + [cc.reason for cc in checks if cc.verdict != "failed"])
    said = " (nothing was run)" if outcome == "skipped" else " (checked as a command, not run)"
    c.add("command", outcome, "; ".join(reasons) + said)


def _check_python(
    code: str, c: _Checker, execute: bool, probe: SignatureProbe, limits: _Limits
) -> None:
    magics: list[str] = []
    if not compiles(code) and not repair_indentation(code).repaired:
        unmagic, magics = strip_magics(code)
        code = unmagic if magics else code
    repair = repair_indentation(code)
    c.check.code, c.check.repaired = repair.code, repair.repaired
    said = f"; IPython magics not checked: {', '.join(magics)}" if magics else ""
    c.add("repair", "info", repair.detail + said)
    top_level_await = False
    try:
        tree = ast.parse(repair.code)
        try:
            compile(tree, "<snippet>", "exec", dont_inherit=True)
        except SyntaxError:
            flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
            compile(tree, "<snippet>", "exec", flags=flags, dont_inherit=True)
            top_level_await = True
    except SyntaxError as exc:
        c.add(*_unparsed(repair.code, exc))
        return
    c.add("parse", "ok", "compiles" + (" with top-level await" if top_level_await else ""))
    lines = repair.code.splitlines()
    bindings = import_bindings(tree)
    imports = check_imports(tree)
    missing_mods = [i.module for i in imports if not i.found]
    c.add("imports", "skipped" if missing_mods else "ok", _imports_reason(imports))
    undefined = undefined_names(tree)
    implicit = implicit_imports(tree, undefined)
    bindings.update(implicit)
    has_ort = any(i.module == "onnxruntime" for i in imports) or module_found("onnxruntime")
    completion = complete_snippet(
        tree, bindings, undefined, has_onnxruntime=has_ort, source=repair.code
    )
    c.check.fixtures, c.check.substitutions = completion.fixtures, completion.substitutions
    early = used_before_bound(tree)
    bound_at = first_bindings(tree)
    c.add("names", "info", _names_reason(undefined, completion, early, bound_at))
    _check_apis(tree, bindings, missing_mods, probe, c, lines)
    runs = completion.tree or tree  # as it would run: after substitutions (CUDA → CPU)
    needs = network_needs(runs, bindings)
    c.add(
        "network",
        "skipped" if needs else "ok",
        ("needs network: " + "; ".join(needs) + " — not run")
        if needs
        else "no download found in the code (hub models, datasets, pretrained weights, URLs)",
    )
    gpu = accelerator_here()
    lacking = machine_needs(runs, bindings, accelerator=gpu)
    if mentions_accelerator(tree, bindings):
        c.check.machine["accelerator"] = "nvidia" if gpu else "none"
    c.add(
        "machine",
        "skipped" if lacking else "ok",
        "; ".join(describe_needs(lacking)) + " — not run"
        if lacking
        else "nothing found in the code that this machine lacks (accelerator, model files, "
        "credentials, services)",
    )
    marks = placeholders(tree, bindings)
    if marks:
        c.add("placeholders", "skipped", _illustration(marks) + " — not run")
    blockers = _run_blockers(c.check.levels, missing_mods, completion, needs, execute)
    if early:
        blockers.append("needs context: " + _early_reason(early, bound_at))
    blockers += describe_needs(lacking)
    if marks:
        blockers.append(_illustration(marks))
    serving = serving_calls(tree, bindings)
    if serving:
        blockers.append(f"serves until stopped: {', '.join(serving)}")
    if magics:
        blockers.append(f"IPython magics ({', '.join(magics)}) run only in IPython")
    if top_level_await:
        blockers.append("top-level await runs only in a notebook or the asyncio REPL")
    if blockers:
        c.add("run", "skipped", "not run: " + "; ".join(blockers))
        return
    _run(completion, c, limits, lines, gpu=gpu and bool(c.check.machine))


def _illustration(marks: list[str]) -> str:
    """Why a snippet with `...` left in it is an illustration, with its first places.

    >>> _illustration(["LoraConfig(...) (line 3)"])
    'an illustration: `...` stands for code left out: LoraConfig(...) (line 3)'
    """
    more = f" and {len(marks) - 3} more" if len(marks) > 3 else ""
    return "an illustration: `...` stands for code left out: " + ", ".join(marks[:3]) + more


def _quote(lines: list[str], line: int | None, limit: int = 90) -> str:
    """`` `the line` `` of the snippet (1-based), stripped and cut; '' when there is none.

    >>> _quote(["import x", "  x.f(1)  "], 2)
    '`x.f(1)`'
    """
    if line is None or not 1 <= line <= len(lines):
        return ""
    text = lines[line - 1].strip()
    return f"`{text if len(text) <= limit else text[: limit - 1] + '…'}`"


def _at(lines: list[str], line: int | None) -> str:
    """`line N: `code` — `, the start of an evidence line ('' without a line)."""
    if line is None:
        return ""
    quoted = _quote(lines, line)
    return f"line {line}: {quoted} — " if quoted else f"line {line}: "


def _parses(code: str) -> bool:
    return compiles(code) or repair_indentation(code).repaired


def _unparsed(code: str, error: SyntaxError) -> tuple[str, Outcome, str]:
    """The parse level of code that does not compile: failed with the SyntaxError, unless it is
    documentation that only looks like code (placeholders to fill in, a signature listing).

    >>> _unparsed("f(<your-key>)", SyntaxError("invalid syntax"))[1:]
    ('skipped', 'placeholders to fill in (<your-key>); it parses once they are')
    >>> _unparsed('attend(q, k, causal=False):\\n"Attention."', SyntaxError("x"))[1]
    'skipped'
    >>> err = SyntaxError("'(' was never closed", ("<s>", 2, 5, "", 2, 5))
    >>> _unparsed("x = 1\\nf(g(2)\\n", err)[2]
    "line 2: `f(g(2)` — SyntaxError: '(' was never closed: Python cannot parse the code"
    """
    filled = _PLACEHOLDER.sub("placeholder", code)
    if filled != code and _parses(filled):
        shown = ", ".join(dict.fromkeys(_PLACEHOLDER.findall(code)))
        return "parse", "skipped", f"placeholders to fill in ({shown}); it parses once they are"
    if re.match(r"\s*[A-Za-z_][\w.]*\(", code) and _parses("def " + code.lstrip()):
        return (
            "parse",
            "skipped",
            ("an API signature written without `def` (documentation, not code): not checked"),
        )
    if (error.msg or "").startswith("expected an indented block after") and _parses(
        code.rstrip() + "\n    ...\n"
    ):
        return (
            "parse",
            "skipped",
            "an API signature: a definition shown without its body (documentation, not code): "
            "not checked",
        )
    elided = _elided_arguments(code)
    if elided is not None and _parses(elided):
        return (
            "parse",
            "skipped",
            "an illustration: `...` stands for arguments left out (Python does not allow it "
            "after keyword arguments); it parses once they are filled in",
        )
    where = _at(code.splitlines(), error.lineno)
    return "parse", "failed", f"{where}SyntaxError: {error.msg}: Python cannot parse the code"


def _elided_arguments(code: str) -> str | None:
    """`code` with each `...` that stands for call arguments (`f(a=1, ...)`) written as `**_`,
    which Python allows anywhere in a call; None when there is none, or it does not tokenize.

    >>> _elided_arguments("cfg = BitsAndBytesConfig(load_in_4bit=True, ...)")
    'cfg = BitsAndBytesConfig(load_in_4bit=True, **_)'
    >>> _elided_arguments('print("wait...")') is None
    True
    """
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(code).readline)]
    except (tokenize.TokenError, SyntaxError):
        return None
    significant = [t for t in tokens if t.type not in _TRIVIA]
    spots = [
        here
        for before, here, after in zip(significant, significant[1:], significant[2:], strict=False)
        if here.string == "..." and before.string in "(," and after.string in "),"
    ]
    if not spots:
        return None
    lines = code.splitlines(keepends=True)
    for tok in reversed(spots):
        (row, col), (_, end) = tok.start, tok.end
        lines[row - 1] = lines[row - 1][:col] + "**_" + lines[row - 1][end:]
    return "".join(lines)


_TRIVIA = {tokenize.NL, tokenize.NEWLINE, tokenize.COMMENT, tokenize.INDENT, tokenize.DEDENT}


def _imports_reason(imports: list[ImportCheck]) -> str:
    if not imports:
        return "no imports"
    parts = []
    for i in imports:
        if not i.found:
            parts.append(f"{i.module} NOT FOUND here")
        else:
            parts.append(f"{i.module} ({i.version})" if i.version else i.module)
    return ", ".join(parts)


def _check_apis(
    tree: ast.Module,
    bindings: dict[str, str],
    missing_mods: list[str],
    probe: SignatureProbe,
    c: _Checker,
    lines: list[str],
) -> None:
    missing_tops = {m.split(".")[0] for m in missing_mods}
    calls = [
        k
        for k in [*api_calls(tree, bindings), *api_references(tree, bindings)]
        if k.target.split(".")[0] not in missing_tops
    ]
    if not calls:
        c.add("apis", "info", "no calls to imported APIs")
        return
    bad: list[str] = []
    good: list[str] = []
    try:
        for call in calls:
            sc = probe.check(call)
            if not sc.binds:
                why = (
                    "the call does not bind to the installed signature"
                    if sc.exists
                    else "the API does not exist in the installed version (removed, renamed or "
                    "never there)"
                )
                here = _installed(call.target)
                bad.append(f"{_at(lines, call.line)}{sc.reason} ({here} here): {why}")
            elif not call.attribute:
                kws = f" with {', '.join(call.keywords)}" if call.keywords else ""
                good.append(f"{call.target}{kws}")
    except SnippetError as exc:
        c.add("apis", "skipped", f"signature check unavailable: {exc}")
        return
    refs = sum(call.attribute for call in calls)
    also = f"; {refs} attribute(s) exist" if refs else ""
    if bad:
        c.add("apis", "failed", "; ".join(bad))
    elif not good:
        c.add("apis", "ok", f"{refs} attribute(s) of imported modules exist")
    else:
        c.add(
            "apis",
            "ok",
            f"{len(good)} call(s) bind to installed signatures: "
            + ", ".join(dict.fromkeys(good))
            + also,
        )


def _installed(target: str) -> str:
    """What provides `target` here, as `name version`.

    >>> _installed("json.dumps").startswith("Python 3.")
    True
    """
    top = target.split(".")[0]
    if top in sys.stdlib_module_names or top == "builtins":
        return f"Python {platform.python_version()}"
    version = installed_version(top)
    return f"{top} {version}" if version else top


def _early_reason(early: dict[str, int], bound_at: dict[str, int] | None = None) -> str:
    """Names read before the snippet binds them: context it continues, or (bound further down)
    definitions listed out of order.

    >>> _early_reason({"model": 3}, {"model": 3})
    'model (read on line 3 before the snippet binds it: it continues earlier code)'
    >>> _early_reason({"y": 7, "x": 7})
    'y (line 7), x (line 7): read before the snippet binds them (it continues earlier code)'
    >>> _early_reason({"AxisType": 4}, {"AxisType": 6})
    'AxisType (read on line 4, defined on line 6: definitions listed out of order)'
    """
    bound_at = bound_at or {}
    later = {n: ln for n, ln in early.items() if bound_at.get(n, 0) > ln}
    parts = [
        f"{name} (read on line {line}, defined on line {bound_at[name]}: definitions listed out "
        "of order)"
        for name, line in later.items()
    ]
    rest = {n: ln for n, ln in early.items() if n not in later}
    if len(rest) == 1:
        ((name, line),) = rest.items()
        parts.append(
            f"{name} (read on line {line} before the snippet binds it: it continues earlier code)"
        )
    elif rest:
        names = ", ".join(f"{name} (line {line})" for name, line in rest.items())
        parts.append(names + ": read before the snippet binds them (it continues earlier code)")
    return "; ".join(parts)


def _names_reason(
    undefined: list[str], completion: Completion, early: dict[str, int], bound_at: dict[str, int]
) -> str:
    if not undefined and not early:
        return "self-contained"
    parts = [f"uses undefined {', '.join(undefined)}"] if undefined else []
    if early:
        parts.append("reads before binding: " + _early_reason(early, bound_at))
    if completion.fixtures:
        parts.append(
            "fixtures: " + "; ".join(f"{f.name} ({f.reason})" for f in completion.fixtures)
        )
    if completion.substitutions:
        parts.append("substitutions: " + "; ".join(completion.substitutions))
    if completion.missing:
        parts.append("needs context: " + ", ".join(completion.missing))
    return " — ".join(parts)


def _run_blockers(
    levels: list[LevelOutcome],
    missing_mods: list[str],
    completion: Completion,
    needs: list[str],
    execute: bool,
) -> list[str]:
    out: list[str] = []
    if not execute:
        out.append("execution not requested")
    if any(lv.outcome == "failed" for lv in levels):
        out.append("an earlier level failed")
    if missing_mods:
        out.append("modules not installed here: " + ", ".join(missing_mods))
    if needs:
        more = f" and {len(needs) - 2} more" if len(needs) > 2 else ""
        out.append("needs network: " + "; ".join(needs[:2]) + more)
    if completion.missing:
        out.append("needs context: " + ", ".join(completion.missing))
    return out


_PLACEHOLDER = re.compile(r"<[A-Za-z_][^<>\n]{0,60}>")
# what a run needs that the sandbox does not give, by the last line of its error
_NEEDS = (
    (
        re.compile(
            r"CUDA|cuda|NVIDIA|NCCL|cudnn|cuDNN|GPU|accelerator|\bMPS\b|\bXPU\b|"
            r"(?i:\b(gpu|tpu)\b)"
        ),
        "it needs an accelerator",
    ),
    (
        re.compile(
            r"^(\w+\.)*(ConnectionError|ConnectionRefusedError|ConnectionResetError|URLError|"
            r"ConnectError|gaierror|MaxRetryError|LocalEntryNotFoundError|OfflineModeIsEnabled|"
            r"RepositoryNotFoundError|HfHubHTTPError|HFValidationError|ProxyError|SSLError|"
            r"Timeout|ReadTimeout)\b|"
            r"Name or service not known|Temporary failure in name resolution|"
            r"Network is unreachable|couldn't connect to|huggingface\.co|"
            r"not a valid model identifier|Can't load (the )?(tokenizer|config|model)"
        ),
        "it needs the network, which the sandbox does not have",
    ),
    (
        re.compile(r"(?i)api[_ ]key|\b401\b|unauthori[sz]ed|authentication|credentials|token"),
        "it needs credentials, which the sandbox does not have",
    ),
    (
        re.compile(r"^(FileNotFoundError|IsADirectoryError|NotADirectoryError)\b|No such file"),
        "it needs a file that is not here",
    ),
    (
        re.compile(r"^(ModuleNotFoundError|ImportError)\b"),
        "it needs a module that is not installed here",
    ),
    (
        re.compile(
            r"^MemoryError\b|Cannot allocate memory|can't allocate memory|out of memory|"
            r"bad_alloc|DefaultCPUAllocator"
        ),
        "it needs more memory than allowed",
    ),
)
_FRAME = re.compile(r'^\s*File "(?P<file>[^"]+)", line (?P<line>\d+)', re.MULTILINE)


class _Failure(BaseModel):
    """Where a failed run's traceback points: the snippet's line, and what raised."""

    line: int | None = None
    part: str = "snippet"  # snippet | setup | after | unknown
    raised_in: str | None = Field(default=None, description="the library that raised, if not it")


def _failure(stderr: str, completion: Completion) -> _Failure:
    """Read the traceback: the innermost frame of the snippet (mapped to the snippet's line),
    and the file of the innermost frame (a library, or a kgqa part).

    >>> tb = 'File "snippet.py", line 2, in <module>\\n  File "/x/site-packages/peft/c.py", line 9'
    >>> _failure(tb, Completion(program=""))
    _Failure(line=2, part='snippet', raised_in='peft')
    """
    frames = [(m["file"], int(m["line"])) for m in _FRAME.finditer(stderr)]
    if not frames:
        return _Failure(part="unknown")
    mine = [line for file, line in frames if file == SNIPPET_FILE]
    last_file = frames[-1][0]
    part = "after" if last_file == AFTER_FILE else "snippet" if mine else "unknown"
    if mine and completion.snippet_line(mine[-1]) is None:
        part = "setup"
    raised_in = None
    if last_file not in (SNIPPET_FILE, AFTER_FILE):
        found = re.search(r"(?:site|dist)-packages/([A-Za-z0-9_]+)", last_file) or re.search(
            r"/lib/python3\.\d+/([A-Za-z0-9_]+)", last_file
        )
        raised_in = found.group(1) if found else Path(last_file).stem
    line = completion.snippet_line(mine[-1]) if mine else None
    return _Failure(line=line, part=part, raised_in=raised_in)


def _error_line(stderr: str, limit: int = 300) -> str:
    """The line that names the error: the first line after the traceback's last frame (an
    error's message may go on for lines), else the last line written.

    >>> _error_line('  File "s.py", line 1\\n    f()\\nRuntimeError: gone\\nuse g()\\n')
    'RuntimeError: gone'
    >>> _error_line("warning: x\\nfatal: bad option\\n")
    'fatal: bad option'
    """
    lines = stderr.rstrip().splitlines()
    frames = [i for i, line in enumerate(lines) if _FRAME.match(line)]
    if frames:
        after = [ln for ln in lines[frames[-1] + 1 :] if ln and not ln[0].isspace()]
        if after:
            return after[0][:limit]
    return (lines or [""])[-1][:limit]


def _no_evidence(error: str, completion: Completion, failure: _Failure | None = None) -> str | None:
    """Why a failed run says nothing against the snippet: it needs what is not here, a
    stand-in fixture (not the snippet's own object) or a substitution failed, or a library
    crashed; None when the failure is evidence.

    >>> _no_evidence("AssertionError: Torch not compiled with CUDA enabled", Completion(program=""))
    'it needs an accelerator'
    >>> _no_evidence("KeyError: 'missing'", Completion(program="")) is None
    True
    """
    if failure is not None and failure.part == "setup":
        return "a fixture kgqa added failed, not the snippet"
    gpu_here = accelerator_here()
    for pattern, need in _NEEDS:
        if pattern.search(error) and not (gpu_here and need == "it needs an accelerator"):
            return need
    stand_ins = [f for f in completion.fixtures if f.provides and f.name != "missing_import"]
    if stand_ins and not error.startswith("ImportError"):
        names = ", ".join(f"{n} ({f.name})" for f in stand_ins for n in f.provides)
        return f"the run used stand-ins for {names}"
    if completion.substitutions:
        return "the run replaced what needs a GPU (" + "; ".join(completion.substitutions[:2]) + ")"
    return None


def _run(
    completion: Completion, c: _Checker, limits: _Limits, lines: list[str], *, gpu: bool
) -> None:
    c.check.program = completion.program
    try:
        result = run_sandboxed(
            completion.body,
            after=completion.after,
            timeout_s=limits.timeout_s,
            memory_mb=limits.memory_mb,
            cpu_s=limits.cpu_s,
            import_cpu_s=IMPORT_CPU_S,
            nproc=256,
        )
    except SnippetError as exc:
        c.add("run", "skipped", f"sandbox unavailable: {exc}")
        return
    c.check.sandbox = result
    how = f"{result.summary()} in the sandbox ({', '.join(result.isolation)})"
    if gpu:
        how += " with this machine's GPU"
    if completion.fixtures:
        how += " with fixtures " + ", ".join(f.name for f in completion.fixtures)
    if not result.ok:
        c.add("run", *_unfinished(result, completion, how, lines, limits))
        return
    for line in result.stdout.splitlines():
        if line.startswith(CHECK_MARKER):
            verdict = json.loads(line[len(CHECK_MARKER) :])
            what = (
                f"{verdict['check']} output vs torch on {verdict['batches']} batch size(s): "
                f"max abs diff {verdict['max_abs_diff']:.2e}"
            )
            c.add("run", "ok" if verdict["ok"] else "failed", f"{how}; {what}")
            return
    if completion.checks:
        c.add("run", "failed", f"{how}; the check ({', '.join(completion.checks)}) did not report")
        return
    c.add("run", "ok", how)


_NO_EVIDENCE = "so this is no evidence against the snippet"


def _unfinished(
    result: SandboxResult, completion: Completion, how: str, lines: list[str], limits: _Limits
) -> tuple[Outcome, str]:
    """The run level of a run that did not end well: failed with the evidence, or skipped with
    why it says nothing against the code."""
    if result.killed_reason == "cpu limit":
        if result.cpu_s is not None and result.cpu_s > limits.cpu_s + IMPORT_CPU_S - 2:
            return "skipped", f"{how}: its imports took all the CPU they may use — {_NO_EVIDENCE}"
        return "failed", (
            f"{how}: it did not end within {limits.cpu_s} s of CPU for its own code: it runs "
            "without end (a loop that never stops?) or does far more work than a snippet should"
        )
    if result.timed_out:
        worked = (result.cpu_s or 0.0) + (result.runq_s or 0.0)
        if result.cpu_s is None or worked >= 0.5 * max(result.duration_s, 1e-3):
            return "skipped", (
                f"{how}: still working when the wall clock ran out (the machine is busy: "
                f"{result.runq_s or 0.0:.1f} s waiting for a CPU) — {_NO_EVIDENCE}"
            )
        return "failed", (
            f"{how}: it waited most of that time (sleeping, or for input, a lock or a server "
            "that never came) and did not end on its own"
        )
    if result.killed_reason == "output limit":
        return "skipped", f"{how}: it printed more than the sandbox keeps — {_NO_EVIDENCE}"
    tail = _error_line(result.stderr)
    if result.returncode == 0 and result.leftover_killed:
        return "failed", f"{how}: it left processes running after it ended"
    if result.returncode is not None and result.returncode < 0 and not tail:
        return "skipped", f"{how}: a crash in native code, not an error of Python — {_NO_EVIDENCE}"
    failure = _failure(result.stderr, completion)
    excuse = _no_evidence(tail, completion, failure)
    if excuse:
        said = f"{how}: {tail}" if tail else how
        return "skipped", f"{said} — {excuse}, {_NO_EVIDENCE}"
    if failure.part == "after":
        return "failed", f"{how}: {tail}: the snippet's result failed kgqa's check of it"
    where = _at(lines, failure.line)
    raised = (
        f"raised inside {failure.raised_in}, called from the snippet's line"
        if failure.raised_in and failure.line
        else "raised by the snippet's own code"
    )
    return "failed", (
        f"{where}{tail or 'no error message'} ({how}): {raised}, with nothing found that this "
        "machine lacks"
    )


def validate_snippet(snippet: Snippet, *, execute: bool = True) -> Snippet:
    """A copy of `snippet` with status, detail (one line per level), language and repaired code."""
    source = snippet.raw or snippet.code
    check = check_code(source, snippet.language, execute=execute)
    return snippet.model_copy(
        update={
            "status": check.status,
            "detail": check.detail,
            "language": check.language,
            "code": check.code,
            "repaired": check.repaired or snippet.repaired,
        }
    )


def validate_code(code: str, language: str | None = None, *, execute: bool = True) -> Snippet:
    """Validate code from a file or an LLM answer; returns a `Snippet` with `doc=None`."""
    snippet = Snippet(
        id="snippet:" + content_hash(code)[:16],
        doc=None,
        language=language or "python",
        raw=code,
        code=code,
    )
    if language is None:
        snippet = snippet.model_copy(update={"language": ""})
    return validate_snippet(snippet, execute=execute)


def to_report(snippet: Snippet) -> SnippetReport:
    """The Answer's view of a snippet (DESIGN.md `snippets`)."""
    return SnippetReport(
        language=snippet.language,
        code=snippet.code,
        status=snippet.status.value,
        detail=snippet.detail,
    )


def decisive_reason(detail: str) -> str:
    """The line of a validation detail that decided the status.

    The first failed level; else the level that passes a snippet (run, command, syntax); else
    the first skipped one.

    >>> decisive_reason("parse: ok — compiles\\napis: failed — x\\nrun: skipped — not run")
    'apis: failed — x'
    >>> decisive_reason("language: info — rust\\ncheck: skipped — not checked: rust is ...")
    'check: skipped — not checked: rust is ...'
    """
    lines = [ln for ln in detail.splitlines() if ln.strip()]
    for test in (
        lambda ln: ": failed" in ln,
        lambda ln: ln.startswith(tuple(f"{level}:" for level in DECISIVE_LEVELS)),
        lambda ln: ": skipped" in ln,
    ):
        hit = next((ln for ln in lines if test(ln)), None)
        if hit is not None:
            return hit
    return lines[-1] if lines else ""


def format_snippet_table(snippets: Iterable[Snippet]) -> str:
    """A plain-text table: id, where, language, status, first reason that decided it.

    >>> s = Snippet(id="snippet:ab", doc="a.txt", start=3, raw="x", code="x",
    ...             status=SnippetStatus.SKIPPED, detail="run: skipped — not run: needs network")
    >>> print(format_snippet_table([s]))
    id          where    lang    status   reason
    snippet:ab  a.txt@3  python  skipped  run: skipped — not run: needs network
    """
    rows = [("id", "where", "lang", "status", "reason")]
    for s in snippets:
        where = f"{s.doc}@{s.start}" if s.doc else "-"
        rows.append((s.id, where, s.language, s.status.value, decisive_reason(s.detail)))
    widths = [max(len(r[i]) for r in rows) for i in range(4)]
    return "\n".join(
        "  ".join(cell.ljust(widths[i]) for i, cell in enumerate(r[:4])) + "  " + r[4] for r in rows
    )
