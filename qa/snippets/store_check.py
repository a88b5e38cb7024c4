"""Snippet validation results cached in the store, file checks, and the check for LLM-written code.

Validating a snippet takes seconds (the sandbox imports torch, runs the export...), so results are
kept in the store's `snippet_results.json` (`Store.snippet_results` / `write_snippet_results`),
one entry per snippet id holding:

- the hash of the code it validated (a changed document gives a new hash);
- the environment it was validated in: the installed distribution and version of every top-level
  package the snippet, or the program the sandbox completed it into, imports (`torch` →
  `torch==2.13.0+cpu`); for shell commands, where each program lives and the version of the
  package that installs it; the Python version; and, for code that uses an accelerator, whether
  this machine has one (`machine:accelerator` → `none` | `nvidia`): the verdict was recorded
  with the machine, and another machine validates it again.

An entry is used only while the code hash and every one of those versions still match, so
upgrading torch re-validates exactly the snippets that import it. Checking freshness reads a few
package metadata files and never imports the packages.
"""

from __future__ import annotations

import ast
import functools
import importlib.metadata
import importlib.util
import platform
import shutil
import sys
import time
from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path

from pydantic import BaseModel, Field, ValidationError

from ingest.code_repair import transcript_input
from kg.documents import Snippet, SnippetStatus, content_hash
from kg.errors import SnippetError, StoreError
from kg.store import Store
from qa.schema import SnippetReport
from qa.snippets.requires import accelerator_here
from qa.snippets.shell import command_dependencies
from qa.snippets.static import imported_modules, undefined_names
from qa.snippets.validate import SnippetCheck, check_code, decisive_reason, to_report

__all__ = [
    "CACHE_FORMAT",
    "CachedResult",
    "FileCheck",
    "ListedSnippet",
    "StoreSnippets",
    "apply_cached_results",
    "check_file",
    "decisive_reason",
    "environment_changes",
    "language_for_path",
    "load_cache",
    "snippet_environment",
    "validate_answer_code",
    "validate_store_snippets",
]

CACHE_FORMAT = 3
"""Version of the `snippet_results.json` layout and of what a status means; another version is
ignored (re-validated). 2: failures need evidence; builtins, data files and transcripts known.
3: what the machine lacks (accelerator, downloads, models, credentials, services) and `...`
illustrations are skipped, a failure names its line; the CPU limit counts the code, not imports."""

_SUFFIX_LANGUAGE = {".py": "python", ".sh": "bash", ".bash": "bash", ".zsh": "bash"}
_ABSENT = "absent"


class CachedResult(BaseModel):
    """One snippet's validation result, with what it depended on."""

    id: str
    code_hash: str = Field(description="sha256 of the code as validated (the snippet's raw text)")
    env: dict[str, str] = Field(description="package/program/python → installed state")
    language: str
    code: str = Field(description="the code after repair")
    repaired: bool = False
    executed: bool = Field(default=True, description="validated with execution allowed")
    status: SnippetStatus
    detail: str
    validated_at: str
    seconds: float


class ListedSnippet(BaseModel):
    """A stored snippet with its (cached or new) validation result."""

    snippet: Snippet
    reason: str = Field(description="the line of the detail that decided the status")
    cached: bool = Field(description="the result came from snippet_results.json")
    stale: str = Field(default="", description="why a cached result no longer applied")
    validated_at: str | None = None
    seconds: float | None = Field(default=None, description="how long its validation took")


class StoreSnippets(BaseModel):
    """Every snippet of a store with its status; what this run validated and what it reused."""

    store: str
    rows: list[ListedSnippet] = Field(default_factory=list)
    validated: int = Field(default=0, description="snippets validated by this run")
    from_cache: int = 0
    seconds: float = Field(default=0.0, description="wall time of this run")

    def counts(self) -> dict[str, int]:
        """Snippets per status.

        >>> StoreSnippets(store="s").counts()
        {'passed': 0, 'failed': 0, 'skipped': 0, 'unchecked': 0}
        """
        out = {s.value: 0 for s in SnippetStatus}
        for row in self.rows:
            out[row.snippet.status.value] += 1
        return out


class FileCheck(BaseModel):
    """`kgqa snippets check FILE`: the file's validation, level by level."""

    file: str
    language: str
    status: SnippetStatus
    repaired: bool
    reason: str
    levels: list[dict[str, str]]
    code: str
    seconds: float


# -- environment ---------------------------------------------------------------------------------
@functools.lru_cache(maxsize=1)
def _module_distributions() -> dict[str, list[str]]:
    return dict(importlib.metadata.packages_distributions())


def _package_state(top: str) -> str:
    """`dist==version`, `unversioned` (importable, no distribution) or `absent`."""
    for dist in _module_distributions().get(top, []):
        try:
            return f"{dist}=={importlib.metadata.version(dist)}"
        except importlib.metadata.PackageNotFoundError:
            continue
    return "unversioned" if _importable(top) else _ABSENT


def _importable(top: str) -> bool:
    try:
        return importlib.util.find_spec(top) is not None
    except (ImportError, ValueError):
        return False


def _package_state_now(recorded: str, top: str) -> str:
    """The state of `top` now, read the cheap way from what was recorded (no package scan)."""
    dist, sep, _version = recorded.partition("==")
    if sep:
        try:
            return f"{dist}=={importlib.metadata.version(dist)}"
        except importlib.metadata.PackageNotFoundError:
            pass
    return "unversioned" if _importable(top) else _ABSENT


def _program_state(program: str) -> str:
    """Where a shell program lives and which package installs it (`path|dist==version`)."""
    path = shutil.which(program)
    if path is None:
        return _ABSENT
    for ep in importlib.metadata.entry_points(group="console_scripts", name=program):
        if ep.dist is not None:
            return f"{path}|{ep.dist.name}=={ep.dist.version}"
    return path


def _python_state() -> str:
    return f"{platform.python_implementation()} {platform.python_version()}"


def _tops(code: str | None) -> set[str]:
    if not code:
        return set()
    try:
        tree = ast.parse(code)
    except SyntaxError:
        return set()
    tops = {m.split(".")[0] for m in imported_modules(tree)}
    tops |= {n for n in undefined_names(tree) if _importable(n)}  # `torch.x` with no import
    return {t for t in tops if t not in sys.stdlib_module_names}


def snippet_environment(check: SnippetCheck) -> dict[str, str]:
    """What a validation result depends on besides the code: packages, programs, Python.

    >>> from qa.snippets.validate import LevelOutcome
    >>> env = snippet_environment(SnippetCheck(language="python", code="import json, pydantic"))
    >>> sorted(env), env["pkg:pydantic"].startswith("pydantic==")
    (['pkg:pydantic', 'python'], True)
    """
    env = {"python": _python_state()}
    code = check.code
    if check.language in ("console", "pycon"):
        code = transcript_input(code)[0]
    if check.language in ("bash", "console"):
        programs, modules = command_dependencies(code)
        for program in programs:
            env[f"cmd:{program}"] = _program_state(program)
        for top in sorted({m.split(".")[0] for m in modules} - sys.stdlib_module_names):
            env[f"pkg:{top}"] = _package_state(top)
        return env
    if check.language == "yaml":  # checked with PyYAML where it is installed
        env["pkg:yaml"] = _package_state("yaml")
    for what, state in check.machine.items():
        env[f"machine:{what}"] = state
    for top in sorted(_tops(code) | _tops(check.program)):
        env[f"pkg:{top}"] = _package_state(top)
    return env


def environment_changes(env: dict[str, str]) -> list[str]:
    """How the environment now differs from a recorded one, one line per change ([] if none).

    >>> environment_changes({"pkg:surely_not_installed_x": "surely_not_installed_x==1.0"})
    ['surely_not_installed_x: surely_not_installed_x==1.0 → absent']
    >>> environment_changes({"python": "CPython 0.1"})[0].startswith("python: CPython 0.1 → ")
    True
    """
    changes: list[str] = []
    for key, recorded in env.items():
        kind, _, name = key.partition(":")
        if kind == "python":
            now = _python_state()
        elif kind == "pkg":
            now = _package_state_now(recorded, name)
        elif kind == "cmd":
            now = _program_state(name)
        elif kind == "machine" and name == "accelerator":
            now = "nvidia" if accelerator_here() else "none"
        else:
            now = "?"
        if now != recorded:
            changes.append(f"{name or kind}: {recorded} → {now}")
    return changes


# -- the cache -----------------------------------------------------------------------------------
def load_cache(store: Store) -> dict[str, CachedResult]:
    """The cached results by snippet id ({} when none, or written by another cache format)."""
    raw = store.snippet_results()
    if raw.get("format") != CACHE_FORMAT:
        return {}
    out: dict[str, CachedResult] = {}
    for sid, entry in dict(raw.get("results", {})).items():
        try:
            out[sid] = CachedResult.model_validate(entry)
        except ValidationError:
            continue  # one bad entry costs one re-validation, not the cache
    return out


def _save(store: Store, new: dict[str, CachedResult]) -> None:
    """Merge `new` into what is on disk now (another process may have added entries)."""
    try:
        current = load_cache(store)
    except StoreError:
        current = {}
    current.update(new)
    store.write_snippet_results(
        {
            "format": CACHE_FORMAT,
            "results": {k: v.model_dump(mode="json") for k, v in sorted(current.items())},
        }
    )


def _fresh(snippet: Snippet, entry: CachedResult | None, execute: bool) -> tuple[bool, str]:
    """(usable, why not) for a cached entry."""
    if entry is None:
        return False, ""
    if execute and not entry.executed:
        return False, "it was validated without execution"
    if entry.code_hash != content_hash(_source(snippet)):
        return False, "the code changed since it was validated"
    changes = environment_changes(entry.env)
    if changes:
        return False, "the environment changed since it was validated: " + "; ".join(changes)
    return True, ""


def _source(snippet: Snippet) -> str:
    return snippet.raw or snippet.code


def _apply(snippet: Snippet, entry: CachedResult) -> Snippet:
    return snippet.model_copy(
        update={
            "status": entry.status,
            "detail": entry.detail,
            "language": entry.language,
            "code": entry.code,
            "repaired": entry.repaired or snippet.repaired,
        }
    )


def _validate(snippet: Snippet, execute: bool) -> tuple[Snippet, CachedResult]:
    started = time.perf_counter()
    check = check_code(_source(snippet), snippet.language, execute=execute)
    seconds = round(time.perf_counter() - started, 2)
    entry = CachedResult(
        id=snippet.id,
        code_hash=content_hash(_source(snippet)),
        env=snippet_environment(check),
        language=check.language,
        code=check.code,
        repaired=check.repaired,
        executed=execute,
        status=check.status,
        detail=check.detail,
        validated_at=datetime.now(UTC).isoformat(timespec="seconds"),
        seconds=seconds,
    )
    return _apply(snippet, entry), entry


def validate_store_snippets(
    store: Store,
    *,
    validate: bool = True,
    refresh: bool = False,
    execute: bool = True,
    log: Callable[[str], None] | None = None,
) -> StoreSnippets:
    """Every snippet of the store with its status: from the cache where fresh, else validated now
    (and cached) — unless `validate` is False, in which case it stays `unchecked` with the reason.

    `refresh` ignores the cache. Each new result is saved as soon as it is known, so an
    interrupted run keeps what it did.
    """
    started = time.perf_counter()
    try:
        cache = {} if refresh else load_cache(store)
    except StoreError as err:
        if log:
            log(f"ignoring the snippet cache: {err}")
        cache = {}
    out = StoreSnippets(store=str(store.root))
    for record in store.records():
        for snippet in record.snippets:
            entry = cache.get(snippet.id)
            fresh, stale = _fresh(snippet, entry, execute)
            if fresh and entry is not None:
                shown = _apply(snippet, entry)
                out.rows.append(_row(shown, entry, cached=True))
                out.from_cache += 1
                continue
            if not validate:
                why = stale or "not validated yet: run `kgqa snippets check --store DIR`"
                shown = snippet.model_copy(
                    update={
                        "status": SnippetStatus.UNCHECKED,
                        "detail": f"cache: unchecked — {why}",
                    }
                )
                out.rows.append(ListedSnippet(snippet=shown, reason=why, cached=False, stale=stale))
                continue
            if log:
                why = f" — {stale}" if stale else ""
                where = f"{snippet.doc}@{snippet.start}"
                log(f"validating {snippet.id} ({where}, {snippet.language}){why}")
            shown, entry = _validate(snippet, execute)
            _save(store, {snippet.id: entry})
            out.rows.append(_row(shown, entry, cached=False, stale=stale))
            out.validated += 1
            if log:
                reason = decisive_reason(shown.detail)
                log(f"  {shown.status.value} in {entry.seconds:.1f} s: {reason}")
    out.seconds = round(time.perf_counter() - started, 3)
    return out


def _row(shown: Snippet, entry: CachedResult, *, cached: bool, stale: str = "") -> ListedSnippet:
    return ListedSnippet(
        snippet=shown,
        reason=decisive_reason(shown.detail),
        cached=cached,
        stale=stale,
        validated_at=entry.validated_at,
        seconds=entry.seconds,
    )


def apply_cached_results(store: Store, snippets: Iterable[Snippet]) -> list[Snippet]:
    """The snippets with their cached validation status where it is still fresh (no validation
    is run). A stale or missing result leaves the snippet `unchecked` with a detail saying why."""
    snippets = list(snippets)
    try:
        cache = load_cache(store)
    except StoreError:
        return snippets
    out: list[Snippet] = []
    for snippet in snippets:
        entry = cache.get(snippet.id)
        fresh, stale = _fresh(snippet, entry, True)
        if fresh and entry is not None:
            out.append(_apply(snippet, entry))
        elif stale:
            detail = f"cache: unchecked — {stale}: run `kgqa snippets check --store DIR`"
            out.append(snippet.model_copy(update={"detail": detail}))
        else:
            out.append(snippet)
    return out


# -- files and LLM code --------------------------------------------------------------------------
def language_for_path(path: Path) -> str | None:
    """The language a file's suffix says; None lets the validator detect it.

    >>> [language_for_path(Path(p)) for p in ("a.py", "run.sh", "notes")]
    ['python', 'bash', None]
    """
    return _SUFFIX_LANGUAGE.get(path.suffix.lower())


def check_file(path: Path, *, language: str | None = None, execute: bool = True) -> FileCheck:
    """Validate one file (language from `language`, else its suffix, else detected)."""
    try:
        code = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as err:
        raise SnippetError(f"cannot read {path}: {err}") from err
    started = time.perf_counter()
    check = check_code(code, language or language_for_path(path), execute=execute)
    return FileCheck(
        file=str(path),
        language=check.language,
        status=check.status,
        repaired=check.repaired,
        reason=decisive_reason(check.detail),
        levels=[lv.model_dump() for lv in check.levels],
        code=check.code,
        seconds=round(time.perf_counter() - started, 2),
    )


@functools.lru_cache(maxsize=128)
def _answer_report(code: str, language: str | None, timeout_s: float) -> SnippetReport:
    check = check_code(code, language, timeout_s=timeout_s, memory_mb=4096)
    snippet = Snippet(
        id="snippet:" + content_hash(code)[:16],
        doc=None,
        language=check.language,
        raw=code,
        code=check.code,
        repaired=check.repaired,
        status=check.status,
        detail=check.detail,
    )
    return to_report(snippet)


def validate_answer_code(
    code: str, language: str | None = None, *, timeout_s: float = 15.0
) -> SnippetReport:
    """Check code an LLM wrote before it is shown: every static level, then (where it can run)
    the sandbox with a short wall-clock timeout. Results are memoised per code in this process.

    Never raises for bad code: the report says `failed` / `skipped` with the reason.
    """
    return _answer_report(code, language, timeout_s).model_copy()
