"""What a snippet needs that the sandbox cannot give, read from its syntax tree: an accelerator, a
model file of the user's, credentials, a running service; and `...` left where code was cut out.

A snippet that needs one of them is right or wrong for the machine it was written for, not for
this one: running it here says nothing against the code, so it is skipped with the need as the
reason (`machine_needs`). The same goes for an illustration, code with `...` where arguments or a
body were left out (`placeholders`). Downloads (hub models, datasets, URLs) are
`qa.snippets.static.network_needs`.

Everything is decided from the tree (calls, their resolved targets, constants and where they
sit), never from the text:

- accelerator: `torch.cuda` calls that need a device (not `is_available`, `device_count`,
  seeding...), `torch.accelerator.current_accelerator().type` and other attributes of it,
  `.cuda()`, device strings ("cuda", "cuda:0", "mps", "xpu"...) passed to calls or assigned,
  `accelerator="gpu"` (Lightning), `assert torch.cuda.is_available()`; a use guarded by an
  availability test (`"cuda" if torch.cuda.is_available() else "cpu"`, `if use_gpu:`) is not a
  need, the code runs on a CPU too;
- model: a weights file (`.gguf`, `.safetensors`, `.pt`, `.onnx`...) or a local model directory
  passed to a loader, that the snippet does not write first and that is not here;
- credentials: reading `*_KEY`, `*_TOKEN`, `*_SECRET`, `*PASSWORD` from the environment, setting
  one to a literal, `login()`, `api_key=`/`token=` arguments;
- service: clients of servers (OpenAI-compatible APIs, Ollama, Triton, Redis, databases, cloud
  SDKs) and URLs of localhost.
"""

from __future__ import annotations

import ast
import os
import re
from collections.abc import Iterator
from typing import Literal

from pydantic import BaseModel

from qa.snippets.static import installed_version, local_path, resolve_call, string_constants

__all__ = [
    "Need",
    "accelerator_here",
    "describe_needs",
    "machine_needs",
    "mentions_accelerator",
    "placeholders",
]

NeedKind = Literal["accelerator", "model", "credentials", "service"]
_KIND_WORDS: dict[str, str] = {
    "accelerator": "needs an accelerator",
    "model": "needs a model that is not here",
    "credentials": "needs credentials",
    "service": "needs a running service",
}


class Need(BaseModel):
    """One thing the snippet needs, where it shows."""

    kind: NeedKind
    line: int
    what: str

    def text(self) -> str:
        """`what (line N)`.

        >>> Need(kind="accelerator", line=3, what="device 'cuda'").text()
        "device 'cuda' (line 3)"
        """
        return f"{self.what} (line {self.line})"


def accelerator_here() -> bool:
    """Can a snippet use an accelerator here: an NVIDIA GPU device (the sandbox sees /dev), and
    no CPU-only build of torch (whose version ends in `+cpu`) between it and the code?"""
    if not os.path.exists("/dev/nvidia0"):
        return False
    return not (installed_version("torch") or "").endswith("+cpu")


# -- the tree, with parents ----------------------------------------------------------------------
def _parents(tree: ast.AST) -> dict[ast.AST, ast.AST]:
    return {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def _target(func: ast.expr, bindings: dict[str, str]) -> str:
    """The resolved path of a call target, else its dotted text, else ''."""
    return resolve_call(func, bindings) or _dotted(func) or ""


def _shown(node: ast.AST, limit: int = 60) -> str:
    """Source-like text of a node, cut to `limit` characters.

    >>> _shown(ast.parse("torch.cuda.synchronize()", mode="eval").body)
    'torch.cuda.synchronize()'
    """
    text = ast.unparse(node)
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- accelerator ---------------------------------------------------------------------------------
_DEVICE_RE = re.compile(r"^(cuda|mps|xpu|npu|hpu|mlu|musa)(:\d+)?$")
_ACCELERATOR_KWARG_VALUES = {"gpu", "cuda", "tpu", "mps", "hpu", "ipu", "xpu", "npu"}
# torch.cuda calls that work without a device (they answer "none", or do nothing)
_CUDA_SAFE = {
    "is_available",
    "device_count",
    "manual_seed",
    "manual_seed_all",
    "seed",
    "seed_all",
    "empty_cache",
    "is_initialized",
    "is_bf16_supported",
    "memory_allocated",
    "max_memory_allocated",
    "memory_reserved",
    "max_memory_reserved",
}
_ACCEL_SAFE = {"is_available", "device_count"}
_QUERY_CALLS = {
    "torch.cuda.is_available",
    "torch.cuda.device_count",
    "torch.backends.mps.is_available",
    "torch.mps.is_available",
    "torch.xpu.is_available",
    "torch.accelerator.is_available",
    "torch.accelerator.device_count",
    "tensorflow.test.is_gpu_available",
    "tensorflow.config.list_physical_devices",
    "jax.devices",
}
_SWITCH_NAME = re.compile(r"(?i)cuda|gpu|device|accelerat")


def _is_query(test: ast.expr, bindings: dict[str, str]) -> bool:
    """Does a condition ask whether an accelerator is there (or read a switch for one)?

    >>> _is_query(ast.parse("torch.cuda.is_available()", mode="eval").body, {"torch": "torch"})
    True
    >>> _is_query(ast.parse("hasattr(torch, 'accelerator')", mode="eval").body, {"torch": "torch"})
    False
    """
    for node in ast.walk(test):
        if isinstance(node, ast.Call) and _target(node.func, bindings) in _QUERY_CALLS:
            return True
        if isinstance(node, ast.Name | ast.Attribute) and not isinstance(
            getattr(node, "ctx", None), ast.Store
        ):
            name = node.id if isinstance(node, ast.Name) else node.attr
            if _SWITCH_NAME.search(name) and not _is_call_func(node, test):
                return True
        if isinstance(node, ast.Compare) and any(
            isinstance(c, ast.Constant) and isinstance(c.value, str) and _DEVICE_RE.match(c.value)
            for c in [node.left, *node.comparators]
        ):
            return True  # `if device == "cuda":`
    return False


def _is_call_func(node: ast.AST, root: ast.AST) -> bool:
    """Is `node` the function part of a call inside `root` (`hasattr` is no switch)?"""
    return any(isinstance(n, ast.Call) and n.func is node for n in ast.walk(root))


def _negated(test: ast.expr) -> bool:
    return isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not)


def _guarded(node: ast.AST, parents: dict[ast.AST, ast.AST], bindings: dict[str, str]) -> bool:
    """Is `node` only reached when an accelerator test said yes (or inside a try)?"""
    child, parent = node, parents.get(node)
    while parent is not None:
        if isinstance(parent, ast.IfExp | ast.If | ast.While):
            in_body = (
                child in parent.body if isinstance(parent.body, list) else child is parent.body
            )
            orelse = parent.orelse
            in_else = child in orelse if isinstance(orelse, list) else child is orelse
            if (in_body or in_else) and _is_query(parent.test, bindings):
                return True  # a branch of a switch on the accelerator: the code handles both
        if isinstance(parent, ast.Try) and child in parent.body and parent.handlers:
            return True
        if isinstance(parent, ast.BoolOp) and isinstance(child, ast.expr):
            before = parent.values[: parent.values.index(child)] if child in parent.values else []
            if any(_is_query(v, bindings) for v in before):
                return True  # `torch.cuda.is_available() and x.cuda()`
        child, parent = parent, parents.get(parent)
    return False


def _asks_availability(test: ast.expr, bindings: dict[str, str]) -> bool:
    """Does a condition call an availability query (`torch.cuda.is_available()`...)?"""
    return any(
        isinstance(node, ast.Call) and _target(node.func, bindings) in _QUERY_CALLS
        for node in ast.walk(test)
    )


def _requires_accelerator(stmt: ast.stmt, bindings: dict[str, str]) -> bool:
    """`assert torch.cuda.is_available()`, or `if not torch.cuda.is_available(): raise/exit`.

    >>> code = "assert torch.cuda.is_available()\\nassert t.device == torch.device('meta')"
    >>> [_requires_accelerator(s, {"torch": "torch"}) for s in ast.parse(code).body]
    [True, False]
    """
    if isinstance(stmt, ast.Assert):
        return _asks_availability(stmt.test, bindings) and not _negated(stmt.test)
    if isinstance(stmt, ast.If) and _negated(stmt.test) and _asks_availability(stmt.test, bindings):
        for inner in stmt.body:
            if isinstance(inner, ast.Raise):
                return True
            if (
                isinstance(inner, ast.Expr)
                and isinstance(inner.value, ast.Call)
                and _target(inner.value.func, bindings).split(".")[-1] in {"exit", "_exit"}
            ):
                return True
    return False


def _accelerator_sites(
    tree: ast.AST, bindings: dict[str, str], parents: dict[ast.AST, ast.AST]
) -> Iterator[tuple[ast.AST, str]]:
    for node in ast.walk(tree):
        if isinstance(node, ast.stmt) and _requires_accelerator(node, bindings):
            yield node, f"`{_shown(node)}`"
        if isinstance(node, ast.Call):
            target = _target(node.func, bindings)
            head, _, last = target.rpartition(".")
            if head == "torch.cuda" and last not in _CUDA_SAFE:
                yield node, f"{target}()"
            elif (
                head == "torch.accelerator"
                and last not in _ACCEL_SAFE
                and (last != "current_accelerator" or isinstance(parents.get(node), ast.Attribute))
            ):
                yield node, f"`{_shown(parents.get(node, node))}`"
            if (
                isinstance(node.func, ast.Attribute)
                and node.func.attr == "cuda"
                and head != "torch"
            ):
                yield node, f"`.cuda()` on {_shown(node.func.value, 30)}"
            for kw in node.keywords:
                value = kw.value
                if (
                    kw.arg == "accelerator"
                    and isinstance(value, ast.Constant)
                    and str(value.value).lower() in _ACCELERATOR_KWARG_VALUES
                ):
                    yield value, f"accelerator={value.value!r}"
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and _DEVICE_RE.match(node.value)
            and _used_as_device(node, parents)
        ):
            yield node, f"device {node.value!r}"


def _used_as_device(node: ast.Constant, parents: dict[ast.AST, ast.AST]) -> bool:
    """Is a string (a device, a URL) handed to code (an argument, an assignment, a mapping value
    in one), not compared, printed or formatted?"""
    parent = parents.get(node)
    while isinstance(parent, ast.IfExp | ast.Dict | ast.keyword | ast.BoolOp):
        node, parent = parent, parents.get(parent)  # type: ignore[assignment]
    if isinstance(parent, ast.Call):
        func = parent.func
        name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", "")
        return name not in {"print", "format", "str", "repr", "startswith", "endswith", "get"}
    return isinstance(parent, ast.Assign | ast.AnnAssign | ast.Return)


def mentions_accelerator(tree: ast.AST, bindings: dict[str, str]) -> bool:
    """Does the code use an accelerator anywhere, guarded or not (its verdict may then differ on
    a machine that has one)?

    >>> mentions_accelerator(ast.parse('d = "cuda" if ok else "cpu"'), {})
    True
    >>> mentions_accelerator(ast.parse("print(1)"), {})
    False
    """
    return any(True for _ in _accelerator_sites(tree, bindings, _parents(tree)))


def _accelerator_needs(tree: ast.AST, bindings: dict[str, str]) -> list[Need]:
    parents = _parents(tree)
    sites = [
        (getattr(node, "lineno", 0), getattr(node, "col_offset", 0), what)
        for node, what in _accelerator_sites(tree, bindings, parents)
        if not _guarded(node, parents, bindings)
    ]
    return [Need(kind="accelerator", line=line, what=what) for line, _, what in sorted(sites)]


# -- model files ---------------------------------------------------------------------------------
_WEIGHTS_SUFFIXES = (
    ".gguf",
    ".ggml",
    ".safetensors",
    ".bin",
    ".pt",
    ".pth",
    ".ckpt",
    ".onnx",
    ".engine",
    ".plan",
    ".trt",
    ".tflite",
    ".mlmodel",
    ".mlpackage",
    ".h5",
    ".keras",
    ".pb",
    ".pdmodel",
    ".pdparams",
    ".mnn",
    ".nemo",
    ".llamafile",
)
_NOT_PATHS = {"suffix", "prefix", "ext", "extension", "format"}
_BARE_SUFFIX = re.compile(r"^\.\w+$")
_WRITES = re.compile(
    r"(?i)save|export|convert|write|dump|quantize|serialize|download|temporary|mkstemp"
)
_LOADS_DIR = {"from_pretrained", "load_model", "load", "Generator", "Translator", "Llama", "LLM"}


def _value(arg: ast.expr, constants: dict[str, str]) -> str | None:
    """The string an argument is: a literal, or a name bound to one."""
    if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
        return arg.value
    return constants.get(arg.id) if isinstance(arg, ast.Name) else None


def _written_first(value: str, line: int, tree: ast.AST, bindings: dict[str, str]) -> bool:
    """Does the snippet write `value` (a path) before line `line`: an argument of a call that
    saves, exports or converts, or a file it opens for writing?"""
    constants = string_constants(tree)
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or node.lineno >= line:
            continue
        args = [*node.args, *(k.value for k in node.keywords)]
        if value not in {_value(a, constants) for a in args}:
            continue
        name = _target(node.func, bindings).rsplit(".", 1)[-1]
        mode = _value(node.args[1], constants) if len(node.args) > 1 else None
        if _WRITES.search(name) or (name == "open" and (mode or "r")[:1] in "wax"):
            return True
    return False


def _model_needs(tree: ast.AST, bindings: dict[str, str]) -> list[Need]:
    constants = string_constants(tree)
    needs: list[Need] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        target = _target(node.func, bindings)
        last = target.rsplit(".", 1)[-1]
        if _WRITES.search(last):
            continue
        found: tuple[str, str] | None = None
        named = [*node.args, *(k.value for k in node.keywords if k.arg not in _NOT_PATHS)]
        for arg in named:
            value = _value(arg, constants)
            if not value or "{" in value or _BARE_SUFFIX.match(value):
                continue  # a template, or a suffix (`NamedTemporaryFile(suffix=".onnx")`)
            if value.lower().endswith(_WEIGHTS_SUFFIXES):
                found = (value, f"model file {value!r} ({target})")
                break
        if found is None and last in _LOADS_DIR and node.args:
            value = _value(node.args[0], constants)
            if value and local_path(value) and not value.endswith(".py"):
                found = (value, f"local model {value!r} ({target})")
        if found is None or os.path.exists(found[0]):
            continue
        if not _written_first(found[0], node.lineno, tree, bindings):
            needs.append(Need(kind="model", line=node.lineno, what=found[1]))
    return needs


# -- credentials ---------------------------------------------------------------------------------
_SECRET_NAME = re.compile(r"(?i)(^|_)(api_?key|key|token|secret|password|passwd|credentials?)($|_)")
_SECRET_KWARGS = {
    "api_key",
    "token",
    "hf_token",
    "use_auth_token",
    "access_token",
    "auth_token",
    "password",
    "secret_key",
    "aws_secret_access_key",
}
_LOGINS = {"login", "notebook_login", "interpreter_login"}
# a literal that says no key is needed (local servers take any): `api_key="sk-no-key-required"`
_NO_KEY = re.compile(r"(?i)no[-_ ]?key|not[-_ ]?(needed|required|used)|^empty$|^none$|dummy")


def _env_key(node: ast.AST, bindings: dict[str, str]) -> str | None:
    """The variable name a snippet reads or sets in its environment at `node`, if any (through
    `os` or names imported from it).

    >>> from qa.snippets.static import import_bindings
    >>> tree = ast.parse("from os import getenv\\nk = getenv('HF_TOKEN')")
    >>> names = import_bindings(tree)
    >>> [_env_key(n, names) for n in ast.walk(tree) if isinstance(n, ast.Call)]
    ['HF_TOKEN']
    """
    key: ast.expr | None = None
    if isinstance(node, ast.Subscript):
        if _target(node.value, bindings).removeprefix("os.") == "environ":
            key = node.slice
    elif isinstance(node, ast.Call) and node.args:
        reader = _target(node.func, bindings).removeprefix("os.")
        if reader in {"getenv", "environ.get", "environ.setdefault"}:
            key = node.args[0]
    return key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else None


def _credential_needs(tree: ast.AST, bindings: dict[str, str]) -> list[Need]:
    needs: list[Need] = []
    for node in ast.walk(tree):
        key = _env_key(node, bindings)
        if key and _SECRET_NAME.search(key):
            needs.append(Need(kind="credentials", line=getattr(node, "lineno", 0), what=key))
            continue
        if not isinstance(node, ast.Call):
            continue
        target = _target(node.func, bindings)
        if target.rsplit(".", 1)[-1] in _LOGINS and target != "login":
            needs.append(Need(kind="credentials", line=node.lineno, what=f"{target}()"))
            continue
        for kw in node.keywords:
            value = kw.value
            empty = isinstance(value, ast.Constant) and (
                value.value in (None, False, "") or _NO_KEY.search(str(value.value))
            )
            if kw.arg in _SECRET_KWARGS and not empty:
                needs.append(
                    Need(kind="credentials", line=node.lineno, what=f"{kw.arg}= of {target}()")
                )
                break
    return needs


# -- services ------------------------------------------------------------------------------------
# a package whose calls talk to a server → what server
_SERVICE_CLIENTS = {
    "openai": "an OpenAI-compatible API server",
    "anthropic": "the Anthropic API",
    "ollama": "an Ollama server",
    "litellm": "an LLM API server",
    "langchain_openai": "an OpenAI-compatible API server",
    "tritonclient": "a Triton Inference Server",
    "xinference.client": "an Xinference server",
    "lmdeploy.serve": "an LMDeploy server",
    "text_generation": "a text-generation-inference server",
    "huggingface_hub.InferenceClient": "a Hugging Face inference endpoint",
    "redis": "a Redis server",
    "pymongo": "a MongoDB server",
    "psycopg2": "a PostgreSQL server",
    "psycopg": "a PostgreSQL server",
    "mysql": "a MySQL server",
    "elasticsearch": "an Elasticsearch server",
    "qdrant_client": "a Qdrant server",
    "weaviate": "a Weaviate server",
    "pinecone": "the Pinecone service",
    "boto3": "AWS",
    "google.cloud": "Google Cloud",
    "kubernetes": "a Kubernetes cluster",
    "grpc": "a gRPC server",
    "websocket": "a WebSocket server",
    "websockets": "a WebSocket server",
}
_LOCAL_URL = re.compile(
    r"^(https?|wss?|grpc|redis|mongodb|postgres(ql)?)://(localhost|127\.|0\.0\.0\.0)"
)


def _service_needs(tree: ast.AST, bindings: dict[str, str]) -> list[Need]:
    needs: dict[str, Need] = {}
    parents = _parents(tree)
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Constant)
            and isinstance(node.value, str)
            and _LOCAL_URL.match(node.value)
            and _used_as_device(node, parents)
        ):
            needs.setdefault(
                node.value, Need(kind="service", line=node.lineno, what=f"{node.value!r}")
            )
        if not isinstance(node, ast.Call):
            continue
        target = resolve_call(node.func, bindings) or ""
        for prefix, server in _SERVICE_CLIENTS.items():
            if target == prefix or target.startswith(prefix + "."):
                needs.setdefault(
                    server, Need(kind="service", line=node.lineno, what=f"{server} ({target})")
                )
    return sorted(needs.values(), key=lambda n: n.line)


def machine_needs(
    tree: ast.AST, bindings: dict[str, str], *, accelerator: bool | None = None
) -> list[Need]:
    """Everything the snippet needs that this machine's sandbox does not give, in source order
    (`accelerator`: is one here; default `accelerator_here()`).

    >>> code = '''import torch
    ... acc = hasattr(torch, "accelerator")
    ... device = torch.accelerator.current_accelerator().type if acc else "cuda"
    ... x = torch.ones(2, device="cuda" if torch.cuda.is_available() else "cpu")
    ... '''
    >>> tree = ast.parse(code)
    >>> [n.text() for n in machine_needs(tree, {"torch": "torch"}, accelerator=False)]
    ['`torch.accelerator.current_accelerator().type` (line 3)', "device 'cuda' (line 3)"]
    """
    if accelerator is None:
        accelerator = accelerator_here()
    needs = [] if accelerator else _accelerator_needs(tree, bindings)
    needs += _model_needs(tree, bindings)
    needs += _credential_needs(tree, bindings)
    needs += _service_needs(tree, bindings)
    seen: dict[tuple[str, str], Need] = {}
    for need in sorted(needs, key=lambda n: n.line):
        seen.setdefault((need.kind, need.what), need)
    return list(seen.values())


def describe_needs(needs: list[Need]) -> list[str]:
    """One phrase per kind of need, with its first places.

    >>> describe_needs([Need(kind="accelerator", line=2, what="device 'cuda'"),
    ...                 Need(kind="credentials", line=5, what="HF_TOKEN")])
    ["needs an accelerator: device 'cuda' (line 2)", 'needs credentials: HF_TOKEN (line 5)']
    """
    out = []
    for kind, words in _KIND_WORDS.items():
        mine = [n.text() for n in needs if n.kind == kind]
        if mine:
            more = f" and {len(mine) - 3} more" if len(mine) > 3 else ""
            out.append(f"{words}: {', '.join(mine[:3])}{more}")
    return out


# -- `...` placeholders --------------------------------------------------------------------------
_ELLIPSIS_IDIOMS = {"pydantic", "fastapi", "sqlmodel", "typer", "strawberry"}
_STUB_DECORATORS = {"overload", "abstractmethod", "abstractproperty", "property"}


def _is_ellipsis(node: ast.AST | None) -> bool:
    return isinstance(node, ast.Constant) and node.value is Ellipsis


def _stub_context(
    func: ast.FunctionDef | ast.AsyncFunctionDef, parents: dict[ast.AST, ast.AST]
) -> bool:
    """A body of `...` that is Python's own idiom: an overload, an abstract method, a method of
    a Protocol, an ABC, a TypedDict or a NamedTuple."""
    names = {
        (_dotted(d.func) if isinstance(d, ast.Call) else _dotted(d)) or ""
        for d in func.decorator_list
    }
    if {n.rsplit(".", 1)[-1] for n in names} & _STUB_DECORATORS:
        return True
    owner = parents.get(func)
    if isinstance(owner, ast.ClassDef):
        bases = {(_dotted(b) or "").rsplit(".", 1)[-1] for b in owner.bases}
        return bool(bases & {"Protocol", "ABC", "TypedDict", "NamedTuple"})
    return False


def _holds_value(node: ast.AST, parent: ast.AST | None, parents: dict[ast.AST, ast.AST]) -> bool:
    """Is `...` a value left out: assigned, returned, an item of a literal (not a slice)?"""
    if isinstance(parent, ast.Assign | ast.AnnAssign | ast.Return):
        return parent.value is node
    if isinstance(parent, ast.Tuple):
        return not isinstance(parents.get(parent), ast.Subscript)
    return isinstance(parent, ast.List | ast.Set | ast.Dict)


def placeholders(tree: ast.AST, bindings: dict[str, str]) -> list[str]:
    """Where `...` stands for code left out, as `what (line N)`, in source order: an argument
    (`LoraConfig(...)`), a statement or a whole body, an assigned or returned value, an item of
    a list. Python's own uses are not placeholders: slices (`x[..., 0]`), `Callable[..., T]`,
    stubs of overloads, abstract methods and Protocols, `Field(...)` of pydantic/FastAPI.

    >>> placeholders(ast.parse("cfg = LoraConfig(...)\\ny = x[..., 0]"), {})
    ['LoraConfig(...) (line 1)']
    >>> placeholders(ast.parse("for b in data:\\n    ...\\n    step(b)"), {})
    ['`...` in the body of a for loop (line 2)']
    """
    parents = _parents(tree)
    found: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Constant) or node.value is not Ellipsis:
            continue
        parent = parents.get(node)
        if isinstance(parent, ast.keyword):
            parent = parents.get(parent)
        if isinstance(parent, ast.Call):
            top = (resolve_call(parent.func, bindings) or "").split(".")[0]
            if top not in _ELLIPSIS_IDIOMS:
                found.append((node.lineno, _shown(parent)))
        elif isinstance(parent, ast.Expr):
            holder = parents.get(parent)
            if isinstance(holder, ast.FunctionDef | ast.AsyncFunctionDef):
                if _stub_context(holder, parents):
                    continue
                what = f"`...` as the body of {holder.name}()"
            elif isinstance(holder, ast.ClassDef):
                continue  # `class Error(Exception): ...` is an empty class
            elif isinstance(holder, ast.Module):
                what = "`...` as a statement"
            else:
                kind = {
                    ast.For: "a for loop",
                    ast.AsyncFor: "a for loop",
                    ast.While: "a while loop",
                    ast.If: "an if",
                    ast.With: "a with block",
                    ast.AsyncWith: "a with block",
                    ast.Try: "a try",
                }.get(type(holder), "a block")
                what = f"`...` in the body of {kind}"
            found.append((node.lineno, what))
        elif parent is not None and _holds_value(node, parent, parents):
            found.append((node.lineno, f"`{_shown(parent)}`"))
    return [f"{what} (line {line})" for line, what in sorted(dict.fromkeys(found))]
