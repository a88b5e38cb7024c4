"""Static facts about a Python snippet, read from its syntax tree without running or importing it.

- `import_bindings`: which local name stands for which dotted module path
  (`dist` → `torch.distributed`);
- `resolve_call`: the dotted path a call names, through those aliases;
- `api_calls`: every call whose target resolves to an imported module, with its argument shape;
- `undefined_names`: names read but never bound anywhere (the snippet needs context for them);
- `network_needs`: calls that would download something (hub model ids, datasets, URLs);
- `check_imports`: whether each imported module can be found here, and its installed version.
"""

from __future__ import annotations

import ast
import builtins
import functools
import importlib.machinery
import importlib.metadata
import importlib.util
import os
import re

from pydantic import BaseModel, Field

__all__ = [
    "ApiCall",
    "ImportCheck",
    "api_calls",
    "check_imports",
    "implicit_imports",
    "import_bindings",
    "imported_modules",
    "installed_version",
    "module_found",
    "network_needs",
    "resolve_call",
    "undefined_names",
]

_HUB_ID_RE = re.compile(r"^[A-Za-z0-9][\w.-]*/[\w.-]+$")
# final attribute of a call → what it fetches when given a name that is not a local path
_DOWNLOADERS = {
    "from_pretrained": "hub model",
    "load_dataset": "dataset",
    "hf_hub_download": "hub file",
    "snapshot_download": "hub repository",
    "pipeline": "hub model",
}
_URL_CALLS = {
    "urlopen",
    "urlretrieve",
    "get",
    "post",
    "download_url_to_file",
    "load_state_dict_from_url",
}


class ApiCall(BaseModel):
    """A call to an imported API: `target` is the dotted path, arguments by shape."""

    target: str
    line: int
    n_positional: int
    keywords: list[str] = Field(default_factory=list)
    has_star: bool = False

    def key(self) -> str:
        """A stable key for caching signature checks.

        >>> ApiCall(target="m.f", line=1, n_positional=2, keywords=["b", "a"]).key()
        'm.f/2/a,b/False'
        """
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
        if target is None:
            continue
        star = any(isinstance(a, ast.Starred) for a in node.args) or any(
            k.arg is None for k in node.keywords
        )
        calls.append(
            ApiCall(
                target=target,
                line=node.lineno,
                n_positional=sum(not isinstance(a, ast.Starred) for a in node.args),
                keywords=[k.arg for k in node.keywords if k.arg is not None],
                has_star=star,
            )
        )
    return sorted(calls, key=lambda c: c.line)


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


def network_needs(tree: ast.AST, bindings: dict[str, str]) -> list[str]:
    """What the snippet would download, one reason per call, in source order.

    >>> network_needs(ast.parse('from datasets import load_dataset\\nload_dataset("imdb")'),
    ...               {"load_dataset": "datasets.load_dataset"})
    ["dataset 'imdb' (datasets.load_dataset, line 2)"]
    """
    needs: list[tuple[int, str]] = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        target = resolve_call(node.func, bindings) or _dotted(node.func) or ""
        last = target.rsplit(".", 1)[-1]
        literals = [
            a.value
            for a in [*node.args, *(k.value for k in node.keywords)]
            if isinstance(a, ast.Constant) and isinstance(a.value, str)
        ]
        where = f"({target}, line {node.lineno})"
        urls = [s for s in literals if s.startswith(("http://", "https://"))]
        if urls and (last in _URL_CALLS or target in bindings.values()):
            needs.append((node.lineno, f"URL {urls[0]!r} {where}"))
            continue
        if last not in _DOWNLOADERS or (target == last and last not in bindings):
            continue
        name_args = [s for s in literals[:1] if not os.path.exists(s)]
        if name_args and (last != "from_pretrained" or _HUB_ID_RE.match(name_args[0])):
            needs.append((node.lineno, f"{_DOWNLOADERS[last]} {name_args[0]!r} {where}"))
    return [reason for _, reason in sorted(needs)]


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
