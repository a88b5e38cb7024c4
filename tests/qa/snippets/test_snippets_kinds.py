"""Each kind of block a document holds, checked as what it is: data files parsed, transcripts
checked by what was typed, output and other languages left alone with the reason, and shell
commands that cannot be checked said to be "not checked" (and why), never failed.

The snippets are written for these tests.
"""

from __future__ import annotations

import sys

import pytest
from needs import missing_modules, needs

from kg.documents import SnippetStatus
from qa.snippets.store_check import snippet_environment
from qa.snippets.validate import SnippetCheck, check_code, decisive_reason

needs_torch = needs("torch", missing_modules("torch"))


def _decisive(check: SnippetCheck) -> str:
    return decisive_reason(check.detail)


# -- data files ----------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("code", "label", "language", "status", "reason"),
    [
        (
            '{\n  "model": "local",\n  "stream": true\n}',
            "json",
            "json",
            "passed",
            "syntax: ok — valid JSON (a mapping of 2 key(s))",
        ),
        (
            '{\n  "model": "local",\n  "stream": true\n}',
            "bash",  # the page said bash: not a failing bash program `{`
            "json",
            "passed",
            "syntax: ok — valid JSON (a mapping of 2 key(s))",
        ),
        (
            '{\n  "model": "local"\n  "stream": true\n}',
            "json",
            "json",
            "failed",
            "syntax: failed — line 3: `\"stream\": true` — invalid JSON: Expecting ',' "
            "delimiter (line 3, column 3): no JSON parser reads it",
        ),
        (
            '{\n  "model": "local",  // any name\n  "key": <your-key>,\n  ...\n}',
            "json",
            "json",
            "skipped",
            "syntax: skipped — not strict JSON as written (comments, '...' elisions, "
            "<placeholders> or trailing commas), well-formed without them: not checked further",
        ),
        (
            '[project]\nname = "demo"\n\n[tool.demo]\nworkers = 4\n',
            "toml",
            "toml",
            "passed",
            "syntax: ok — valid TOML (2 table(s), 0 top-level key(s))",
        ),
        (
            '[project]\nname = "demo\n',
            "toml",
            "toml",
            "failed",
            "syntax: failed — line 2: `name = \"demo` — invalid TOML: Illegal character '\\n' "
            "(at line 2, column 13): no TOML parser reads it",
        ),
        (
            "FROM python:3.11-slim\n# deps\nRUN pip install --no-cache-dir \\\n    uvicorn\n"
            'CMD ["uvicorn", "app:app"]\n',
            None,
            "dockerfile",
            "passed",
            "syntax: ok — 3 Dockerfile instruction(s), all known; the commands of RUN run inside "
            "the image: not checked",
        ),
        (
            "FROM python:3.11-slim\nCOPYY . /app\n",
            "dockerfile",
            "dockerfile",
            "failed",
            "syntax: failed — line 2: unknown Dockerfile instruction 'COPYY' (did you mean "
            "COPY?): docker build rejects it",
        ),
        (
            "RUN apt-get update\n",
            "Dockerfile",
            "dockerfile",
            "passed",
            "syntax: ok — 1 Dockerfile instruction(s), all known; a fragment (no FROM); the "
            "commands of RUN run inside the image: not checked",
        ),
    ],
)
def test_data_files_are_parsed(
    code: str, label: str | None, language: str, status: str, reason: str
) -> None:
    check = check_code(code, label)
    assert (check.language, check.status.value) == (language, status), check.detail
    assert _decisive(check) == reason


def test_yaml_is_parsed_with_pyyaml() -> None:  # PyYAML comes with llama-index-core
    good = check_code("model:\n  name: local\n  layers: [1, 2]\n", "yaml")
    assert good.status is SnippetStatus.PASSED
    assert _decisive(good) == "syntax: ok — valid YAML (a mapping of 1 key(s))"
    bad = check_code("model:\n  name: local\n layers: 2\n", "yml")
    assert bad.status is SnippetStatus.FAILED
    assert _decisive(bad).startswith("syntax: failed — line 3: `layers: 2` — invalid YAML: ")
    assert "(line 3, column 2)" in _decisive(bad)
    tagged = check_code("Bucket:\n  Name: !Ref BucketName\n", "yaml")  # a tag needs no meaning
    assert tagged.status is SnippetStatus.PASSED, tagged.detail
    template = check_code("{{- if .Values.web -}}\nkind: Service\n{{- end }}\n", "yaml")
    assert template.status is SnippetStatus.SKIPPED
    assert "a template ({{ }} placeholders)" in _decisive(template)


def test_yaml_without_a_parser_is_skipped(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "yaml", None)  # as if PyYAML were not installed
    check = check_code("model:\n  name: local\n", "yaml")
    assert check.status is SnippetStatus.SKIPPED
    assert _decisive(check) == (
        "syntax: skipped — not checked: no YAML parser here (PyYAML is not installed)"
    )


def test_a_data_label_on_what_is_no_such_file_is_read_from_the_text() -> None:
    command = check_code("curl -s http://localhost:8080/v1/models\n", "json")
    assert command.language == "bash", command.detail
    compose = check_code("services:\n  web:\n    image: nginx\n", "dockerfile")
    assert compose.language == "yaml", compose.detail
    windows = check_code("# escape=`\nFROM mcr.microsoft.com/windows\nRUN dir `\n  && echo ok\n")
    assert windows.status is SnippetStatus.PASSED, windows.detail


# -- transcripts ---------------------------------------------------------------------------------
def test_a_console_transcript_is_checked_by_its_commands_only() -> None:
    code = "$ ls -l /tmp\ntotal 0\ndrwx------ 2 root root 40 Jan  1 tmp.x\n$ cd /tmp\n"
    check = check_code(code, "console")
    assert check.language == "console"
    assert check.status is SnippetStatus.PASSED, check.detail
    levels = {lv.level: lv.reason for lv in check.levels}
    assert levels["transcript"] == (
        "a console session: 2 line(s) typed after $ prompts are checked, 2 output line(s) are not"
    )
    assert levels["command"] == (
        "ls accepts -l; cd is a shell builtin: not checked (checked as a command, not run)"
    )


def test_a_python_session_runs_what_was_typed() -> None:
    code = ">>> total = sum(\n...     range(4))\n>>> total\n6\n>>> print('done')\ndone\n"
    check = check_code(code, "python")
    assert check.language == "pycon"
    assert check.status is SnippetStatus.PASSED, check.detail
    assert check.code == code  # shown as the session it was
    assert check.levels[1].reason == (
        "a Python session: 4 line(s) typed after >>> / ... prompts are checked, 2 output line(s) "
        "are not"
    )
    assert _decisive(check).startswith("run: ok — exit 0")


# -- not code ------------------------------------------------------------------------------------
@pytest.mark.parametrize(
    ("code", "label", "reason"),
    [
        (
            "epoch  loss    acc\n1      0.693   0.51\n2      0.412   0.83\n",
            None,
            "not checked: a table of numbers (program output), not code",
        ),
        (
            "[2024-05-01 10:00:01] INFO loading weights\n[2024-05-01 10:00:07] INFO ready\n",
            "text",
            "not checked: a log (program output), not code",
        ),
        (
            "Traceback (most recent call last):\n  File \"run.py\", line 3\nKeyError: 'x'\n",
            "console",
            "not checked: a Python traceback (program output), not code",
        ),
        ("Thanks to everyone who helped.\n", None, "not checked: plain text, not recognised"),
        (
            'fn main() { println!("hi"); }\n',
            "rust",
            "not checked: rust is not a language kgqa checks",
        ),
        (
            "irm https://example.com/install.ps1 | iex\n",
            "powershell",
            "not checked: powershell is not a language kgqa checks",
        ),
    ],
)
def test_output_text_and_other_languages_are_not_checked(
    code: str, label: str | None, reason: str
) -> None:
    check = check_code(code, label)
    assert check.status is SnippetStatus.SKIPPED, check.detail
    assert _decisive(check).startswith(f"check: skipped — {reason}")


# -- shell commands that cannot be checked -------------------------------------------------------
@pytest.mark.parametrize(
    ("code", "status", "said"),
    [
        (
            "python3 -m no_such_pkg_kgqa.server --model-path /models/m --port 8000\n",
            "skipped",
            "the module no_such_pkg_kgqa.server is not installed here: its arguments are not "
            "checked",
        ),
        (
            "curl --proto '=https' --tlsv1.2 -sSf https://sh.example.org | sh -s -- -y\n",
            "skipped",
            "curl accepts --proto, --tlsv1.2, -sSf; `sh --help` lists no options",
        ),
        (
            "cd repo\nsource .venv/bin/activate\n",
            "skipped",
            "cd is a shell builtin: not checked; source is a shell builtin: not checked",
        ),
        (
            "git clone https://example.org/repo.git\ncd repo\npip install -r requirements.txt\n",
            "passed",
            "git found; cd is a shell builtin: not checked; pip install accepts -r",
        ),
        ("CUDA_VISIBLE_DEVICES=0\n", "skipped", "no command to check"),
        (
            "./run_server.sh --port 8080\n",
            "skipped",
            "./run_server.sh is a file of the project, not here: not checked",
        ),
        (
            "python3 finetune.py --lr 1e-4 --epochs 3\n",
            "skipped",
            "python3: --lr, --epochs go to the script finetune.py: not checked",
        ),
        (
            "no-such-cli-kgqa serve --port 8080\n",
            "skipped",
            "no-such-cli-kgqa is not installed here: not checked",
        ),
        (
            "ls --no-such-option-kgqa\n",
            "failed",
            "ls does not accept --no-such-option-kgqa: `ls --no-such-option-kgqa --help` says: "
            "ls: unrecognized option '--no-such-option-kgqa'",
        ),
    ],
)
def test_shell_commands_fail_only_on_evidence(code: str, status: str, said: str) -> None:
    check = check_code(code, "bash")
    assert check.language == "bash"
    assert check.status.value == status, check.detail
    assert said in _decisive(check)


# -- Python that cannot be run here --------------------------------------------------------------
def test_notebook_python_parses_and_is_not_run() -> None:
    magic = check_code("%timeit sum(range(10))\nprint(sum(range(10)))\n", "python")
    assert magic.status is SnippetStatus.SKIPPED, magic.detail
    assert "IPython magics not checked: %timeit" in magic.detail
    assert "not run: IPython magics (%timeit) run only in IPython" in _decisive(magic)
    awaited = check_code("import asyncio\nawait asyncio.sleep(0)\n", "python")
    assert awaited.status is SnippetStatus.SKIPPED, awaited.detail
    assert "parse: ok — compiles with top-level await" in awaited.detail
    assert "top-level await runs only in a notebook or the asyncio REPL" in _decisive(awaited)


@needs_torch
def test_a_failure_of_a_stand_in_fixture_is_no_evidence() -> None:
    code = "import torch\nnet = TinyNet()\ntorch.jit.save(net.to_torchscript(), 'net.pt')\n"
    check = check_code(code, "python")
    assert check.status is SnippetStatus.SKIPPED, check.detail
    run = _decisive(check)
    assert "AttributeError: 'TinyNet' object has no attribute 'to_torchscript'" in run
    assert run.endswith(
        "the run used stand-ins for TinyNet (tiny_module_class), so this is no evidence "
        "against the snippet"
    )


# -- what a cached result depends on -------------------------------------------------------------
def test_the_cache_records_what_each_kind_depends_on() -> None:
    console = snippet_environment(check_code("$ ls -l\ntotal 0\n$ python3 -m pip list\n"))
    assert sorted(console) == ["cmd:ls", "cmd:python3", "pkg:pip", "python"]
    session = snippet_environment(check_code(">>> import pydantic\n>>> 1\n1\n", execute=False))
    assert sorted(session) == ["pkg:pydantic", "python"]
    assert "pkg:yaml" in snippet_environment(check_code("a: 1\n", "yaml"))
    assert sorted(snippet_environment(check_code('{"a": 1}', "json"))) == ["python"]


@pytest.mark.parametrize(
    ("code", "said"),
    [
        pytest.param(
            "import torch\nx = torch.ones(2, device='cuda')\nprint(x)\n",
            "run: skipped — not run: needs an accelerator: device 'cuda' (line 2)",
            marks=needs_torch,
        ),
        (
            "with open('train.csv') as f:\n    print(f.readline())\n",
            "FileNotFoundError: [Errno 2] No such file or directory: 'train.csv' — it needs a file "
            "that is not here, so this is no evidence against the snippet",
        ),
        (
            "import http.server\n"
            "httpd = http.server.HTTPServer(('', 8000), http.server.SimpleHTTPRequestHandler)\n"
            "httpd.serve_forever()\n",
            "run: skipped — not run: serves until stopped: httpd.serve_forever() (line 3)",
        ),
        (
            "import json\nprint(json.loads(<your-json>))\n",
            "parse: skipped — placeholders to fill in (<your-json>); it parses once they are",
        ),
    ],
)
def test_what_the_sandbox_lacks_is_no_evidence(code: str, said: str) -> None:
    check = check_code(code, "python")
    assert check.status is SnippetStatus.SKIPPED, check.detail
    assert said in _decisive(check)


def test_a_signature_listing_is_documentation_but_broken_python_fails() -> None:
    listing = 'attend(q, k, v, causal=False,\n       scale=None):\n"""Scaled dot-product."""\n'
    check = check_code(listing, "python")
    assert check.status is SnippetStatus.SKIPPED, check.detail
    assert _decisive(check) == (
        "parse: skipped — an API signature written without `def` (documentation, not code): "
        "not checked"
    )
    broken = check_code("for i in range(3)\n    print(i)\n", "python")
    assert broken.status is SnippetStatus.FAILED
    assert _decisive(broken) == (
        "parse: failed — line 1: `for i in range(3)` — SyntaxError: expected ':': "
        "Python cannot parse the code"
    )
