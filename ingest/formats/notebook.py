"""A Jupyter notebook as a document: its Markdown cells as text, its code cells as code blocks.

The file is JSON, which no person quotes; the document's text is what a reader of the notebook
sees, written as Markdown: each Markdown cell's source as it is, each code cell's source in a
fence labelled with the notebook's language, then the text it printed or returned in a fence
labelled `output` (a tutorial states its results there: a loss, a speed, a table), cells
separated by a blank line. Images, HTML, errors and what went to stderr (warnings, progress
bars), raw cells and metadata are dropped. Spans and quotes index this text
(`Document.media_type` is `NOTEBOOK`); the Markdown reader cuts it into blocks.
"""

from __future__ import annotations

import re
from typing import Any

from ingest.markup import code_fence
from kg.errors import IngestError

__all__ = ["NOTEBOOK", "notebook_text", "output_text"]

NOTEBOOK = "application/x-ipynb+json"


def _language(metadata: Any) -> str:
    """The notebook's language: its kernel's, else its language_info's, else python."""
    for key, field in (("kernelspec", "language"), ("language_info", "name")):
        value = (metadata.get(key) or {}).get(field)
        if isinstance(value, str) and re.fullmatch(r"[\w+#.\-]{1,20}", value):
            return value.lower()
    return "python"


_ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")


def _text(value: Any) -> str:
    """An output's text as one string (nbformat keeps it as a string or a list of lines)."""
    return "".join(value) if isinstance(value, list) else str(value or "")


def output_text(outputs: Any) -> str:
    """The text a code cell's outputs show: what it printed to stdout and the plain text of
    what it returned or displayed, in order; colour codes gone, and of a line rewritten in
    place (a counter ending in `\\r`) only what was left on screen.

    >>> import nbformat
    >>> out = [nbformat.v4.new_output("stream", text="step 1\\rstep 2\\ndone\\n"),
    ...        nbformat.v4.new_output("stream", name="stderr", text="warning\\n"),
    ...        nbformat.v4.new_output("execute_result",
    ...                               data={"text/plain": "\\x1b[1m0.91\\x1b[0m"}),
    ...        nbformat.v4.new_output("error", ename="E", evalue="x", traceback=[])]
    >>> print(output_text(out))
    step 2
    done
    0.91
    """
    pieces: list[str] = []
    for output in outputs or []:
        kind = output.get("output_type")
        if kind == "stream" and output.get("name", "stdout") == "stdout":
            pieces.append(_text(output.get("text")))
        elif kind in ("execute_result", "display_data"):
            pieces.append(_text((output.get("data") or {}).get("text/plain")))
    text = _ANSI.sub("", "\n".join(p.rstrip("\n") for p in pieces if p.strip()))
    lines = [line.rstrip("\r").rsplit("\r", 1)[-1].rstrip() for line in text.split("\n")]
    return "\n".join(lines).strip("\n")


def notebook_text(raw: str) -> str:
    """The readable text of a notebook's JSON (see the module docstring).

    Raises `IngestError` when the JSON is no notebook nbformat can read.

    >>> import nbformat
    >>> nb = nbformat.v4.new_notebook()
    >>> nb.cells = [nbformat.v4.new_markdown_cell("# Title"), nbformat.v4.new_code_cell("x = 1")]
    >>> print(notebook_text(nbformat.writes(nb)))
    # Title
    <BLANKLINE>
    ```python
    x = 1
    ```
    <BLANKLINE>
    """
    import nbformat  # only for a corpus with notebooks

    try:
        notebook = nbformat.reads(raw, as_version=nbformat.NO_CONVERT)
        if notebook.get("nbformat", 0) < 4:
            notebook = nbformat.convert(notebook, 4)
    except Exception as err:  # nbformat raises JSON, schema and conversion errors of its own
        raise IngestError(f"unreadable notebook: {type(err).__name__}: {err}") from None
    language = _language(notebook.get("metadata") or {})
    parts: list[str] = []
    for cell in notebook.get("cells", []):
        source = cell.get("source", "")
        source = "".join(source) if isinstance(source, list) else str(source)
        source = source.replace("\r\n", "\n").replace("\r", "\n").strip("\n")
        if not source.strip():
            continue
        if cell.get("cell_type") == "markdown":
            parts.append(source)
        elif cell.get("cell_type") == "code":
            fence = code_fence(source)
            parts.append(f"{fence}{language}\n{source}\n{fence}")
            shown = output_text(cell.get("outputs"))
            if shown.strip():
                fence = code_fence(shown)
                parts.append(f"{fence}output\n{shown}\n{fence}")
    return "\n\n".join(parts) + "\n" if parts else ""
