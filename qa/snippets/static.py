"""Static facts about a snippet, read without running or importing anything.

Python, from its syntax tree:

- `import_bindings`: which local name stands for which dotted module path
  (`dist` → `torch.distributed`);
- `resolve_call`: the dotted path a call names, through those aliases;
- `api_calls`: every call whose target resolves to an imported module, with its argument shape;
- `undefined_names`: names read but never bound anywhere (the snippet needs context for them);
- `network_needs`: calls that would download something (hub model ids, datasets, URLs);
- `string_constants`, `local_path`: what a name bound to a literal holds, and whether a string
  names a local path rather than a hub id;
- `check_imports`: whether each imported module can be found here, and its installed version;
- `serving_calls`: calls that serve until stopped (`app.run()`, `demo.launch()`).

Data and build files, by parsing them: `check_data` (JSON, YAML, TOML, Dockerfile) gives
an outcome and a reason that carries the parser's own message when the file does not parse.
"""

from __future__ import annotations

import ast
import builtins
import contextlib
import functools
import importlib.machinery
import importlib.metadata
import importlib.util
import json
import os
import re
import tomllib
from difflib import get_close_matches
from typing import Literal

from pydantic import BaseModel, Field

from ingest.code_repair import DOCKERFILE_INSTRUCTIONS, dockerfile_lines

__all__ = [
    "ApiCall",
    "ImportCheck",
    "api_calls",
    "api_references",
    "check_data",
    "check_imports",
    "first_bindings",
    "implicit_imports",
    "import_bindings",
    "imported_modules",
    "installed_version",
    "local_path",
    "module_found",
    "network_needs",
    "resolve_call",
    "serving_calls",
    "string_constants",
    "undefined_names",
    "used_before_bound",
]

_HUB_ID_RE = re.compile(r"^[A-Za-z0-9][\w.-]*(/[\w.-]+)?$")
# final attribute of a call → what it fetches when given a name that is not a local path
_DOWNLOADERS = {
    "from_pretrained": "hub model",
    "load_dataset": "dataset",
    "hf_hub_download": "hub file",
    "snapshot_download": "hub repository",
    "pipeline": "hub model",
    "SentenceTransformer": "hub model",
    "CrossEncoder": "hub model",
    "AutoModel": "hub model",  # modelscope, funasr: AutoModel(model="org/name")
}
# the same, only for these resolved targets (their last name is too common to go by)
_QUALIFIED_DOWNLOADERS = {
    "evaluate.load": "hub metric",
    "torch.hub.load": "torch hub model",
    "mlx_lm.load": "hub model",
    "mlx_vlm.load": "hub model",
    "tensorflow_datasets.load": "dataset",
    "whisper.load_model": "model",
    "timm.create_model": "hub model",
    "vllm.LLM": "hub model",
    "sglang.Engine": "hub model",
    "lmdeploy.pipeline": "hub model",
    "nltk.download": "NLTK data",
    "modelscope.snapshot_download": "ModelScope repository",
}
# keyword arguments that name what a downloader fetches (else its first positional argument)
_NAME_KWARGS = (
    "pretrained_model_name_or_path",
    "model",
    "model_name",
    "model_id",
    "model_name_or_path",
    "repo_id",
    "path",
)
# load_dataset builders that read local files (data_files=...), not the hub
_LOCAL_BUILDERS = {
    "csv",
    "json",
    "parquet",
    "text",
    "arrow",
    "imagefolder",
    "audiofolder",
    "videofolder",
    "webdataset",
    "pandas",
    "sql",
    "generator",
}
_URL_CALLS = {
    "urlopen",
    "urlretrieve",
    "get",
    "post",
    "download_url_to_file",
    "load_state_dict_from_url",
    "get_file",
    "wget",
}
_LOCAL_HOSTS = re.compile(r"^[a-z]+://(localhost|127\.|0\.0\.0\.0|\[::1\])")
_FILE_SUFFIX = re.compile(r"\.(bin|pt|pth|safetensors|gguf|onnx|ckpt|json|ya?ml|txt|h5|model)$")


def local_path(value: str) -> bool:
    """Does a string name a local file or directory (rather than a hub id such as `org/name`)?

    >>> [local_path(v) for v in ("./ckpt", "out/", "/m", "a/b/c", "m.gguf", "org/name", "gpt2")]
    [True, True, True, True, True, False, False]
    """
    return (
        value.startswith(("./", "../", "/", "~", ".\\"))
        or value in (".", "..")
        or value.endswith(("/", "\\"))
        or "\\" in value
        or value.count("/") > 1
        or bool(_FILE_SUFFIX.search(value.lower()))
    )


def string_constants(tree: ast.AST) -> dict[str, str]:
    """Names bound to a string literal (`model_id = "org/name"`), the first binding of each:
    what a call given the name receives. Scope-insensitive, as `undefined_names`.

    >>> string_constants(ast.parse('model_id = "Qwen/Qwen2.5-3B"\\nn: str = "x"\\nk = 1'))
    {'model_id': 'Qwen/Qwen2.5-3B', 'n': 'x'}
    """
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        targets: list[ast.expr] = []
        if isinstance(node, ast.Assign):
            targets = node.targets
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets = [node.target]
        value = getattr(node, "value", None)
        if targets and isinstance(value, ast.Constant) and isinstance(value.value, str):
            for target in targets:
                if isinstance(target, ast.Name):
                    out.setdefault(target.id, value.value)
    return out


class ApiCall(BaseModel):
    """A call to an imported API: `target` is the dotted path, arguments by shape."""

    target: str
    line: int
    n_positional: int
    keywords: list[str] = Field(default_factory=list)
    has_star: bool = False
    attribute: bool = Field(
        default=False, description="a reference, not a call (`np.float`): only that it exists"
    )

    def key(self) -> str:
        """A stable key for caching signature checks.

        >>> ApiCall(target="m.f", line=1, n_positional=2, keywords=["b", "a"]).key()
        'm.f/2/a,b/False'
        >>> ApiCall(target="m.x", line=1, n_positional=0, attribute=True).key()
        'm.x/ref'
        """
        if self.attribute:
            return f"{self.target}/ref"
        return (
            f"{self.target}/{self.n_positional}/{','.join(sorted(self.keywords))}/{self.has_star}"
        )


class ImportCheck(BaseModel):
    """One imported module: found here or not, and the installed distribution version."""

    module: str
    found: bool
    version: str | None = None


def import_bindings(tree: ast.AST) -> dict[str, str]:
    """Local name → dotted path, from every import in the tree.

    >>> import_bindings(ast.parse("import torch.distributed as dist\\nfrom peft import LoraConfig"))
    {'dist': 'torch.distributed', 'LoraConfig': 'peft.LoraConfig'}
    """
    out: dict[str, str] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for a in node.names:
                if a.asname:
                    out[a.asname] = a.name
                else:
                    top = a.name.split(".")[0]
                    out[top] = top
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            for a in node.names:
                if a.name != "*":
                    out[a.asname or a.name] = f"{node.module}.{a.name}"
    return out


def imported_modules(tree: ast.AST) -> list[str]:
    """Module paths named by import statements, in order, without duplicates.

    >>> imported_modules(ast.parse("import a.b as c\\nfrom d import e\\nimport a.b"))
    ['a.b', 'd']
    """
    seen: dict[str, None] = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            seen.update((a.name, None) for a in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            seen[node.module] = None
    return list(seen)


def _dotted(node: ast.expr) -> str | None:
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        base = _dotted(node.value)
        return f"{base}.{node.attr}" if base else None
    return None


def resolve_call(func: ast.expr, bindings: dict[str, str]) -> str | None:
    """The dotted path a call target names, through import aliases; None if not an import.

    >>> resolve_call(ast.parse("dist.init_process_group", mode="eval").body,
    ...              {"dist": "torch.distributed"})
    'torch.distributed.init_process_group'
    """
    dotted = _dotted(func)
    if dotted is None:
        return None
    head, _, rest = dotted.partition(".")
    if head not in bindings:
        return None
    return f"{bindings[head]}.{rest}" if rest else bindings[head]


def api_calls(tree: ast.AST, bindings: dict[str, str]) -> list[ApiCall]:
    """Calls whose target resolves to an imported name, in source order."""
    calls: list[ApiCall] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        target = resolve_call(node.func, bindings)
        if target is None or target.startswith(_DYNAMIC):
            continue
        # `f(...)` or `f(a, ...)`: the arguments are left out, their number says nothing
        elided = any(isinstance(a, ast.Constant) and a.value is Ellipsis for a in node.args)
        star = (
            elided
            or any(isinstance(a, ast.Starred) for a in node.args)
            or any(k.arg is None for k in node.keywords)
        )
        calls.append(
            ApiCall(
                target=target,
                line=node.lineno,
                n_positional=sum(
                    not isinstance(a, ast.Starred)
                    and not (isinstance(a, ast.Constant) and a.value is Ellipsis)
                    for a in node.args
                ),
                keywords=[k.arg for k in node.keywords if k.arg is not None],
                has_star=star,
            )
        )
    return sorted(calls, key=lambda c: c.line)


_DYNAMIC = ("torch.ops", "torch.classes")  # namespaces filled at run time


def api_references(tree: ast.AST, bindings: dict[str, str]) -> list[ApiCall]:
    """Attributes of imported names the snippet reads without calling them (`np.float`,
    `torch.float16`), as `ApiCall`s with `attribute=True`, one per target in source order: an
    API that is gone shows here even when it is not called. Names the snippet rebinds, and
    attributes it assigns, are left out.

    >>> tree = ast.parse("import numpy as np\\nx = np.zeros(2, dtype=np.float)\\ny = np.pi")
    >>> [(r.target, r.line) for r in api_references(tree, {"np": "numpy"})]
    [('numpy.float', 2), ('numpy.pi', 3)]
    """
    parents = {child: node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    rebound = {
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    } | {n.arg for n in ast.walk(tree) if isinstance(n, ast.arg)}
    stored = {
        _dotted(n)
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute) and isinstance(n.ctx, ast.Store | ast.Del)
    }
    found: dict[str, ApiCall] = {}
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not isinstance(node.ctx, ast.Load):
            continue
        parent = parents.get(node)
        if isinstance(parent, ast.Attribute) or (
            isinstance(parent, ast.Call) and parent.func is node
        ):
            continue  # part of a longer chain, or a call (checked with its arguments)
        dotted = _dotted(node)
        if dotted is None or dotted.split(".")[0] in rebound or dotted in stored:
            continue
        target = resolve_call(node, bindings)
        if target is None or target.startswith(_DYNAMIC) or target in found:
            continue
        found[target] = ApiCall(target=target, line=node.lineno, n_positional=0, attribute=True)
    return sorted(found.values(), key=lambda r: r.line)


def _bound_names(tree: ast.AST) -> set[str]:
    bound: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store | ast.Del):
            bound.add(node.id)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for a in node.names:
                bound.add(a.asname or a.name.split(".")[0])
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
        elif isinstance(node, ast.Global | ast.Nonlocal):
            bound.update(node.names)
        elif isinstance(node, ast.MatchAs | ast.MatchStar) and node.name:
            bound.add(node.name)
    return bound


def undefined_names(tree: ast.AST) -> list[str]:
    """Names read somewhere but bound nowhere in the snippet (nor builtins), sorted.

    Scope-insensitive on purpose: it answers "what context does this snippet assume?".

    >>> undefined_names(ast.parse("import torch\\ny = torch.f(model, x)\\nx = 1"))
    ['model']
    """
    loaded = {
        n.id for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)
    }
    return sorted(loaded - _bound_names(tree) - set(dir(builtins)) - {"__file__"})


def _loads_now(node: ast.AST) -> list[ast.Name]:
    """Names a statement or expression reads when it runs: not inside function or lambda
    bodies (they run later), not a comprehension's own variables."""
    out: list[ast.Name] = []
    own: set[str] = set()
    stack = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, ast.Lambda):
            stack += item.args.defaults + [d for d in item.args.kw_defaults if d is not None]
            continue
        if isinstance(item, ast.comprehension):
            own |= {n.id for n in ast.walk(item.target) if isinstance(n, ast.Name)}
        if isinstance(item, ast.Name) and isinstance(item.ctx, ast.Load):
            out.append(item)
        stack.extend(ast.iter_child_nodes(item))
    return [n for n in out if n.id not in own]


def _stores(node: ast.AST) -> set[str]:
    """Names a target (or a statement's targets) binds."""
    return {
        n.id for n in ast.walk(node) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)
    }


class _Order:
    """Walks module-level code in the order it runs, collecting names read before bound."""

    def __init__(self, bound: set[str], annotations: bool) -> None:
        self.bound = bound
        self.annotations = annotations  # evaluated (no `from __future__ import annotations`)
        self.early: dict[str, int] = {}

    def read(self, *nodes: ast.AST | None) -> None:
        for node in nodes:
            if node is None:
                continue
            for name in _loads_now(node):
                if name.id not in self.bound:
                    self.early.setdefault(name.id, name.lineno)

    def block(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            self.statement(stmt)

    def statement(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
            self.read(*stmt.decorator_list, *stmt.args.defaults)
            self.read(*(d for d in stmt.args.kw_defaults if d is not None))
            self.bound.add(stmt.name)
        elif isinstance(stmt, ast.ClassDef):
            self.read(*stmt.decorator_list, *stmt.bases, *(k.value for k in stmt.keywords))
            self.block(stmt.body)
            self.bound.add(stmt.name)
        elif isinstance(stmt, ast.Import | ast.ImportFrom):
            self.bound |= {a.asname or a.name.split(".")[0] for a in stmt.names}
        elif isinstance(stmt, ast.For | ast.AsyncFor):
            self.read(stmt.iter)
            self.bound |= _stores(stmt.target)
            self.block(stmt.body)
            self.block(stmt.orelse)
        elif isinstance(stmt, ast.While | ast.If):
            self.read(stmt.test)
            self.block(stmt.body)
            self.block(stmt.orelse)
        elif isinstance(stmt, ast.With | ast.AsyncWith):
            for item in stmt.items:
                self.read(item.context_expr)
                if item.optional_vars is not None:
                    self.bound |= _stores(item.optional_vars)
            self.block(stmt.body)
        elif isinstance(stmt, ast.Try | ast.TryStar):
            self.block(stmt.body)
            for handler in stmt.handlers:
                self.read(handler.type)
                if handler.name:
                    self.bound.add(handler.name)
                self.block(handler.body)
            self.block(stmt.orelse)
            self.block(stmt.finalbody)
        elif isinstance(stmt, ast.AnnAssign):
            self.read(stmt.value, stmt.annotation if self.annotations else None)
            self.bound |= _stores(stmt.target)
        elif isinstance(stmt, ast.Assign | ast.AugAssign):
            self.read(stmt.value)
            if isinstance(stmt, ast.AugAssign):
                self.read(stmt.target if isinstance(stmt.target, ast.Name) else None)
            targets = stmt.targets if isinstance(stmt, ast.Assign) else [stmt.target]
            for target in targets:
                self.read(*[n for n in ast.walk(target) if not isinstance(n, ast.Name)])
                self.bound |= _stores(target)
        elif isinstance(stmt, ast.Match):
            self.read(stmt.subject)
            self.bound |= {
                n.name
                for n in ast.walk(stmt)
                if isinstance(n, ast.MatchAs | ast.MatchStar) and n.name is not None
            }
            for case in stmt.cases:
                self.block(case.body)
        elif not isinstance(stmt, ast.Global | ast.Nonlocal):
            self.read(stmt)
            self.bound |= _stores(stmt)


def used_before_bound(tree: ast.Module) -> dict[str, int]:
    """Names the snippet binds, but reads at module level before it does (as code runs, top to
    bottom; function bodies run later): it continues code shown before it (`model = f(model)`)
    or lists definitions out of order. Name → the line of the first such read.

    >>> used_before_bound(ast.parse("from m import f\\nmodel = f(model)\\nx = 1\\nprint(x)"))
    {'model': 2}
    >>> used_before_bound(ast.parse("def g():\\n    return h()\\ndef h():\\n    return 1\\ng()"))
    {}
    """
    if any(
        isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names) for n in tree.body
    ):
        return {}  # a star import may bind anything
    declared = {name for n in ast.walk(tree) if isinstance(n, ast.Global) for name in n.names}
    future = any(
        isinstance(n, ast.ImportFrom)
        and n.module == "__future__"
        and any(a.name == "annotations" for a in n.names)
        for n in tree.body
    )
    order = _Order(set(dir(builtins)) | declared | {"__file__", "__name__"}, not future)
    order.block(tree.body)
    bound_somewhere = _bound_names(tree)
    return {name: line for name, line in order.early.items() if name in bound_somewhere}


def first_bindings(tree: ast.Module) -> dict[str, int]:
    """The line where each name is first bound at module level (assigned, defined, imported).

    >>> first_bindings(ast.parse("x = 1\\ndef f(): pass\\nclass C: pass"))
    {'x': 1, 'f': 2, 'C': 3}
    """
    out: dict[str, int] = {}
    for stmt in tree.body:
        names: set[str] = set()
        if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names = {stmt.name}
        elif isinstance(stmt, ast.Import | ast.ImportFrom):
            names = {a.asname or a.name.split(".")[0] for a in stmt.names}
        else:
            names = _stores(stmt)
        for name in sorted(names):
            out.setdefault(name, stmt.lineno)
    return out


def implicit_imports(tree: ast.AST, undefined: list[str]) -> dict[str, str]:
    """Undefined names used as `name.attr` that are importable modules here: name → name.

    Snippets often use `torch.x` after importing only `torch.distributed as dist`, or with no
    import at all (the page showed a fragment).

    >>> implicit_imports(ast.parse("json.dumps(1)"), ["json"])
    {'json': 'json'}
    """
    bases = {
        n.value.id
        for n in ast.walk(tree)
        if isinstance(n, ast.Attribute) and isinstance(n.value, ast.Name)
    }
    return {n: n for n in undefined if n in bases and module_found(n)}


def _fetched_name(node: ast.Call, last: str, constants: dict[str, str]) -> tuple[str | None, bool]:
    """What a downloader call names (its first positional argument or a naming keyword, through
    names bound to literals), and whether it named one at all (False: nothing given)."""
    keywords = {k.arg: k.value for k in node.keywords if k.arg}
    candidates: list[ast.expr] = [keywords[k] for k in _NAME_KWARGS if k in keywords]
    if last != "pipeline":  # pipeline's first argument is the task, its model a keyword
        candidates = node.args[:1] + candidates
    for arg in candidates:
        if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
            return arg.value, True
        if isinstance(arg, ast.Name) and arg.id in constants:
            return constants[arg.id], True
    return None, bool(candidates)


def _named_by(node: ast.Call, last: str) -> ast.expr | None:
    """The expression a downloader call is given as the name of what it fetches, if any."""
    keywords = {k.arg: k.value for k in node.keywords if k.arg}
    named = [keywords[k] for k in _NAME_KWARGS if k in keywords]
    if last != "pipeline":
        named = node.args[:1] + named
    return named[0] if named else None


def _weights_download(node: ast.Call) -> str | None:
    """Pretrained weights a model constructor fetches: `pretrained=True`, `weights="imagenet"`
    or `weights=ResNet50_Weights.DEFAULT` (torchvision, Keras, timm), `download=True`."""
    for kw in node.keywords:
        value = kw.value
        if (
            kw.arg in ("pretrained", "download")
            and isinstance(value, ast.Constant)
            and value.value is True
        ):
            return f"{kw.arg}=True"
        if kw.arg == "weights":
            if isinstance(value, ast.Constant) and isinstance(value.value, str):
                return f"weights={value.value!r}"
            if isinstance(value, ast.Attribute) and _dotted(value):
                return f"weights={_dotted(value)}"
    return None


def network_needs(tree: ast.AST, bindings: dict[str, str]) -> list[str]:
    """What the snippet would download, one reason per call, in source order: hub models (an
    `org/name` or bare id such as `gpt2`, given as a literal or a name bound to one), datasets,
    hub files, pretrained weights, URLs. Local paths, localhost URLs (a service, not the network:
    `qa.snippets.requires`) and local dataset builders are not downloads.

    >>> network_needs(ast.parse('from datasets import load_dataset\\nload_dataset("imdb")'),
    ...               {"load_dataset": "datasets.load_dataset"})
    ["dataset 'imdb' (datasets.load_dataset, line 2)"]
    >>> code = 'import transformers as t\\nm = "Qwen/Qwen2.5-3B"\\nt.AutoModel.from_pretrained(m)'
    >>> network_needs(ast.parse(code), {"t": "transformers"})
    ["hub model 'Qwen/Qwen2.5-3B' (transformers.AutoModel.from_pretrained, line 3)"]
    >>> tree = ast.parse("t.AutoModel.from_pretrained(args.model_name)")
    >>> network_needs(tree, {"t": "transformers"})
    ['hub model named by `args.model_name` (transformers.AutoModel.from_pretrained, line 1)']
    """
    constants = string_constants(tree)
    written = _saved_paths(tree, constants)
    written_names = _saved_names(tree)
    needs: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        resolved = resolve_call(node.func, bindings)
        target = resolved or _dotted(node.func) or ""
        last = target.rsplit(".", 1)[-1]
        literals = [
            a.value
            for a in [*node.args, *(k.value for k in node.keywords)]
            if isinstance(a, ast.Constant) and isinstance(a.value, str)
        ]
        where = f"({target}, line {node.lineno})"
        urls = [s for s in literals if s.startswith(("http://", "https://", "s3://", "gs://"))]
        urls = [u for u in urls if not _LOCAL_HOSTS.match(u)]
        if urls and (last in _URL_CALLS or target in bindings.values() or resolved):
            needs.append((node.lineno, f"URL {urls[0]!r} {where}"))
            continue
        kind = _QUALIFIED_DOWNLOADERS.get(resolved or "")
        if kind is None and last in _DOWNLOADERS and not (target == last and last not in bindings):
            kind = _DOWNLOADERS[last]
        if kind is None:
            weights = _weights_download(node) if resolved else None
            if weights:
                needs.append((node.lineno, f"pretrained weights, {weights} {where}"))
            continue
        name, named = _fetched_name(node, last, constants)
        if name is None:
            given = _named_by(node, last)
            if last == "pipeline" and not named:
                needs.append((node.lineno, f"{kind}: the default model for the task {where}"))
            elif given is not None and not _is_local_name(given, written_names):
                shown = ast.unparse(given)
                shown = shown if len(shown) <= 40 else shown[:39] + "…"
                needs.append((node.lineno, f"{kind} named by `{shown}` {where}"))
            continue
        if local_path(name) or os.path.exists(name) or name in written or "{" in name:
            continue
        if last == "load_dataset" and name in _LOCAL_BUILDERS:
            continue
        if _HUB_ID_RE.match(name):
            needs.append((node.lineno, f"{kind} {name!r} {where}"))
    return [reason for _, reason in sorted(needs)]


def _saved_names(tree: ast.AST) -> set[str]:
    """Names passed as the path of a save call (`model.save_pretrained(out_dir)`)."""
    return {
        node.args[0].id
        for node in ast.walk(tree)
        if isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and node.func.attr.startswith(("save", "export"))
        and node.args
        and isinstance(node.args[0], ast.Name)
    }


def _is_local_name(given: ast.expr, written_names: set[str]) -> bool:
    """Is a non-literal name of what a loader fetches one the snippet wrote itself, or a path
    it builds (`os.path.join(...)`, `Path(...) / ...`, `tmpdir`)?"""
    if isinstance(given, ast.Name):
        return given.id in written_names or bool(
            re.search(r"(?i)dir|path|tmp|folder|local|ckpt|checkpoint|output", given.id)
        )
    text = ast.unparse(given)
    return isinstance(given, ast.BinOp) or bool(re.search(r"(?i)path|join|dir|tmp", text))


def _saved_paths(tree: ast.AST, constants: dict[str, str]) -> set[str]:
    """Paths the snippet itself writes with a save call (`model.save_pretrained("out")`)."""
    out: set[str] = set()
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr.startswith(("save", "export"))
            and node.args
        ):
            arg = node.args[0]
            if isinstance(arg, ast.Constant) and isinstance(arg.value, str):
                out.add(arg.value)
            elif isinstance(arg, ast.Name) and arg.id in constants:
                out.add(constants[arg.id])
    return out


_SERVE_FOREVER = {"serve_forever", "run_forever", "mainloop"}
# a web-app package → the method of its app object that serves until stopped
_APP_SERVE = {"flask": "run", "dash": "run", "gradio": "launch", "uvicorn": "run"}


def serving_calls(tree: ast.AST, bindings: dict[str, str]) -> list[str]:
    """Calls that serve until stopped (a web app's run or launch, serve_forever), in order:
    such a snippet is not run, it would never finish.

    >>> code = "import gradio as gr\\ndemo = gr.Interface(f, 'text', 'text')\\ndemo.launch()"
    >>> serving_calls(ast.parse(code), {"gr": "gradio"})
    ['demo.launch() (line 3)']
    """
    packages = {path.split(".")[0] for path in bindings.values()}
    calls: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)):
            continue
        method = node.func.attr
        serves = method in _SERVE_FOREVER or any(
            method == _APP_SERVE[p] for p in packages if p in _APP_SERVE
        )
        if serves:
            shown = _dotted(node.func) or method
            calls.append((node.lineno, f"{shown}() (line {node.lineno})"))
    return [call for _, call in sorted(calls)]


@functools.cache
def _distributions() -> dict[str, list[str]]:
    return dict(importlib.metadata.packages_distributions())


def installed_version(module: str) -> str | None:
    """The version of the distribution that provides top-level `module`, if any.

    >>> installed_version("pydantic") is not None
    True
    """
    for dist in _distributions().get(module.split(".")[0], []):
        try:
            return importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            continue
    return None


def module_found(name: str) -> bool:
    """Whether `name` can be imported here, found on the path without importing anything."""
    parts = name.split(".")
    try:
        spec = importlib.util.find_spec(parts[0])
    except (ImportError, ValueError):
        return False
    for part in parts[1:]:
        if spec is None or not spec.submodule_search_locations:
            return False
        spec = importlib.machinery.PathFinder.find_spec(part, list(spec.submodule_search_locations))
    return spec is not None


def check_imports(tree: ast.AST) -> list[ImportCheck]:
    """Each imported module: whether it is found here, with the installed version."""
    return [
        ImportCheck(module=m, found=module_found(m), version=installed_version(m))
        for m in imported_modules(tree)
    ]


# -- data and build files ------------------------------------------------------------------------
DataOutcome = Literal["ok", "failed", "skipped"]


def _shape(value: object) -> str:
    if isinstance(value, dict):
        return f"a mapping of {len(value)} key(s)"
    if isinstance(value, list):
        return f"a list of {len(value)} item(s)"
    return f"a single {type(value).__name__}"


def _relaxed_json(text: str) -> str:
    """JSON without what documentation adds to it: comments, `...` elisions, `<placeholders>`,
    trailing commas.

    >>> _relaxed_json('{"a": 1, // one\\n ..., "u": "http://x"}')
    '{"a": 1, "u": "http://x"}'
    """
    out: list[str] = []
    i, in_string = 0, False
    while i < len(text):
        ch = text[i]
        if in_string:
            out.append(ch)
            if ch == "\\":
                out.append(text[i + 1 : i + 2])
                i += 1
            in_string = ch != '"'
        elif ch == '"':
            in_string = True
            out.append(ch)
        elif text.startswith("//", i) or text.startswith("/*", i):
            end = text.find("\n" if text[i + 1] == "/" else "*/", i + 2)
            i = len(text) if end < 0 else end + (0 if text[i + 1] == "/" else 2)
            continue
        elif text.startswith("...", i) or ch == "…":
            i += 3 if ch == "." else 1
            continue
        elif placeholder := re.match(r"<[^<>\n]+>", text[i:]):
            out.append("null")  # <your-api-key>
            i += placeholder.end()
            continue
        else:
            out.append(ch)
        i += 1
    relaxed = re.sub(r",(\s*,)+", ",", "".join(out))
    return re.sub(r",(\s*[}\]])", r"\1", relaxed)


def _check_json(text: str) -> tuple[DataOutcome, str]:
    lines = [ln for ln in text.splitlines() if ln.strip()]
    try:
        return "ok", f"valid JSON ({_shape(json.loads(text))})"
    except json.JSONDecodeError as exc:
        error = exc
    if len(lines) > 1 and all(ln.lstrip().startswith("{") for ln in lines):
        try:
            return "ok", f"valid JSON Lines ({len([json.loads(ln) for ln in lines])} records)"
        except json.JSONDecodeError:
            pass
    members = "{" + _relaxed_json(text).strip().rstrip(",") + "}"
    with contextlib.suppress(json.JSONDecodeError):
        json.loads(members)
        return "skipped", (
            "an excerpt: members of a JSON object shown without the object around them, "
            "well-formed inside one: not checked further"
        )
    try:
        json.loads(_relaxed_json(text))
    except json.JSONDecodeError:
        where = _line_at(text, error.lineno)
        return "failed", (
            f"{where}invalid JSON: {error.msg} (line {error.lineno}, column {error.colno}): "
            "no JSON parser reads it"
        )
    return "skipped", (
        "not strict JSON as written (comments, '...' elisions, <placeholders> or trailing "
        "commas), well-formed without them: not checked further"
    )


def _line_at(text: str, lineno: int | None) -> str:
    """`line N: `the line` — `, the start of the evidence for a data file that does not parse.

    >>> _line_at("a: 1\\nb: [", 2)
    'line 2: `b: [` — '
    """
    lines = text.splitlines()
    if lineno is None or not 1 <= lineno <= len(lines) or not lines[lineno - 1].strip():
        return ""
    shown = lines[lineno - 1].strip()
    return f"line {lineno}: `{shown if len(shown) <= 90 else shown[:89] + '…'}` — "


_ELISION_LINE = re.compile(r"^\s*(\.\.\.|…)\s*$")


def _check_yaml(text: str) -> tuple[DataOutcome, str]:
    try:  # PyYAML is optional: it is not a dependency of kgqa
        yaml = importlib.import_module("yaml")
    except ImportError:
        return "skipped", "not checked: no YAML parser here (PyYAML is not installed)"
    try:  # composed, not constructed: the syntax is checked, tags such as !Ref need no meaning
        documents = list(yaml.compose_all(text, Loader=yaml.SafeLoader))
    except yaml.YAMLError as exc:
        if "{{" in text or "{%" in text:
            return (
                "skipped",
                "a template ({{ }} placeholders), not YAML until rendered: not checked",
            )
        kept = "\n".join(ln for ln in text.splitlines() if not _ELISION_LINE.match(ln))
        if kept != text.rstrip("\n"):
            with contextlib.suppress(yaml.YAMLError):
                list(yaml.compose_all(kept, Loader=yaml.SafeLoader))
                return "skipped", (
                    "an excerpt: `...` lines mark what was left out (YAML reads `...` as the "
                    "end of a document), well-formed without them: not checked further"
                )
        mark = getattr(exc, "problem_mark", None)
        line = mark.line + 1 if mark is not None else None
        where = f" (line {line}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        return "failed", (
            f"{_line_at(text, line)}invalid YAML: {problem}{where}: no YAML parser reads it"
        )
    if len(documents) != 1:
        return "ok", f"valid YAML ({len(documents)} documents)"
    node = documents[0]
    kind = {"MappingNode": "a mapping of {n} key(s)", "SequenceNode": "a list of {n} item(s)"}
    shown = kind.get(type(node).__name__, "a single value").format(n=len(node.value))
    return "ok", f"valid YAML ({shown})"


def _check_toml(text: str) -> tuple[DataOutcome, str]:
    try:
        data = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        found = re.search(r"at line (\d+)", str(exc))
        where = _line_at(text, int(found.group(1))) if found else ""
        return "failed", f"{where}invalid TOML: {exc}: no TOML parser reads it"
    tables = [k for k, v in data.items() if isinstance(v, dict)]
    return "ok", f"valid TOML ({len(tables)} table(s), {len(data) - len(tables)} top-level key(s))"


def _check_dockerfile(text: str) -> tuple[DataOutcome, str]:
    lines = dockerfile_lines(text)
    if not lines:
        return "skipped", "no Dockerfile instruction found"
    known = sorted(DOCKERFILE_INSTRUCTIONS)
    for number, line in lines:
        word = line.split()[0]
        if word.upper() not in DOCKERFILE_INSTRUCTIONS:
            close = get_close_matches(word.upper(), known, n=1)
            tip = f" (did you mean {close[0]}?)" if close else ""
            return "failed", (
                f"line {number}: unknown Dockerfile instruction {word!r}{tip}: "
                "docker build rejects it"
            )
    words = [line.split()[0].upper() for _, line in lines]
    start = "" if "FROM" in words else "; a fragment (no FROM)"
    return "ok", (
        f"{len(lines)} Dockerfile instruction(s), all known{start}; the commands of RUN run inside "
        "the image: not checked"
    )


def check_data(text: str, language: str) -> tuple[DataOutcome, str]:
    """Parse a JSON, YAML, TOML or Dockerfile snippet: ('ok', what it holds), ('failed', the
    parser's message), or ('skipped', why it could not be checked).

    >>> check_data('{"model": "m", "n": 2}', "json")
    ('ok', 'valid JSON (a mapping of 2 key(s))')
    >>> check_data("[tool]\\nname = \\nx = 1", "toml")[1]
    'line 2: `name =` — invalid TOML: Invalid value (at line 2, column 8): no TOML parser reads it'
    >>> check_data("FROM python:3.11\\nRUNN pip install x", "dockerfile")[1]
    "line 2: unknown Dockerfile instruction 'RUNN' (did you mean RUN?): docker build rejects it"
    >>> check_data('"weight": [1, 2],', "json")[0]
    'skipped'
    >>> check_data("parallel_config:\\n  ...\\n  data_parallel: 2\\n", "yaml")[0]
    'skipped'
    """
    checks = {
        "json": _check_json,
        "yaml": _check_yaml,
        "toml": _check_toml,
        "dockerfile": _check_dockerfile,
    }
    if language not in checks:
        raise ValueError(f"not a data language: {language!r}")
    return checks[language](text)
