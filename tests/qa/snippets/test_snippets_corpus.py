"""End to end on the code of the bundled corpus (cut by hand into tests/qa/data/*.txt).

The ONNX export runs in the sandbox with declared fixtures and its output is compared with
onnxruntime; the flattened DDP example is repaired and run with gloo in one CPU process; the peft
snippet's arguments are checked against the installed peft; the torchrun line is checked as a
command.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from needs import missing_modules, needs

from kg.documents import Snippet, SnippetStatus
from qa.snippets.probe import SignatureProbe
from qa.snippets.validate import (
    SnippetCheck,
    check_code,
    format_snippet_table,
    to_report,
    validate_code,
    validate_snippet,
)

DATA = Path(__file__).parent / "data"
CORPUS = Path(__file__).resolve().parents[3] / "corpus" / "framework-and-tool-selection.txt"


def _needs(*modules: str) -> pytest.MarkDecorator:
    """Snippet libraries (torch, transformers, peft, onnx...): skip locally, fail on CI."""
    return needs("torch", missing_modules(*modules))


def _code(name: str) -> str:
    return (DATA / f"{name}.txt").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def probe() -> Iterator[SignatureProbe]:
    p = SignatureProbe()
    yield p
    p.close()


@pytest.mark.parametrize("name", ["onnx_export", "ddp", "peft_lora", "torchrun"])
def test_test_data_is_verbatim_from_the_corpus(name: str) -> None:
    corpus_lines = set(CORPUS.read_text(encoding="utf-8").splitlines())
    for line in _code(name).splitlines():
        assert any(line in c for c in corpus_lines), line


@pytest.fixture(scope="module")
def onnx_check(probe: SignatureProbe) -> SnippetCheck:
    return check_code(_code("onnx_export"), "bash", probe=probe)


@_needs("torch", "onnx", "onnxruntime", "onnxscript")
def test_onnx_export_runs_and_matches_onnxruntime(onnx_check: SnippetCheck) -> None:
    assert onnx_check.language == "python"  # the page labelled it bash
    assert onnx_check.status is SnippetStatus.PASSED, onnx_check.detail
    assert {f.name for f in onnx_check.fixtures} == {
        "missing_import",
        "tiny_torch_module",
        "dummy_input",
    }
    run = next(lv for lv in onnx_check.levels if lv.level == "run")
    assert "onnxruntime output vs torch on 2 batch size(s)" in run.reason
    assert onnx_check.program is not None and "torch.nn.Linear(4, 2)" in onnx_check.program
    assert onnx_check.sandbox is not None and onnx_check.sandbox.network == "netns"


@_needs("torch")
def test_ddp_is_repaired_and_runs_with_gloo_on_cpu(probe: SignatureProbe) -> None:
    check = check_code(_code("ddp"), "python", probe=probe)
    assert check.repaired
    assert "    return model\nif __name__" in check.code
    assert check.status is SnippetStatus.PASSED, check.detail
    assert "line 4: backend 'nccl' → 'gloo' (CPU)" in check.substitutions
    names = next(lv for lv in check.levels if lv.level == "names")
    assert "`torch` is used as a module but never imported" in names.reason
    assert "`YourModel()` is a model class the snippet never defines" in names.reason


@_needs("peft", "transformers", "datasets")
def test_peft_arguments_checked_and_network_not_run(probe: SignatureProbe) -> None:
    check = check_code(_code("peft_lora"), "python", probe=probe)
    levels = {lv.level: lv for lv in check.levels}
    assert levels["apis"].outcome == "ok"
    assert "peft.LoraConfig with r, lora_alpha, task_type" in levels["apis"].reason
    assert levels["network"].outcome == "skipped"
    assert "hub model 'meta-llama/Llama-3.1-8B'" in levels["network"].reason
    assert "dataset 'imdb'" in levels["network"].reason
    assert check.status is SnippetStatus.SKIPPED
    assert check.sandbox is None  # never run

    typo = check_code(_code("peft_lora").replace("lora_alpha", "lora_alpah"), probe=probe)
    assert typo.status is SnippetStatus.FAILED
    assert "has no keyword argument 'lora_alpah' (did you mean 'lora_alpha'?)" in typo.detail


@_needs("torch")
def test_torchrun_checked_as_a_command_without_training() -> None:
    check = check_code(_code("torchrun"), None)
    assert check.language == "bash"
    assert check.status is SnippetStatus.PASSED, check.detail
    assert "torchrun accepts --nproc_per_node" in check.detail
    bad = check_code("torchrun --nproc_per_nodes=4 train.py", "bash")
    assert bad.status is SnippetStatus.FAILED
    assert "does not accept --nproc_per_nodes" in bad.detail


def test_validate_snippet_returns_a_typed_copy() -> None:
    snippet = Snippet(
        id="snippet:t",
        doc="d.txt",
        start=5,
        end=40,
        language="python",
        raw="def f(x):\nreturn x * 2\nprint(f(21))",
        code="",
    )
    checked = validate_snippet(snippet)
    assert snippet.status is SnippetStatus.UNCHECKED  # the input is not changed
    assert checked.status is SnippetStatus.PASSED, checked.detail
    assert checked.repaired and checked.code.startswith("def f(x):\n    return x * 2")
    assert checked.detail.splitlines()[-1].startswith("run: ok — exit 0")
    report = to_report(checked)
    assert report.status == "passed" and report.code == checked.code
    table = format_snippet_table([checked])
    assert "snippet:t" in table and "d.txt@5" in table and "passed" in table


def test_llm_code_that_raises_fails_with_the_error() -> None:
    checked = validate_code("x = {}\nprint(x['missing'])")
    assert checked.status is SnippetStatus.FAILED
    assert "KeyError: 'missing'" in checked.detail
    assert checked.doc is None
