"""Verdicts a user can trust: `failed` only when the code is wrong.

The snippets in data/verdicts/ were written for these tests: right code that needs a GPU, right
code that needs the hub, illustrations with `...`, code that continues earlier code, and code that
is really broken (a syntax error, a misspelt keyword argument of an installed API, an API the
installed version removed, a call that raises). Each gets the verdict it should, and a failure
says in one line the snippet's line, the error and why it is the code's fault, in every place a
user reads it: the check, the CLI (`kgqa snippets check FILE`), the Answer's `SnippetReport`, the
UI's snippet card. Run limits: a runaway loop is stopped by its CPU budget with a clear reason, a
slow import is not counted against the code.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
from needs import missing_modules, needs

from kg.documents import SnippetStatus
from qa.schema import Answer
from qa.snippets.requires import accelerator_here
from qa.snippets.validate import SnippetCheck, check_code, decisive_reason, to_report, validate_code

REPO = Path(__file__).resolve().parents[3]
DATA = Path(__file__).parent / "data" / "verdicts"
GPU = accelerator_here()

needs_torch = needs("torch", missing_modules("torch"))
needs_stack = needs("torch", missing_modules("torch", "transformers", "peft", "huggingface_hub"))

# file → (status, what the decisive reason says); a GPU changes what GPU code gets
SKIPPED_FOR_GPU = "run: skipped — not run: needs an accelerator: "
CASES: dict[str, tuple[str, str]] = {
    "gpu_tensor_math": ("skipped", SKIPPED_FOR_GPU + "device 'cuda' (line 3)"),
    "gpu_current_accelerator": (
        "skipped",
        SKIPPED_FOR_GPU + "`torch.accelerator.current_accelerator().type` (line 3), "
        "device 'cuda' (line 3)",
    ),
    "gpu_with_cpu_fallback": ("passed", "run: ok — exit 0"),
    "hub_model_by_name": (
        "skipped",
        "run: skipped — not run: needs network: hub model 'Qwen/Qwen2.5-0.5B-Instruct' "
        "(transformers.AutoTokenizer.from_pretrained, line 4)",
    ),
    "hub_pipeline_default_model": (
        "skipped",
        "needs network: hub model: the default model for the task (transformers.pipeline, line 3)",
    ),
    "hub_file_download": (
        "skipped",
        "needs network: hub file 'Qwen/Qwen2.5-0.5B-Instruct' "
        "(huggingface_hub.hf_hub_download, line 3)",
    ),
    "placeholder_arguments": (
        "skipped",
        "not run: an illustration: `...` stands for code left out: LoraConfig(...) (line 3)",
    ),
    "placeholder_after_keywords": (
        "skipped",
        "parse: skipped — an illustration: `...` stands for arguments left out",
    ),
    "placeholder_loop_body": (
        "skipped",
        "not run: an illustration: `...` stands for code left out: "
        "`...` in the body of a for loop (line 6)",
    ),
    "continues_earlier_code": (
        "skipped",
        "needs context: model (read on line 3 before the snippet binds it: it continues "
        "earlier code)",
    ),
    "broken_syntax": (
        "failed",
        "parse: failed — line 4: `print(json.dumps(config, indent=2)` — SyntaxError: '(' was "
        "never closed: Python cannot parse the code",
    ),
    "broken_keyword": (
        "failed",
        "apis: failed — line 3: `config = LoraConfig(r=8, lora_alpah=16, target_modules="
        '["q_proj", "v_proj"])` — peft.LoraConfig() has no keyword argument \'lora_alpah\' '
        "(did you mean 'lora_alpha'?) (peft ",
    ),
    "broken_removed_api": (
        "failed",
        "apis: failed — line 3: `weights = np.zeros(4, dtype=np.float)` — ",
    ),
    "broken_at_run": (
        "failed",
        "run: failed — line 5: `print(layer(x))` — RuntimeError: mat1 and mat2 shapes cannot "
        "be multiplied (4x6 and 8x2) (exit 1 in ",
    ),
    "right_and_runs": ("passed", "run: ok — exit 0"),
}
if GPU:  # the machine has what the code needs: it runs, and passes
    CASES["gpu_tensor_math"] = ("passed", "with this machine's GPU")
    CASES["gpu_current_accelerator"] = ("passed", "with this machine's GPU")


def _code(name: str) -> str:
    return (DATA / f"{name}.txt").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def checks() -> dict[str, SnippetCheck]:
    """Every snippet of the set, checked once (the runs take seconds each)."""
    return {name: check_code(_code(name), "python") for name in CASES}


@needs_stack
@pytest.mark.parametrize("name", list(CASES))
def test_each_snippet_gets_the_verdict_it_should(
    name: str, checks: dict[str, SnippetCheck]
) -> None:
    status, said = CASES[name]
    check = checks[name]
    reason = decisive_reason(check.detail)
    assert check.status.value == status, check.detail
    assert said in reason, reason


@needs_stack
def test_a_skip_for_the_machine_is_decided_before_anything_runs(
    checks: dict[str, SnippetCheck],
) -> None:
    lacking = [
        n for n, (status, _) in CASES.items() if status == "skipped" and not n.startswith("broken")
    ]
    for name in lacking:
        assert checks[name].sandbox is None, name  # not run: nothing to blame on this machine
    for name in ("hub_model_by_name", "hub_pipeline_default_model", "hub_file_download"):
        network = next(lv for lv in checks[name].levels if lv.level == "network")
        assert network.outcome == "skipped" and "none" not in network.reason, network


@needs_stack
def test_a_failure_is_one_line_with_the_line_the_error_and_why(
    checks: dict[str, SnippetCheck],
) -> None:
    why = {
        "broken_syntax": "Python cannot parse the code",
        "broken_keyword": "the call does not bind to the installed signature",
        "broken_removed_api": "the API does not exist in the installed version",
        "broken_at_run": "raised inside torch, called from the snippet's line, with nothing "
        "found that this machine lacks",
    }
    for name, because in why.items():
        reason = decisive_reason(checks[name].detail)
        assert "\n" not in reason and re.match(r"\w+: failed — line \d+: `[^`]+` — ", reason)
        assert because in reason, reason


@needs_stack
def test_the_evidence_reaches_the_answer_json_and_the_ui_card(
    checks: dict[str, SnippetCheck],
) -> None:
    from kg.graph import KnowledgeGraph
    from ui.panels import answer_panel

    reports = []
    for name in ("broken_keyword", "gpu_tensor_math"):
        check = checks[name]
        snippet = validate_code(_code(name), "python")
        assert snippet.status is check.status and snippet.detail == check.detail
        reports.append(to_report(snippet))
    answer = Answer(question="q", answer="a", snippets=reports, backend="graph")
    raw = json.loads(answer.model_dump_json())
    assert raw["snippets"][0]["status"] == "failed"
    assert decisive_reason(raw["snippets"][0]["detail"]) == decisive_reason(
        checks["broken_keyword"].detail
    )
    html = answer_panel(KnowledgeGraph(), answer, "en")
    assert '<div class="kgqa-snippet-why">' in html
    assert "lora_alpah" in html.split('<div class="kgqa-snippet-why">')[1].split("</div>")[0]
    assert "<details" in html  # every level, folded under the one line


@needs_stack
def test_the_cli_prints_the_evidence_line_first(tmp_path: Path) -> None:
    bad = tmp_path / "lora.py"
    bad.write_text(_code("broken_keyword"), encoding="utf-8")
    done = subprocess.run(
        [sys.executable, "-m", "qa.cli", "snippets", "check", str(bad)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
        check=False,
    )
    assert done.returncode == 1, done.stdout + done.stderr
    first = done.stdout.splitlines()[0]
    assert first.startswith(f"{bad}: failed (python) — apis: failed — line 3: `config = ")
    assert "'lora_alpah' (did you mean 'lora_alpha'?)" in first


# -- run limits ----------------------------------------------------------------------------------
SLOW_MODULE = (
    "import time\nstart = time.process_time()\nwhile time.process_time() - start < 4:\n    pass\n"
)
SLOW_IMPORT = f"""import importlib, sys
with open("slow_module.py", "w") as f:  # a module that takes 4 s of CPU to import
    f.write({SLOW_MODULE!r})
sys.path.insert(0, ".")
importlib.import_module("slow_module")  # written here: not a module kgqa could look for
print("imported")
"""


def test_a_slow_import_with_a_quick_body_passes_under_a_tight_cpu_limit() -> None:
    """An import that takes 4 s of CPU, a body that takes none: with 2 s of CPU for the code it
    passes, because imports are timed on their own (the same 4 s in the body would not)."""
    check = check_code(SLOW_IMPORT, "python", cpu_s=2)
    assert check.status is SnippetStatus.PASSED, check.detail
    assert check.sandbox is not None and check.sandbox.cpu_s is not None
    assert check.sandbox.cpu_s >= 4.0  # more CPU than the code was allowed: the import's
    inline = check_code(SLOW_MODULE, "python", cpu_s=2)
    assert inline.status is SnippetStatus.FAILED, inline.detail
    assert "stopped at the CPU limit" in decisive_reason(inline.detail)


@needs_stack
def test_importing_torch_transformers_and_peft_is_not_counted_against_the_code() -> None:
    code = (
        "import torch, transformers, peft\n"
        "from transformers import AutoModelForCausalLM\n"
        "print(torch.ones(3).sum().item())\n"
    )
    check = check_code(code, "python", cpu_s=2)
    assert check.status is SnippetStatus.PASSED, check.detail


def test_a_runaway_loop_fails_at_the_cpu_limit_with_the_reason() -> None:
    check = check_code("total = 0\nwhile True:\n    total += 1\n", "python", cpu_s=2)
    assert check.status is SnippetStatus.FAILED, check.detail
    reason = decisive_reason(check.detail)
    assert reason.startswith("run: failed — stopped at the CPU limit (2 s for the code, imports ")
    assert "it did not end within 2 s of CPU for its own code" in reason
    assert check.sandbox is not None and check.sandbox.cpu_s is not None
    assert check.sandbox.cpu_s <= 3.5  # CPU seconds (its 2, rounded up): idle or busy alike
    assert not check.sandbox.timed_out  # the CPU limit stopped it, not the wall clock
