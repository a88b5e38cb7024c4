"""Validate a snippet level by level, and run it in the sandbox where that is safe and possible.

Levels, each with an outcome and a reason:

- Python: language, repair, parse, imports, names, apis, network, run;
- a `>>>` session: transcript (the output lines are left out), then the Python levels;
- shell: command; a `$ ` console transcript: transcript, then command on what was typed;
- JSON, YAML, TOML, Dockerfile: syntax (parsed, never run);
- output, plain text and other languages: check, always skipped with the reason.

Status: `failed` only on evidence: a parse error, an API that does not exist or does not take
an argument, a program that rejects an option, a run that does not finish in time, or a non-zero
exit in the sandbox that neither what the sandbox lacks (a GPU, a file, the network, a module)
nor a stand-in fixture explains. `passed` if the snippet ran, every command checked out, or the
file parsed; `skipped` otherwise, with the reason (needs network, needs context, placeholders to
fill in, serves until stopped, not installed here, not checked and why).
"""

from __future__ import annotations

import ast
import json
import os
import re
import time
from collections.abc import Iterable
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
from qa.snippets.sandbox import SandboxResult, run_sandboxed
from qa.snippets.shell import check_command_line, split_commands
from qa.snippets.static import (
    ImportCheck,
    api_calls,
    check_data,
    check_imports,
    implicit_imports,
    import_bindings,
    module_found,
    network_needs,
    serving_calls,
    undefined_names,
)

__all__ = [
    "DECISIVE_LEVELS",
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
    timeout_s: float = 120.0,
    memory_mb: int = 6144,
) -> SnippetCheck:
    """Validate `code` (labelled `language`, which may be wrong or None) at every level."""
    lang = detect_language(code, language)
    check = SnippetCheck(language=lang, code=code)
    c = _Checker(check)
    said = f" (labelled {language!r})" if language and language != lang else ""
    c.add("language", "info", f"{lang}{said}")
    if lang in ("bash", "console"):
        _check_shell(code, c, transcript=lang == "console")
    elif lang in ("python", "pycon"):
        python = _typed(code, c, "a Python session", ">>> / ...") if lang == "pycon" else code
        _check_python(python, c, execute, probe or shared_probe(), timeout_s, memory_mb)
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
    code: str, c: _Checker, execute: bool, probe: SignatureProbe, timeout_s: float, memory_mb: int
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
    bindings = import_bindings(tree)
    imports = check_imports(tree)
    missing_mods = [i.module for i in imports if not i.found]
    c.add("imports", "skipped" if missing_mods else "ok", _imports_reason(imports))
    undefined = undefined_names(tree)
    implicit = implicit_imports(tree, undefined)
    bindings.update(implicit)
    has_ort = any(i.module == "onnxruntime" for i in imports) or module_found("onnxruntime")
    completion = complete_snippet(tree, bindings, undefined, has_onnxruntime=has_ort)
    c.check.fixtures, c.check.substitutions = completion.fixtures, completion.substitutions
    c.add("names", "info", _names_reason(undefined, completion))
    _check_apis(tree, bindings, missing_mods, probe, c)
    needs = network_needs(tree, bindings)
    c.add(
        "network",
        "skipped" if needs else "ok",
        ("needs network: " + "; ".join(needs) + " — not run") if needs else "none needed",
    )
    blockers = _run_blockers(c.check.levels, missing_mods, completion, needs, execute)
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
    _run(completion, c, timeout_s, memory_mb)


def _parses(code: str) -> bool:
    return compiles(code) or repair_indentation(code).repaired


def _unparsed(code: str, error: SyntaxError) -> tuple[str, Outcome, str]:
    """The parse level of code that does not compile: failed with the SyntaxError, unless it is
    documentation that only looks like code (placeholders to fill in, a signature listing).

    >>> _unparsed("f(<your-key>)", SyntaxError("invalid syntax"))[1:]
    ('skipped', 'placeholders to fill in (<your-key>); it parses once they are')
    >>> _unparsed('attend(q, k, causal=False):\\n"Attention."', SyntaxError("x"))[1]
    'skipped'
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
    return "parse", "failed", f"SyntaxError: {error.msg} (line {error.lineno})"


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
) -> None:
    missing_tops = {m.split(".")[0] for m in missing_mods}
    calls = [k for k in api_calls(tree, bindings) if k.target.split(".")[0] not in missing_tops]
    if not calls:
        c.add("apis", "info", "no calls to imported APIs")
        return
    bad: list[str] = []
    good: list[str] = []
    try:
        for call in calls:
            sc = probe.check(call)
            if not sc.binds:
                bad.append(f"line {call.line}: {sc.reason}")
            else:
                kws = f" with {', '.join(call.keywords)}" if call.keywords else ""
                good.append(f"{call.target}{kws}")
    except SnippetError as exc:
        c.add("apis", "skipped", f"signature check unavailable: {exc}")
        return
    if bad:
        c.add("apis", "failed", "; ".join(bad))
    else:
        c.add(
            "apis",
            "ok",
            f"{len(good)} call(s) bind to installed signatures: " + ", ".join(dict.fromkeys(good)),
        )


def _names_reason(undefined: list[str], completion: Completion) -> str:
    if not undefined:
        return "self-contained"
    parts = [f"uses undefined {', '.join(undefined)}"]
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
        out.append("needs network")
    if completion.missing:
        out.append("needs context: " + ", ".join(completion.missing))
    return out


_PLACEHOLDER = re.compile(r"<[A-Za-z_][^<>\n]{0,60}>")
# what a run needs that the sandbox does not give, by the last line of its error
_NEEDS = (
    (re.compile(r"CUDA|cuda|NVIDIA|NCCL|cudnn|cuDNN|no GPU|GPU"), "it needs a GPU"),
    (re.compile(r"^(FileNotFoundError|IsADirectoryError)\b"), "it needs a file that is not here"),
    (
        re.compile(
            r"^(\w+\.)*(ConnectionError|ConnectionRefusedError|ConnectionResetError|URLError|"
            r"ConnectError|gaierror|MaxRetryError|LocalEntryNotFoundError|OfflineModeIsEnabled)\b|"
            r"Name or service not known|Temporary failure in name resolution|Network is unreachable"
        ),
        "it needs the network, which the sandbox does not have",
    ),
    (re.compile(r"^ModuleNotFoundError\b"), "it needs a module that is not installed here"),
    (re.compile(r"^MemoryError\b|Cannot allocate memory"), "it needs more memory than allowed"),
)


def _no_evidence(error: str, completion: Completion) -> str | None:
    """Why a failed run says nothing against the snippet: it needs what is not here, or a
    stand-in fixture (not the snippet's own object) failed; None when the failure is evidence.

    >>> _no_evidence("AssertionError: Torch not compiled with CUDA enabled", Completion(program=""))
    'it needs a GPU'
    >>> _no_evidence("KeyError: 'missing'", Completion(program="")) is None
    True
    """
    gpu_here = os.path.exists("/dev/nvidia0")
    for pattern, need in _NEEDS:
        if pattern.search(error) and not (gpu_here and need == "it needs a GPU"):
            return need
    stand_ins = [f for f in completion.fixtures if f.provides and f.name != "missing_import"]
    if stand_ins and not error.startswith("ImportError"):
        names = ", ".join(f"{n} ({f.name})" for f in stand_ins for n in f.provides)
        return f"the run used stand-ins for {names}"
    return None


def _run(completion: Completion, c: _Checker, timeout_s: float, memory_mb: int) -> None:
    c.check.program = completion.program
    try:
        result = run_sandboxed(
            completion.program,
            timeout_s=timeout_s,
            memory_mb=memory_mb,
            cpu_s=int(timeout_s) * 4,
            nproc=256,
        )
    except SnippetError as exc:
        c.add("run", "skipped", f"sandbox unavailable: {exc}")
        return
    c.check.sandbox = result
    how = f"{result.summary()} in the sandbox ({', '.join(result.isolation)})"
    if completion.fixtures:
        how += " with fixtures " + ", ".join(f.name for f in completion.fixtures)
    if not result.ok:
        tail = (result.stderr.strip().splitlines() or [""])[-1][:300]
        said = f"{how}: {tail}" if tail else how
        ended = not result.timed_out and result.killed_reason is None  # on its own
        excuse = _no_evidence(tail, completion) if ended else None
        if excuse:
            c.add(
                "run", "skipped", f"{said} — {excuse}, so this is no evidence against the snippet"
            )
            return
        c.add("run", "failed", said)
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
