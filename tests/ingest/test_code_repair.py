"""Indentation repair and language detection on hand-made, flattened code."""

from __future__ import annotations

import time

import pytest

from ingest.code_repair import (
    compiles,
    detect_language,
    repair_indentation,
    strip_magics,
    transcript_input,
)

FLAT_DDP = """import torch.distributed as dist
def init(rank, world_size):
dist.init_process_group("nccl", rank=rank, world_size=world_size)
model = make(rank)
return model
if __name__ == "__main__":
import torch.multiprocessing as mp
mp.spawn(init, args=(2,), nprocs=2)"""

EXPECTED_DDP = """import torch.distributed as dist
def init(rank, world_size):
    dist.init_process_group("nccl", rank=rank, world_size=world_size)
    model = make(rank)
    return model
if __name__ == "__main__":
    import torch.multiprocessing as mp
    mp.spawn(init, args=(2,), nprocs=2)
"""


def test_function_body_and_main_block_recovered() -> None:
    result = repair_indentation(FLAT_DDP)
    assert result.repaired
    assert result.code == EXPECTED_DDP
    assert "5 of 8" in result.detail


def test_code_after_return_leaves_the_function() -> None:
    result = repair_indentation("def f(x):\ny = x + 1\nreturn y\nprint(f(1))")
    assert result.code.splitlines() == ["def f(x):", "    y = x + 1", "    return y", "print(f(1))"]


def test_try_except_else_finally_and_loop_control() -> None:
    flat = """for i in range(3):
try:
if i:
continue
x = 1 / i
except ZeroDivisionError:
break
finally:
pass
print(i)"""
    result = repair_indentation(flat)
    assert result.repaired
    compile(result.code, "<t>", "exec")
    lines = result.code.splitlines()
    assert lines[1] == "    try:"
    assert lines[3] == "            continue"
    assert lines[5] == "    except ZeroDivisionError:"
    assert lines[7] == "    finally:"


def test_multiline_call_is_one_statement() -> None:
    flat = "def f():\nreturn g(1,\n2,\n3)\nf()"
    result = repair_indentation(flat)
    assert result.code.splitlines()[:2] == ["def f():", "    return g(1,"]
    assert result.code.splitlines()[-1] == "f()"


def test_valid_code_is_left_alone() -> None:
    code = "def f():\n  return 1\n"
    result = repair_indentation(code)
    assert not result.repaired
    assert result.code == code


def test_shell_is_not_repaired() -> None:
    result = repair_indentation("torchrun --nproc_per_node=4 train.py")
    assert not result.repaired
    assert "not Python" in result.detail


def test_thirty_lines_repair_under_50_ms() -> None:
    block = ["def f{i}(a, b):", "c = a + b", "if c > 0:", "return c", "return -c"]
    flat = "\n".join(line.format(i=i) for i in range(6) for line in block)
    assert len(flat.splitlines()) == 30
    start = time.perf_counter()
    result = repair_indentation(flat)
    elapsed = time.perf_counter() - start
    assert result.repaired
    compile(result.code, "<t>", "exec")
    assert elapsed < 0.05, f"{elapsed * 1000:.1f} ms"


@pytest.mark.parametrize(
    ("code", "label", "expected"),
    [
        ('torch.onnx.export(model, x, "m.onnx",\ninput_names=["input"])', "bash", "python"),
        ("torchrun --nproc_per_node=4 train.py", None, "bash"),
        ("pip install -U peft", "python", "bash"),
        ("import os\nprint(os.getcwd())", None, "python"),
        (FLAT_DDP, "python", "python"),
        ("name: demo\nsteps: 3", "yaml", "yaml"),
    ],
)
def test_detect_language(code: str, label: str | None, expected: str) -> None:
    assert detect_language(code, label) == expected


@pytest.mark.parametrize(
    ("code", "label", "expected"),
    [
        # data files: by label, and without one where the text can only be that
        ('{\n  "model": "m",\n  "stream": true\n}', "bash", "json"),
        ('{"model": "m", // the name\n ...}', "json", "json"),
        ('{"a": 1}\n{"a": 2}', None, "json"),
        ('[project]\nname = "demo"\n\n[tool.x]\nfast = true', None, "toml"),
        ('FROM python:3.11\nRUN pip install x\nCMD ["python"]', None, "dockerfile"),
        ("RUN pip install x", "Dockerfile", "dockerfile"),
        ("model:\n  name: m\n  layers: 2", None, "yaml"),
        ("x: 1", "yml", "yaml"),
        # transcripts: under any label
        ("$ pip --version\npip 24.0 from /usr/lib", "bash", "console"),
        ("(venv) user@box:~/app$ ls\nREADME.md", None, "console"),
        (">>> 1 + 1\n2", "python", "pycon"),
        (">>> import os\n>>> os.sep\n'/'", None, "pycon"),
        ('def f():\n    """\n    >>> f()\n    1\n    """\n    return 1', "python", "python"),
        # shell labels keep shell, unless the text is plainly Python or output
        ("X='{\"a\": 1}'", "sh", "bash"),
        ("cd build && make", "shell", "bash"),
        ("import torch\nx = torch.ones(2)", "bash", "python"),
        ("usage: tool [-h] {run,ls} ...\n\noptions:\n  -h, --help  show help", "bash", "output"),
        # a Python label wins over detection where the text is not shell
        ("def f(x):\n    return x +", "python", "python"),
        ("async for x in stream():\n    print(x)", "python", "python"),
        ("%timeit f(x)\ny = f(2)", "python", "python"),
        # output, text, and languages kgqa does not check
        ("step  loss   acc\n1     0.52   0.81\n2     0.47   0.84", None, "output"),
        ("2024-05-01 10:00:01 INFO loading\n2024-05-01 10:00:09 INFO ready", "text", "output"),
        ("Traceback (most recent call last):\n  File \"x.py\"\nKeyError: 'a'", None, "output"),
        ("Some words that are neither code nor output.", None, "text"),
        ("just a note", "text", "text"),
        ("fn main() {}", "rust", "rust"),
        ("irm https://x/install.ps1 | iex", "powershell", "powershell"),
    ],
)
def test_detect_kinds(code: str, label: str | None, expected: str) -> None:
    assert detect_language(code, label) == expected


def test_transcript_input_keeps_what_was_typed() -> None:
    console = "$ pip install -U \\\n    peft\nSuccessfully installed peft\n$ echo ok\nok"
    assert transcript_input(console) == ("pip install -U \\\n    peft\necho ok\n", 2)
    session = ">>> def f(x):\n...     return 2 * x\n...\n>>> f(2)\n4"
    assert transcript_input(session) == ("def f(x):\n    return 2 * x\n\nf(2)\n", 1)


def test_top_level_await_and_magics_are_python() -> None:
    assert compiles("result = await client.get()")
    unmagic, magics = strip_magics("x = 1\n!pip install jax\n%timeit -n3 f(x)")
    assert magics == ["!pip", "%timeit"]
    assert compiles(unmagic)
