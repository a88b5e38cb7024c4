"""Static levels: imports, names, network needs, signature binding, shell commands."""

from __future__ import annotations

import ast
import importlib.metadata
import os
import sys
from collections.abc import Iterator

import pytest
from needs import missing_modules, needs

from qa.snippets import shell
from qa.snippets.probe import SignatureProbe
from qa.snippets.sandbox import SandboxResult
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


def test_network_needs_follow_names_bare_ids_and_what_the_snippet_writes() -> None:
    code = (
        "import requests\nfrom transformers import AutoModel, AutoTokenizer, pipeline\n"
        "from datasets import load_dataset\n"
        'model_id = "Qwen/Qwen2.5-3B-Instruct"\n'
        "m = AutoModel.from_pretrained(model_id)\n"  # a name bound to a hub id
        't = AutoTokenizer.from_pretrained("gpt2")\n'  # a hub id without an org
        "m2 = AutoModel.from_pretrained(args.model)\n"  # named at run time
        'ds = load_dataset("csv", data_files="train.csv")\n'  # a local builder
        'm.save_pretrained("out")\nAutoModel.from_pretrained("out")\n'  # written first
        "AutoModel.from_pretrained(save_dir)\n"  # a directory
        'requests.get("http://localhost:8000/v1/models")\n'  # a service, not the network
        'clf = pipeline("sentiment-analysis")\n'  # the task's default model
    )
    tree = ast.parse(code)
    assert network_needs(tree, import_bindings(tree)) == [
        "hub model 'Qwen/Qwen2.5-3B-Instruct' (transformers.AutoModel.from_pretrained, line 5)",
        "hub model 'gpt2' (transformers.AutoTokenizer.from_pretrained, line 6)",
        "hub model named by `args.model` (transformers.AutoModel.from_pretrained, line 7)",
        "hub model: the default model for the task (transformers.pipeline, line 13)",
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
    assert apis.reason.startswith(
        'line 2: `lora = LoraConfig(r=8, lora_alpah=16, task_type="CAUSAL_LM")` — '
        "peft.LoraConfig() has no keyword argument 'lora_alpah' (did you mean 'lora_alpha'?) "
        f"(peft {importlib.metadata.version('peft')} here): the call does not bind"
    ), apis.reason
    assert check.status.value == "failed"


def test_split_commands() -> None:
    assert split_commands("# comment\nA=1 python -m pip --version | grep pip; ls -l") == [
        ["python", "-m", "pip", "--version"],
        ["grep", "pip"],
        ["ls", "-l"],
    ]


def test_split_commands_reads_shell_structure() -> None:
    code = (
        "docker run -it \\\n  --rm img 2>&1 > log.txt\n"  # a continued line, redirections
        "curl -d '{\n  \"a\": 1\n}' http://x | python3 -c 'import sys'\n"  # a quote over lines
        "cat <<EOF > conf.ini\n--not-a-command\nEOF\n"  # a heredoc body
        "if [ -f x ]; then echo yes; fi\n"  # keywords
        "setup() { make -j4; }\n"  # a function definition
        "(cd build && make) &\n"  # a subshell, in the background
        "export PATH=$(dirname $(which python)):$PATH\n"  # command substitutions
    )
    assert split_commands(code) == [
        ["docker", "run", "-it", "--rm", "img"],
        ["curl", "-d", '{\n  "a": 1\n}', "http://x"],
        ["python3", "-c", "import sys"],
        ["cat"],
        ["[", "-f", "x", "]"],
        ["echo", "yes"],
        ["make", "-j4"],
        ["cd", "build"],
        ["make"],
        ["export", "PATH=__substitution__:$PATH"],
    ]


def test_command_options_checked_against_help() -> None:
    ok = check_command_line(["ls", "-l", "--all"])
    assert ok.ok, ok
    bad = check_command_line(["ls", "--no-such-option-kgqa"])
    assert bad.found and bad.unknown_options == ["--no-such-option-kgqa"]
    assert bad.verdict == "failed"
    assert "`ls --no-such-option-kgqa --help` says: ls: unrecognized option" in bad.reason
    missing = check_command_line(["no-such-program-kgqa", "--x"])
    assert not missing.found and "not installed" in missing.reason
    assert missing.verdict == "not checked"


@pytest.mark.parametrize(
    ("tokens", "verdict", "said"),
    [
        (["cd", "build"], "builtin", "cd is a shell builtin: not checked"),
        (["source", ".venv/bin/activate"], "builtin", "source is a shell builtin: not checked"),
        (["no-such-tool-kgqa", "run"], "not checked", "no-such-tool-kgqa is not installed here"),
        (["./install.sh", "--local"], "not checked", "./install.sh is a file of the project"),
        (["$LAUNCHER", "--fast"], "not checked", "the program is a variable"),
        (
            ["python3", "-m", "no_such_pkg_kgqa.serve", "--model-path", "m"],
            "not checked",
            "the module no_such_pkg_kgqa.serve is not installed here: its arguments are not",
        ),
        (
            ["python3", "-m", "json.tool", "--sort-keys", "a.json"],
            "not checked",
            "--sort-keys go to the module json.tool: not checked",
        ),
        (
            ["python3", "train.py", "--epochs", "3"],
            "not checked",
            "--epochs go to the script train.py: not checked",
        ),
        (["python3", "-u", "-m", "json.tool", "a.json"], "ok", "python3 accepts -u, -m"),
        (
            ["python3", "-c", "print(1"],
            "failed",
            "python3 -c: the code does not parse: SyntaxError: '(' was never closed",
        ),
        (["sudo", "-E", "ls", "-l"], "ok", "ls accepts -l"),
    ],
)
def test_commands_that_cannot_be_checked_say_why(
    tokens: list[str], verdict: str, said: str
) -> None:
    check = check_command_line(tokens)
    assert check.verdict == verdict, check
    assert said in check.reason


def test_subcommand_options_and_letter_clusters_read_the_right_help() -> None:
    git = check_command_line(["git", "clone", "--recursive", "-q", "https://x/y"])
    assert git.ok and git.reason == "git clone accepts --recursive, -q"
    pip = check_command_line(["pip", "install", "-U", "-r", "r.txt", "--no-build-isolation"])
    assert pip.ok, pip.reason
    curl = check_command_line(["curl", "--proto", "=https", "--tlsv1.2", "-sSfL", "https://x"])
    assert curl.ok, curl.reason  # from `curl --help all`: `curl --help` lists a few options
    assert check_command_line(["make", "-j8"]).ok  # a short option with its value attached


def test_options_no_help_can_vouch_for_are_not_checked() -> None:
    shell = check_command_line(["sh", "-s", "--", "-y"])  # dash has no --help at all
    assert shell.verdict == "not checked"
    assert "`sh --help` lists no options" in shell.reason
    # after a URL, an option is not put to curl alone, and curl's help may not list it
    curl = check_command_line(["curl", "https://x", "--no-such-option-kgqa"])
    assert curl.verdict == "not checked"
    assert curl.reason == (
        "curl: --no-such-option-kgqa not in its --help and after 'https://x', which may take it: "
        "not checked"
    )


@pytest.fixture
def fresh_help_caches() -> Iterator[None]:
    shell._read_help.cache_clear()
    shell._rejection.cache_clear()
    yield
    shell._read_help.cache_clear()
    shell._rejection.cache_clear()


@pytest.mark.usefixtures("fresh_help_caches")
def test_an_option_missing_from_a_help_that_may_be_partial_is_not_checked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # No program here both lists only some of its options and takes an unknown one without a
    # word: a fake sandbox plays one (`ls` is only the name found on the PATH).
    def sandbox(argv: list[str], **_: object) -> SandboxResult:
        return SandboxResult(
            returncode=0, stdout="Usage: ls [OPTION]\n  -a   all\n", network="none"
        )

    monkeypatch.setattr(shell, "run_sandboxed", sandbox)
    check = check_command_line(["ls", "-a", "--colour"])
    assert check.verdict == "not checked"
    assert check.reason == (
        "ls: --colour not in its --help, which may not list every option: not checked"
    )


def test_a_rust_cli_rejecting_an_option_is_evidence(monkeypatch: pytest.MonkeyPatch) -> None:
    # ruff comes with the test tools (kgqa[dev]), next to this interpreter
    bin_dir = os.path.dirname(sys.executable)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}")
    check = check_command_line(["ruff", "check", "--no-such-option-kgqa", "src"])
    assert check.verdict == "failed"
    assert "error: unexpected argument '--no-such-option-kgqa' found" in check.reason


def test_yaml_is_parsed() -> None:  # PyYAML comes with llama-index-core, a dependency
    check = check_code("name: demo\nsteps: 3", "yaml")
    assert check.language == "yaml"
    assert check.status.value == "passed"
    assert check.detail.splitlines()[-1] == "syntax: ok — valid YAML (a mapping of 2 key(s))"
