"""Static facts about a snippet, read without running or importing anything.

Python, from its syntax tree:

- `import_bindings`: which local name stands for which dotted module path
  (`dist` → `torch.distributed`);
- `resolve_call`: the dotted path a call names, through those aliases;
- `api_calls`: every call whose target resolves to an imported module, with its argument shape;
- `undefined_names`: names read but never bound anywhere (the snippet needs context for them);
- `network_needs`: calls that would download something (hub model ids, datasets, URLs);
- `check_imports`: whether each imported module can be found here, and its installed version;
- `serving_calls`: calls that serve until stopped (`app.run()`, `demo.launch()`).

Data and build files, by parsing them: `check_data` (JSON, YAML, TOML, Dockerfile) gives
an outcome and a reason that carries the parser's own message when the file does not parse.
"""

from __future__ import annotations

import ast
import builtins
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
    "check_data",
    "check_imports",
    "implicit_imports",
    "import_bindings",
    "imported_modules",
    "installed_version",
    "module_found",
    "network_needs",
    "resolve_call",
    "serving_calls",
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
    try:
        json.loads(_relaxed_json(text))
    except json.JSONDecodeError:
        return "failed", f"invalid JSON: {error.msg} (line {error.lineno}, column {error.colno})"
    return "skipped", (
        "not strict JSON as written (comments, '...' elisions, <placeholders> or trailing "
        "commas), well-formed without them: not checked further"
    )


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
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        problem = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        return "failed", f"invalid YAML: {problem}{where}"
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
        return "failed", f"invalid TOML: {exc}"
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
            return "failed", f"line {number}: unknown Dockerfile instruction {word!r}{tip}"
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
    'invalid TOML: Invalid value (at line 2, column 8)'
    >>> check_data("FROM python:3.11\\nRUNN pip install x", "dockerfile")[1]
    "line 2: unknown Dockerfile instruction 'RUNN' (did you mean RUN?)"
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
