"""Declared, small fixtures that complete a snippet so that it can run here.

Fixtures are chosen by what the snippet needs (names it uses but never defines, APIs it calls),
never by its text: a model passed to an exporter becomes a tiny `torch.nn.Linear`, the example
input a random tensor, a CUDA/NCCL program runs on CPU with gloo in one process. Every fixture and
every substitution is recorded so that the report shows exactly what ran.
"""

from __future__ import annotations

import ast
import copy
import re
import textwrap

from pydantic import BaseModel, Field, PrivateAttr

from qa.snippets.requires import accelerator_here
from qa.snippets.static import resolve_call

__all__ = ["CHECK_MARKER", "Completion", "Fixture", "complete_snippet"]

CHECK_MARKER = "KGQA-CHECK "
"""Prefix of the line a post-run check prints (JSON after it)."""

# API → (position of the module argument, position of the example input), by resolved path
_MODULE_CONSUMERS: dict[str, tuple[int, int | None]] = {
    "torch.onnx.export": (0, 1),
    "torch.jit.trace": (0, 1),
    "torch.jit.script": (0, None),
    "torch.compile": (0, None),
    "torch.export.export": (0, 1),
    "torch.nn.parallel.DistributedDataParallel": (0, None),
}
_CAMEL_RE = re.compile(r"^[A-Z][a-z0-9]+[A-Z]\w*$|^[A-Z][a-z0-9]+$")


class Fixture(BaseModel):
    """A piece of code run before the snippet, and why it was chosen."""

    name: str
    reason: str
    code: str
    provides: list[str] = Field(default_factory=list)


class Completion(BaseModel):
    """A snippet made runnable: the program, what was added and changed, what is still missing.

    The sandbox runs `body` as its `snippet.py`: the `setup` lines (imports and fixtures) then
    the snippet, as written unless a substitution rewrote it (one file, so that processes the
    snippet spawns, which run that file again, get the fixtures too); then `after`, a post-run
    check, in its namespace. `program` is all of it, as shown in reports.
    """

    program: str
    setup: str = ""
    body: str = ""
    after: str | None = None
    offset: int = Field(default=0, description="lines of `body` before the snippet's first")
    lines: dict[int, int] = Field(
        default_factory=dict,
        description="line of the snippet's part of `body` → line of the snippet, where a rewrite "
        "moved lines (empty: line for line)",
    )
    fixtures: list[Fixture] = Field(default_factory=list)
    substitutions: list[str] = Field(default_factory=list)
    checks: list[str] = Field(default_factory=list, description="post-run checks added")
    missing: list[str] = Field(default_factory=list, description="undefined names left")
    _tree: ast.Module | None = PrivateAttr(default=None)

    @property
    def tree(self) -> ast.Module | None:
        """The snippet's tree as it runs (after substitutions)."""
        return self._tree

    def snippet_line(self, body_line: int) -> int | None:
        """The line of the snippet that `body_line` of the body came from (None: a setup line).

        >>> moved, same = Completion(program="", offset=2, lines={1: 3}), Completion(program="")
        >>> moved.snippet_line(3), moved.snippet_line(2), same.snippet_line(4)
        (3, None, 4)
        """
        if body_line <= self.offset:
            return None
        line = body_line - self.offset
        return self.lines.get(line, line) if self.lines else line


def _line_map(tree: ast.Module, text: str) -> dict[int, int]:
    """Line of `text` (the unparsed `tree`) → line of the code `tree` was parsed from: the two
    trees have the same shape, so their nodes pair up in walk order.

    >>> _line_map(ast.parse("x = (1 +\\n     2)\\ny = 3"), "x = 1 + 2\\ny = 3")
    {1: 1, 2: 3}
    """
    out: dict[int, int] = {}
    for old, new in zip(ast.walk(tree), ast.walk(ast.parse(text)), strict=False):
        if type(old) is not type(new):
            break
        line, was = getattr(new, "lineno", None), getattr(old, "lineno", None)
        if isinstance(line, int) and isinstance(was, int):
            out.setdefault(line, was)
    return out


def _cuda_here() -> bool:
    return accelerator_here()


def _dotted_or_resolved(func: ast.expr, bindings: dict[str, str]) -> str:
    resolved = resolve_call(func, bindings)
    if resolved:
        return resolved
    parts: list[str] = []
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.append(func.id)
    return ".".join(reversed(parts))


class _CpuDistributed(ast.NodeTransformer):
    """Rewrites CUDA/NCCL calls to their CPU/gloo equivalents, recording each change."""

    def __init__(self, bindings: dict[str, str]) -> None:
        self.bindings = bindings
        self.changes: list[str] = []

    def visit_Expr(self, node: ast.Expr) -> ast.stmt:
        if isinstance(node.value, ast.Call):
            target = _dotted_or_resolved(node.value.func, self.bindings)
            if target == "torch.cuda.set_device":
                self.changes.append(
                    f"line {node.lineno}: torch.cuda.set_device(...) → removed (CPU)"
                )
                return ast.copy_location(ast.Pass(), node)
        self.generic_visit(node)
        return node

    def visit_Call(self, node: ast.Call) -> ast.expr:
        self.generic_visit(node)
        target = _dotted_or_resolved(node.func, self.bindings)
        line = node.lineno
        if target == "torch.cuda.device_count":
            self.changes.append(f"line {line}: torch.cuda.device_count() → 1 (one CPU process)")
            return ast.copy_location(ast.Constant(1), node)
        if target.endswith("init_process_group") and target.startswith("torch.distributed"):
            for holder in [*node.args[:1], *(k.value for k in node.keywords if k.arg == "backend")]:
                if isinstance(holder, ast.Constant) and holder.value == "nccl":
                    holder.value = "gloo"
                    self.changes.append(f"line {line}: backend 'nccl' → 'gloo' (CPU)")
        if target.endswith("DistributedDataParallel"):
            kept = [k for k in node.keywords if k.arg not in {"device_ids", "output_device"}]
            if len(kept) != len(node.keywords):
                node.keywords = kept
                self.changes.append(f"line {line}: DDP device_ids/output_device dropped (CPU)")
        if isinstance(node.func, ast.Attribute) and node.func.attr in {"to", "cuda"}:
            arg = node.args[0] if node.args else None
            if node.func.attr == "cuda" or _is_device_arg(arg):
                was = f".{node.func.attr}({ast.unparse(arg) if arg else ''})"
                node.func.attr, node.args, node.keywords = "to", [ast.Constant("cpu")], []
                self.changes.append(f"line {line}: {was} → .to('cpu')")
        return node


def _is_device_arg(arg: ast.expr | None) -> bool:
    """A rank, a device variable, an int, 'cuda…' or torch.device(...): not a dtype.

    >>> _is_device_arg(ast.parse("rank", mode="eval").body)
    True
    >>> _is_device_arg(ast.parse("torch.float16", mode="eval").body)
    False
    """
    if isinstance(arg, ast.Name):
        return True
    if isinstance(arg, ast.Constant):
        return isinstance(arg.value, int) or str(arg.value).startswith("cuda")
    return isinstance(arg, ast.Call) and ast.unparse(arg.func).endswith("device")


def _uses_cuda_or_nccl(tree: ast.AST, bindings: dict[str, str]) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            target = _dotted_or_resolved(node.func, bindings)
            if target.startswith(("torch.cuda.", "torch.distributed.init_process_group")):
                return True
    return False


def _distributed(tree: ast.AST, bindings: dict[str, str]) -> bool:
    """Does the snippet call torch.distributed (it then needs a rendezvous)?"""
    return any(
        isinstance(node, ast.Call)
        and _dotted_or_resolved(node.func, bindings).startswith("torch.distributed.")
        for node in ast.walk(tree)
    )


def _module_roles(tree: ast.AST, bindings: dict[str, str], undefined: set[str]) -> dict[str, str]:
    """Undefined name → 'module' | 'input' | 'module_class', from how the snippet uses it."""
    roles: dict[str, str] = {}
    imports_torch = any(v.split(".")[0] == "torch" for v in bindings.values())
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        target = _dotted_or_resolved(node.func, bindings)
        if target in _MODULE_CONSUMERS:
            mod_pos, in_pos = _MODULE_CONSUMERS[target]
            for pos, role in [(mod_pos, "module"), (in_pos, "input")]:
                if pos is not None and pos < len(node.args):
                    arg = node.args[pos]
                    if isinstance(arg, ast.Name) and arg.id in undefined:
                        roles.setdefault(arg.id, role)
        if (
            imports_torch
            and isinstance(node.func, ast.Name)
            and node.func.id in undefined
            and _CAMEL_RE.match(node.func.id)
            and not node.args
        ):
            roles.setdefault(node.func.id, "module_class")
    return roles


_FIXTURE_CODE = {
    "module": ("tiny_torch_module", "{n} = torch.nn.Linear(4, 2).eval()"),
    "input": ("dummy_input", "{n} = torch.randn(1, 4)"),
    "module_class": (
        "tiny_module_class",
        "class {n}(torch.nn.Module):\n"
        "    def __init__(self):\n"
        "        super().__init__()\n"
        "        self.net = torch.nn.Linear(4, 2)\n\n"
        "    def forward(self, x):\n"
        "        return self.net(x)",
    ),
}
_ROLE_REASON = {
    "module": "`{n}` is used as a torch module but never defined",
    "input": "`{n}` is used as an example input but never defined",
    "module_class": "`{n}()` is a model class the snippet never defines",
}


def _onnx_check(tree: ast.AST, bindings: dict[str, str], has_ort: bool) -> str | None:
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call):
            continue
        if _dotted_or_resolved(node.func, bindings) != "torch.onnx.export" or len(node.args) < 3:
            continue
        model, inp, path = node.args[:3]
        if not (isinstance(model, ast.Name) and isinstance(inp, ast.Name)):
            continue
        if not (isinstance(path, ast.Constant) and isinstance(path.value, str)) or not has_ort:
            continue
        dynamic = any(k.arg == "dynamic_axes" for k in node.keywords)
        return textwrap.dedent(
            f"""
            import json as _j, numpy as _np, onnxruntime as _ort, torch as _t
            _sess = _ort.InferenceSession({path.value!r}, providers=["CPUExecutionProvider"])
            _x = {inp.id} if isinstance({inp.id}, _t.Tensor) else {inp.id}[0]
            _diffs = []
            for _b in ([_x, _t.cat([_x] * 3)] if {dynamic} else [_x]):
                _got = _sess.run(None, {{_sess.get_inputs()[0].name: _b.numpy()}})[0]
                with _t.no_grad():
                    _ref = {model.id}(_b).numpy()
                _diffs.append(float(_np.max(_np.abs(_got - _ref))))
            print({CHECK_MARKER!r} + _j.dumps({{"check": "onnxruntime", "batches": len(_diffs),
                  "max_abs_diff": max(_diffs), "ok": max(_diffs) < 1e-4}}))
            """
        )
    return None


def complete_snippet(
    tree: ast.Module,
    bindings: dict[str, str],
    undefined: list[str],
    *,
    has_onnxruntime: bool,
    source: str | None = None,
) -> Completion:
    """Choose fixtures for what the snippet lacks; return the program to run and what is left.

    `source` is the code `tree` was parsed from: the body runs as written unless a substitution
    rewrote the tree (then it is the tree unparsed, with a map back to the snippet's lines).
    `tree` itself is left as it is."""
    tree = copy.deepcopy(tree)
    missing = set(undefined)
    fixtures: list[Fixture] = []
    pre_imports: list[str] = []
    for name in sorted(missing & set(bindings)):  # a module used without import: `implicit_imports`
        pre_imports.append(f"import {name}")
        fixtures.append(
            Fixture(
                name="missing_import",
                code=f"import {name}",
                provides=[name],
                reason=f"`{name}` is used as a module but never imported",
            )
        )
        missing.discard(name)
    roles = _module_roles(tree, bindings, missing)
    if roles and "torch" not in pre_imports:
        pre_imports.append("import torch")
    for name, role in sorted(roles.items(), key=lambda kv: kv[1] != "module_class"):
        fname, template = _FIXTURE_CODE[role]
        fixtures.append(
            Fixture(
                name=fname,
                code=template.format(n=name),
                provides=[name],
                reason=_ROLE_REASON[role].format(n=name),
            )
        )
        missing.discard(name)
    substitutions: list[str] = []
    if _uses_cuda_or_nccl(tree, bindings) and not _cuda_here():
        rewriter = _CpuDistributed(bindings)
        tree = ast.fix_missing_locations(rewriter.visit(tree))
        substitutions = list(dict.fromkeys(rewriter.changes))
    if _distributed(tree, bindings) and not _cuda_here():
        env = "\n".join(
            f'os.environ.setdefault("{k}", "{v}")'
            for k, v in [
                ("MASTER_ADDR", "127.0.0.1"),
                ("MASTER_PORT", "29500"),
                ("RANK", "0"),
                ("WORLD_SIZE", "1"),
            ]
        )
        fixtures.append(
            Fixture(
                name="cpu_distributed",
                code="import os\n" + env,
                reason="no CUDA here: one CPU process, gloo, rendezvous on the "
                "sandbox's private loopback",
            )
        )
    check = _onnx_check(tree, bindings, has_onnxruntime)
    setup = "\n".join(
        [*dict.fromkeys(pre_imports), *(f.code for f in fixtures if f.name != "missing_import")]
    )
    lines: dict[int, int] = {}
    if substitutions or source is None:
        body = ast.unparse(tree)
        lines = _line_map(tree, body)
    else:
        body = source
    parts = ["# --- fixtures (declared by kgqa) ---", setup, "# --- snippet ---", body]
    if check:
        parts += ["# --- check ---", check.strip()]
    head = setup + "\n" if setup else ""
    completion = Completion(
        program="\n".join(p for p in parts if p) + "\n",
        setup=head,
        body=head + (body if body.endswith("\n") else body + "\n"),
        after=check.strip() + "\n" if check else None,
        offset=head.count("\n"),
        lines=lines,
        fixtures=fixtures,
        substitutions=substitutions,
        checks=["onnxruntime output vs torch"] if check else [],
        missing=sorted(missing),
    )
    completion._tree = tree
    return completion
