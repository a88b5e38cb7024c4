"""Each kind of block a document holds, checked as what it is: console transcripts checked by
what was typed, and shell commands that cannot be checked said to be "not checked" (and why),
never failed.

The snippets are written for these tests.
"""

from __future__ import annotations

import pytest

from kg.documents import SnippetStatus
from qa.snippets.store_check import decisive_reason
from qa.snippets.validate import SnippetCheck, check_code


def _decisive(check: SnippetCheck) -> str:
    return decisive_reason(check.detail)


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
