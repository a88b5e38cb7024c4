"""Check that called APIs exist and that their arguments bind to the installed signatures.

Importing torch or transformers takes seconds, so the checks run in one sandboxed worker process
that stays up and answers many requests (`SignatureProbe`); answers are cached by call shape. The
host process never imports the libraries a snippet names.
"""

from __future__ import annotations

import atexit
import json
import threading

from pydantic import BaseModel

from kg.errors import SnippetError
from qa.snippets.sandbox import SandboxedWorker
from qa.snippets.static import ApiCall

__all__ = ["SignatureCheck", "SignatureProbe", "shared_probe"]

_WORKER = r"""
import difflib, importlib, inspect, json, sys

def resolve(target):
    parts = target.split(".")
    try:
        obj = importlib.import_module(parts[0])
    except ImportError:
        return None, f"no module named {parts[0]!r}"
    where = parts[0]
    for name in parts[1:]:
        if hasattr(obj, name):
            obj = getattr(obj, name)
        else:
            try:
                obj = importlib.import_module(f"{where}.{name}")
            except ImportError:
                return None, f"{where} has no attribute {name!r}"
        where = f"{where}.{name}"
    return obj, None

def check(req):
    obj, err = resolve(req["target"])
    if err:
        return {"exists": False, "error": err}
    if req.get("attribute"):
        return {"exists": True, "error": None}
    if not callable(obj):
        return {"exists": True, "error": f"{req['target']} is not callable"}
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return {"exists": True, "signature": None, "error": None}
    params = sig.parameters
    var_kw = any(p.kind is p.VAR_KEYWORD for p in params.values())
    named = [n for n, p in params.items() if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY)]
    unknown = [] if var_kw else [k for k in req["keywords"] if k not in named]
    out = {"exists": True, "signature": str(sig)[:400], "error": None, "unknown": unknown,
           "suggest": {k: difflib.get_close_matches(k, named, 1) for k in unknown}}
    if req["has_star"]:
        return out
    try:
        sig.bind_partial(*[None] * req["n_positional"], **{k: None for k in req["keywords"]})
    except TypeError as exc:
        out["error"] = str(exc)
    return out

for line in sys.stdin:
    try:
        reply = check(json.loads(line))
    except BaseException as exc:  # the worker must answer every request
        reply = {"exists": False, "error": f"{type(exc).__name__}: {exc}"}
    sys.stdout.write(json.dumps(reply) + "\n")
    sys.stdout.flush()
"""


class SignatureCheck(BaseModel):
    """The answer for one call: does the API exist, do the arguments bind, and if not, why."""

    target: str
    line: int
    exists: bool
    binds: bool
    signature: str | None = None
    reason: str = ""


class SignatureProbe:
    """A cached, sandboxed worker that checks `ApiCall`s against the installed libraries."""

    def __init__(self, *, timeout_s: float = 120.0) -> None:
        self._timeout_s = timeout_s
        self._worker: SandboxedWorker | None = None
        self._cache: dict[str, dict[str, object]] = {}
        self._lock = threading.Lock()

    def _ask(self, call: ApiCall) -> dict[str, object]:
        key = call.key()
        with self._lock:
            if key in self._cache:
                return self._cache[key]
            if self._worker is None or not self._worker.alive:
                self._worker = SandboxedWorker(_WORKER)
            req = call.model_dump(
                include={"target", "n_positional", "keywords", "has_star", "attribute"}
            )
            reply = json.loads(self._worker.request(json.dumps(req), timeout_s=self._timeout_s))
            if not isinstance(reply, dict):
                raise SnippetError(f"signature worker answered {reply!r}")
            self._cache[key] = reply
            return reply

    def check(self, call: ApiCall) -> SignatureCheck:
        """Check one call. Raises `SnippetError` only when the worker itself fails."""
        r = self._ask(call)
        exists = bool(r.get("exists"))
        error = str(r.get("error") or "")
        unknown = r.get("unknown") or []
        suggest = r.get("suggest") or {}
        assert isinstance(unknown, list) and isinstance(suggest, dict)
        if unknown:
            named = []
            for k in unknown:
                hint = suggest.get(k) or []
                named.append(f"{k!r}" + (f" (did you mean {hint[0]!r}?)" if hint else ""))
            error = f"{call.target}() has no keyword argument " + ", ".join(named)
        sig = r.get("signature")
        return SignatureCheck(
            target=call.target,
            line=call.line,
            exists=exists,
            binds=exists and not error,
            signature=str(sig) if sig else None,
            reason=error,
        )

    def clear_cache(self) -> None:
        """Forget cached answers (the worker stays up)."""
        with self._lock:
            self._cache.clear()

    def close(self) -> None:
        """Stop the worker (it restarts on the next check)."""
        with self._lock:
            if self._worker is not None:
                self._worker.close()
                self._worker = None


_shared: SignatureProbe | None = None
_shared_lock = threading.Lock()


def shared_probe() -> SignatureProbe:
    """The process-wide probe, started lazily and stopped at exit."""
    global _shared
    with _shared_lock:
        if _shared is None:
            _shared = SignatureProbe()
            atexit.register(_shared.close)
        return _shared
