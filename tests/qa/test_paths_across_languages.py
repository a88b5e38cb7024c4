"""A question in one language about documents in another, on READMEs written for this test: the
thing the question names leads, through its own README, to the thing that answers it, even when
another document shares many more of the question's words; and the answer does not depend on
the interpreter's hash seed."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from store_fixture import article_store

from qa.api import Assistant
from qa.schema import Answer

ROOT = Path(__file__).resolve().parents[2]

TERN = """# Tern

Tern is a PyTorch library for post-training LLMs with simple recipes.

## Recipes

- Tern ships recipes for full fine-tuning, LoRA and QLoRA.
- Tern recipes run on one GPU or many.
- Tern configs are YAML files you can override from the command line.

## Community

- Vortex for low memory optimizers in our single-device recipes.
- Weights & Biases for logging metrics during training.
"""

VORTEX = """# Vortex

Vortex is a library of k-bit quantization kernels for PyTorch.

- 8-bit optimizers use block-wise quantization to keep 32-bit quality at a fraction of the
  memory.
- LLM.int8() halves the memory needed for inference.
- Fine-tuning: train LLMs 2× faster with 70% less VRAM.
- Inference runs 1.5x faster in the Vortex server.
"""

# a Chinese README that shares the question's Chinese words (优化器, 显存, 单卡) but never
# names Tern
KESTREL = """# Kestrel

Kestrel 是一个大模型微调框架。

## 更新日志

- 我们支持了 Muon 优化器。
- 我们支持了 BAdam 优化器，单卡即可训练。
- 我们支持了 GaLore 优化器，显存占用更低。
- 我们支持了 APOLLO 优化器。
- 我们支持了 Adam-mini 优化器，显存更省。
- 我们支持了 Lion 优化器的低内存版本。
- 我们支持了 8-bit 优化器的单卡配方。
- 新的低显存配方：单卡 24GB 即可微调 8B 模型。
- 低内存优化器配方已集成到命令行。
- 我们针对 LLaMA 和 Qwen 模型支持了 Vortex 的 LoRA 训练加速。
- 请使用 use_vortex: true 参数启用 Vortex 优化。
"""

FILES = {"tern-README.md": TERN, "vortex-README.md": VORTEX, "kestrel-README_zh.md": KESTREL}
QUESTION = (
    "Tern 在单卡上省显存的配方里用的低内存优化器出自哪个库？它的 8-bit 版优化器靠什么做到省显存？"
)


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return article_store(tmp_path_factory, FILES)


def test_the_named_things_own_readme_leads_to_the_answer(
    store: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assistant = Assistant.open(store)
    followed: list[str | None] = []
    bridge = assistant.evidence.bridge

    def spy(*args: Any) -> str | None:
        followed.append(bridge(*args))
        return followed[-1]

    monkeypatch.setattr(assistant.evidence, "bridge", spy)
    answer = assistant.ask(QUESTION)
    # the edge followed is Tern's own (its Community list names Vortex), not the Chinese
    # README that repeats the question's words
    assert followed == ["library:vortex"]
    assert answer.recommendations and answer.recommendations[0].name == "Vortex", answer.answer
    assert "block-wise" in answer.answer, answer.answer


def test_the_answer_does_not_depend_on_the_hash_seed(store: Path) -> None:
    questions = [
        QUESTION,
        "Tern's recipes use one quantization library: which one, and how does its 8-bit "
        "optimizer save memory?",
    ]
    answers: dict[str, list[str]] = {q: [] for q in questions}
    for seed in ("1", "2", "3"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        for question in questions:
            command = ["ask", question, "--store", str(store), "--json", "--no-dense"]
            done = subprocess.run(
                [sys.executable, "-m", "qa.cli", *command],
                cwd=ROOT,
                env=env,
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert done.returncode == 0, done.stderr
            answers[question].append(Answer.model_validate_json(done.stdout).answer)
    for question, texts in answers.items():
        assert len(set(texts)) == 1, (question, texts)


def test_a_question_in_two_parts_gets_the_setting_and_both_claimed_amounts(store: Path) -> None:
    """ "该写哪个参数" asks for a setting (nothing to recommend), and "能提速多少、节省多少显存"
    for two amounts: the sentence that states both comes before one that states only the speed."""
    answer = Assistant.open(store).ask(
        "在 Kestrel 中启用 Vortex 加速，配置里该写哪个参数？"
        "Vortex 的文档说它能提速多少、节省多少显存？"
    )
    assert answer.recommendations == [], answer.answer
    assert "use_vortex: true" in answer.answer, answer.answer
    assert "2× faster with 70% less VRAM" in answer.answer, answer.answer


def test_what_a_named_things_readme_leads_to_answers_a_question_that_asks_which_then_of_it(
    store: Path,
) -> None:
    """Asked "…: which one, and …its…?", the question wants the thing the named README
    leads to: that thing leads the answer, with its own sentence for the second part."""
    answer = Assistant.open(store, dense=False).ask(
        "Tern's README points to a library of low-memory optimizers: which one, and how does "
        "its 8-bit optimizer keep 32-bit quality?"
    )
    assert answer.recommendations and answer.recommendations[0].name == "Vortex", answer.answer
    assert "block-wise" in answer.answer, answer.answer
