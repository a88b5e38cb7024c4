"""`kgqa snippets list|check`: every stored snippet with its validation status; check a file.

    kgqa snippets list  [--store DIR] [--json] [--cached] [--refresh]
    kgqa snippets check FILE [--language L] [--json] [--no-run]
    kgqa snippets check [--store DIR] [--json] [--refresh] [--no-run]

`list` validates what the cache does not hold (or holds for another code or environment) and
caches it in the store; `--cached` shows only cached results and runs nothing. `check FILE`
validates a file (language from its suffix); `check` without a file validates the whole store.
`check` exits 1 when a snippet fails.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from qa.config import Settings

__all__ = ["cmd_snippets", "format_listing", "register"]


def _log(line: str) -> None:
    print(f"kgqa: {line}", file=sys.stderr, flush=True)


def format_listing(rows: list[tuple[str, str, str, str, str, str]]) -> str:
    """Rows (id, where, lang, status, source, reason) as an aligned table with a header.

    >>> print(format_listing([("snippet:ab", "a.txt@3-9", "bash", "passed", "cache", "ok")]))
    id          where      lang  status  from   reason
    snippet:ab  a.txt@3-9  bash  passed  cache  ok
    """
    table = [("id", "where", "lang", "status", "from", "reason"), *rows]
    widths = [max(len(r[i]) for r in table) for i in range(5)]
    return "\n".join(
        "  ".join(c.ljust(widths[i]) for i, c in enumerate(r[:5])) + "  " + r[5] for r in table
    )


def _cmd_list_or_store_check(args: argparse.Namespace, settings: Settings, check: bool) -> int:
    from kg.store import Store
    from qa.snippets.store_check import validate_store_snippets

    store = Store.open(settings.store)
    listing = validate_store_snippets(
        store,
        validate=not getattr(args, "cached", False),
        refresh=args.refresh,
        execute=not args.no_run,
        log=None if args.json else _log,
    )
    counts = listing.counts()
    if args.json:
        print(listing.model_dump_json(indent=1))
    else:
        rows = [
            (
                r.snippet.id,
                f"{r.snippet.doc}@{r.snippet.start}-{r.snippet.end}",
                r.snippet.language,
                r.snippet.status.value,
                "cache" if r.cached else ("-" if r.validated_at is None else "now"),
                r.reason,
            )
            for r in listing.rows
        ]
        print(format_listing(rows))
        shown = ", ".join(f"{n} {k}" for k, n in counts.items() if n)
        print(
            f"{len(listing.rows)} snippet(s): {shown or 'none'} — {listing.validated} validated "
            f"now, {listing.from_cache} from the cache, in {listing.seconds:.2f} s"
        )
    return 1 if check and counts["failed"] else 0


def _cmd_check_file(args: argparse.Namespace) -> int:
    from qa.snippets.store_check import check_file

    result = check_file(args.file, language=args.language, execute=not args.no_run)
    if args.json:
        print(result.model_dump_json(indent=1))
    else:
        print(f"{result.file}: {result.status.value} ({result.language}) — {result.reason}")
        for level in result.levels:
            print(f"  {level['level']}: {level['outcome']} — {level['reason']}")
        if result.repaired:
            print("repaired code:\n" + result.code)
    return 1 if result.status.value == "failed" else 0


def cmd_snippets(args: argparse.Namespace, settings: Settings) -> int:
    """Run `kgqa snippets list|check`."""
    if args.snippets_command == "list":
        return _cmd_list_or_store_check(args, settings, check=False)
    if args.file is not None:
        return _cmd_check_file(args)
    return _cmd_list_or_store_check(args, settings, check=True)


def register(
    sub: argparse._SubParsersAction[argparse.ArgumentParser], with_store: Callable[..., None]
) -> None:
    """Add the `snippets` verb."""
    p = sub.add_parser("snippets", help="list stored code snippets with their status; check code")
    verbs = p.add_subparsers(dest="snippets_command", required=True)
    ls = verbs.add_parser("list", help="every snippet in the store with its validation status")
    with_store(ls)
    ls.add_argument("--json", action="store_true", help="print the listing as JSON")
    ls.add_argument(
        "--cached", action="store_true", help="only show cached results, validate nothing"
    )
    ls.add_argument("--refresh", action="store_true", help="ignore the cache, validate all")
    ls.add_argument("--no-run", action="store_true", help="static levels only, no execution")
    ck = verbs.add_parser(
        "check", help="validate FILE, or (no FILE) every snippet of the store; exit 1 on failure"
    )
    with_store(ck)
    ck.add_argument("file", type=Path, nargs="?", default=None, help="code file (.py, .sh, ...)")
    ck.add_argument("--language", default=None, help="python | bash (default: from the suffix)")
    ck.add_argument("--json", action="store_true", help="print the result as JSON")
    ck.add_argument("--refresh", action="store_true", help="store: ignore the cache")
    ck.add_argument("--no-run", action="store_true", help="static levels only, no execution")
    p.set_defaults(func=cmd_snippets)
