"""Static levels: imports, names, network needs, signature binding, shell commands."""

from __future__ import annotations

import ast
import importlib.metadata
from collections.abc import Iterator

import pytest
from needs import missing_modules, needs

from qa.snippets.probe import SignatureProbe
from qa.snippets.shell import check_command_line, split_commands
from qa.snippets.static import (
    ApiCall,
    api_calls,
    check_imports,
    implicit_imports,
    import_bindings,
    network_needs,
    undefined_names,
)
from qa.snippets.validate import check_code


@pytest.fixture(scope="module")
def probe() -> Iterator[SignatureProbe]:
    p = SignatureProbe()
    yield p
    p.close()


def test_calls_resolve_through_aliases() -> None:
    tree = ast.parse(
        "import torch.distributed as dist\nfrom peft import LoraConfig as LC\n"
        "dist.init_process_group('gloo', rank=0)\ncfg = LC(r=8, lora_alpha=16)\nlocal(1)"
    )
    calls = api_calls(tree, import_bindings(tree))
    assert [(c.target, c.n_positional, c.keywords) for c in calls] == [
        ("torch.distributed.init_process_group", 1, ["rank"]),
        ("peft.LoraConfig", 0, ["r", "lora_alpha"]),
    ]


def test_undefined_names_and_implicit_imports() -> None:
    tree = ast.parse("y = json.dumps(model)\nfor i in range(2):\n    z = i\nprint(YourModel())")
    undefined = undefined_names(tree)
    assert undefined == ["YourModel", "json", "model"]
    assert implicit_imports(tree, undefined) == {"json": "json"}


def test_network_needs_hub_ids_datasets_and_urls() -> None:
    code = (
        "from transformers import AutoModel\nfrom datasets import load_dataset\n"
        "import urllib.request\n"
        'm = AutoModel.from_pretrained("org/some-model")\n'
        'local = AutoModel.from_pretrained("./checkpoint")\n'
        'ds = load_dataset("imdb", split="train")\n'
        'urllib.request.urlopen("https://example.com/x")\n'
    )
    tree = ast.parse(code)
    needs = network_needs(tree, import_bindings(tree))
    assert needs == [
        "hub model 'org/some-model' (transformers.AutoModel.from_pretrained, line 4)",
        "dataset 'imdb' (datasets.load_dataset, line 6)",
        "URL 'https://example.com/x' (urllib.request.urlopen, line 7)",
    ]


def test_imports_found_with_versions_and_missing_named() -> None:
    checks = check_imports(ast.parse("import pydantic\nimport no_such_module_kgqa\nimport json"))
    by_name = {c.module: c for c in checks}
    assert by_name["pydantic"].found
    assert by_name["pydantic"].version == importlib.metadata.version("pydantic")
    assert not by_name["no_such_module_kgqa"].found
    assert by_name["json"].found and by_name["json"].version is None


def test_signature_probe_names_a_misspelled_argument(probe: SignatureProbe) -> None:
    kw = ["follow_symlinks"]
    good = probe.check(ApiCall(target="shutil.copyfile", line=1, n_positional=2, keywords=kw))
    assert good.exists and good.binds
    typo = ["follow_symlink"]
    bad = probe.check(ApiCall(target="shutil.copyfile", line=3, n_positional=2, keywords=typo))
    assert not bad.binds
    assert "'follow_symlink' (did you mean 'follow_symlinks'?)" in bad.reason
    gone = probe.check(ApiCall(target="shutil.copyfil", line=1, n_positional=2))
    assert not gone.exists
    assert "has no attribute 'copyfil'" in gone.reason
    too_many = probe.check(ApiCall(target="shutil.copyfile", line=1, n_positional=3))
    assert not too_many.binds and "positional" in too_many.reason
    lazy = probe.check(ApiCall(target="json.dumps", line=1, n_positional=1, keywords=["anything"]))
    assert lazy.binds  # **kw accepts any keyword: nothing to name


@needs("torch", missing_modules("peft"))
def test_lora_config_kwargs_checked_against_installed_peft(probe: SignatureProbe) -> None:
    code = (
        "from peft import LoraConfig\n"
        'lora = LoraConfig(r=8, lora_alpah=16, task_type="CAUSAL_LM")\n'
    )
    check = check_code(code, "python", execute=False, probe=probe)
    apis = next(lv for lv in check.levels if lv.level == "apis")
    assert apis.outcome == "failed"
    assert "line 2: peft.LoraConfig() has no keyword argument 'lora_alpah'" in apis.reason
    assert "did you mean 'lora_alpha'" in apis.reason
    assert check.status.value == "failed"


def test_split_commands() -> None:
    assert split_commands("# comment\nA=1 python -m pip --version | grep pip; ls -l") == [
        ["python", "-m", "pip", "--version"],
        ["grep", "pip"],
        ["ls", "-l"],
    ]


def test_command_options_checked_against_help() -> None:
    ok = check_command_line(["ls", "-l", "--all"])
    assert ok.ok, ok
    bad = check_command_line(["ls", "--no-such-option-kgqa"])
    assert bad.found and bad.unknown_options == ["--no-such-option-kgqa"]
    missing = check_command_line(["no-such-program-kgqa", "--x"])
    assert not missing.found and "not installed" in missing.reason


def test_non_code_is_skipped() -> None:
    check = check_code("name: demo\nsteps: 3", "yaml")
    assert check.language == "other"
    assert check.status.value == "skipped"
