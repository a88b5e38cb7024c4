"""Every code block of the real READMEs in ../shared/real-docs, validated: a `failed` status always
carries concrete evidence (a parse error, a missing API, an option the program itself rejects, a
non-zero exit), and data files, transcripts and output are recognised as such.

The documents are read from the shared folder, never copied here; without it the test is skipped,
except under CI (`CI` set to true/1, as in tests/needs.py), where a missing folder fails. Run as a
script to print the figures:

    PYTHONPATH=. python tests/qa/snippets/test_snippets_real_docs.py
"""

from __future__ import annotations

import os
import re
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

from ingest.code_repair import normalise_label
from qa.snippets.validate import SnippetCheck, check_code, decisive_reason

REAL_DOCS = Path(__file__).resolve().parents[3] / ".." / "shared" / "real-docs" / "corpus"
_FENCE = re.compile(r"^(?P<prefix>[ \t]*(?:>[ \t]?)*)(?P<mark>`{3,}|~{3,})(?P<info>.*)$")

# the evidence a failed level must show, by level
EVIDENCE = {
    "parse": re.compile(r"line \d+: .*SyntaxError: .+: Python cannot parse the code"),
    "syntax": re.compile(
        r"invalid (JSON|YAML|TOML): .+(line \d+|at end)|line \d+: unknown Dockerfile instruction"
    ),
    "apis": re.compile(r"line \d+: .*(has no attribute|no keyword argument|positional)"),
    "command": re.compile(
        r"does not accept \S+: (`[^`]+` says: .+|its argparse help lists every option)"
        r"|-c: the code does not parse: SyntaxError"
    ),
    "run": re.compile(
        r"\w+(Error|Exception)\b.* \(exit [1-9]\d* in .*\): raised|onnxruntime output vs torch"
        r"|stopped at the CPU limit .*: it did not end|it waited most of that time|leftover process"
    ),
}
NO_EVIDENCE = re.compile(
    r"not installed here|shell builtin|file of the project|may not list every option|"
    r"lists no options|could not run|program '[^']*'"
)


class Block(NamedTuple):
    """A fenced code block: where it is, its fence label, its text."""

    doc: str
    line: int
    label: str | None
    code: str


def fenced_blocks(text: str, doc: str = "") -> Iterator[Block]:
    """The fenced code blocks of a Markdown text (inside lists and block quotes too).

    >>> [b[1:] for b in fenced_blocks("a\\n```sh\\nls -l\\n```\\n> ~~~\\n> x\\n> ~~~")]
    [(2, 'sh', 'ls -l\\n'), (5, None, 'x\\n')]
    """
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = _FENCE.match(lines[i])
        if not m or (m["mark"][0] == "`" and "`" in m["info"]):
            i += 1
            continue
        prefix, mark = m["prefix"], m["mark"]
        closing = re.compile(re.escape(mark[0]) + f"{{{len(mark)},}}\\s*$")
        body: list[str] = []
        j = i + 1
        while j < len(lines):
            line = lines[j]
            inner = line[len(prefix) :] if line.startswith(prefix) else line.lstrip(" >")
            if closing.match(inner.strip()):
                break
            body.append(inner)
            j += 1
        label = m["info"].strip() or None
        yield Block(doc, i + 1, label, "\n".join(body) + "\n")
        i = j + 1


def real_blocks() -> list[Block]:
    """Every fenced block of the real documents (skips, or fails under CI, without them)."""
    if not REAL_DOCS.is_dir():
        reason = f"the real documents are not here ({REAL_DOCS.resolve()})"
        if os.environ.get("CI", "").strip().lower() in {"1", "true", "yes"}:
            pytest.fail(reason + "; CI must have them")
        pytest.skip(reason)
    return [
        block
        for path in sorted(REAL_DOCS.glob("*.md"))
        for block in fenced_blocks(path.read_text(encoding="utf-8"), path.name)
    ]


@pytest.fixture(scope="module")
def checked() -> list[tuple[Block, SnippetCheck]]:
    return [(block, check_code(block.code, block.label, timeout_s=60)) for block in real_blocks()]


def _unproven(check: SnippetCheck) -> list[str]:
    """The failed levels of a check whose reason shows no evidence (the failing clause of a
    command level comes first; other commands' clauses may say 'not checked')."""
    out = []
    for lv in check.levels:
        if lv.outcome != "failed":
            continue
        said = lv.reason.split("; ")[0] if lv.level == "command" else lv.reason
        evidence = EVIDENCE.get(lv.level)
        if evidence is None or not evidence.search(said) or NO_EVIDENCE.search(said):
            out.append(f"{lv.level}: {lv.reason}")
    return out


def test_every_failure_carries_concrete_evidence(
    checked: list[tuple[Block, SnippetCheck]],
) -> None:
    assert len(checked) > 200  # the 26 documents hold about 240 blocks
    unproven = [f"{b.doc}:{b.line} {u}" for b, check in checked for u in _unproven(check)]
    assert unproven == []


NOT_CHECKED = (
    "is a shell builtin: not checked",
    "is not installed here: not checked",
    "is a file of the project, not here: not checked",
    "go to the script",
    "go to the module",
    "its options are not checked",
)


def test_what_cannot_be_checked_says_why_and_is_no_failure(
    checked: list[tuple[Block, SnippetCheck]],
) -> None:
    said = Counter(phrase for _, c in checked for phrase in NOT_CHECKED if phrase in c.detail)
    assert set(said) == set(NOT_CHECKED), said  # each reason occurs in these documents
    failing = [
        lv.reason.split("; ")[0] for _, c in checked for lv in c.levels if lv.outcome == "failed"
    ]
    assert not [f for f in failing if any(phrase in f for phrase in NOT_CHECKED)]


def test_data_transcripts_and_output_are_recognised(
    checked: list[tuple[Block, SnippetCheck]],
) -> None:
    for block, check in checked:
        label = normalise_label(block.label)
        if label in ("json", "yaml", "toml", "dockerfile"):
            assert check.language == label, block
            assert any(lv.level == "syntax" for lv in check.levels), block
        if label in ("text", "output") or check.language in ("output", "text"):
            assert check.status.value == "skipped", block
            assert decisive_reason(check.detail).startswith("check: skipped — not checked"), block
        if any(line.lstrip().startswith(">>> ") for line in block.code.splitlines()):
            assert check.language == "pycon", block
        if block.code.lstrip().startswith("FROM "):
            assert check.language == "dockerfile", block
    languages = {check.language for _, check in checked}
    assert {"json", "toml", "dockerfile", "pycon", "console", "output"} <= languages


def main() -> None:
    """Print the figures: snippets per status and per language, and every failure."""
    blocks = real_blocks()
    results = [(block, check_code(block.code, block.label, timeout_s=60)) for block in blocks]
    statuses = Counter(check.status.value for _, check in results)
    docs = len(list(REAL_DOCS.glob("*.md")))
    print(f"{docs} documents, {len(results)} fenced snippets: {dict(statuses)}")
    by_language = Counter((check.language, check.status.value) for _, check in results)
    for (language, status), n in sorted(by_language.items()):
        print(f"  {language:<12}{status:<9}{n:>4}")
    for block, check in results:
        if check.status.value == "failed":
            print(f"failed {block.doc}:{block.line}: {decisive_reason(check.detail)}")


if __name__ == "__main__":
    main()
