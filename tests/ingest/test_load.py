"""Loading corpus files: encodings, skip reasons, ids, order, HTML conversion."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from pydantic import ValidationError

from ingest.load import LoadResult, decode_bytes, html_to_text, iter_corpus, load_document
from ingest.structure import parse_blocks
from kg.documents import BlockKind, content_hash
from kg.errors import IngestError

TEXT = "一、框架对比\nPyTorch 适合研究。\n"


def _results(root: Path, **kwargs: int) -> dict[str, LoadResult]:
    return {r.path.relative_to(root).as_posix(): r for r in iter_corpus([root], **kwargs)}


def test_utf8_document_id_hash_and_media_type(tmp_path: Path) -> None:
    (tmp_path / "sub").mkdir()
    path = tmp_path / "sub" / "a.md"
    path.write_text(TEXT, encoding="utf-8")
    doc = load_document(path, tmp_path)
    assert (doc.id, doc.text, doc.encoding, doc.media_type) == (
        "sub/a.md",
        TEXT,
        "utf-8",
        "text/markdown",
    )
    assert doc.hash == content_hash(TEXT)


def test_bom_is_removed_and_recorded(tmp_path: Path) -> None:
    path = tmp_path / "bom.txt"
    path.write_bytes(b"\xef\xbb\xbf" + TEXT.encode("utf-8"))
    doc = load_document(path, tmp_path)
    assert doc.text == TEXT
    assert doc.encoding == "utf-8-sig"


@pytest.mark.parametrize("codec", ["gbk", "gb18030"])
def test_gbk_text_is_detected(tmp_path: Path, codec: str) -> None:
    path = tmp_path / "gbk.txt"
    path.write_bytes(TEXT.encode(codec))
    doc = load_document(path, tmp_path)
    assert doc.text == TEXT
    assert doc.encoding == "gb18030"


def test_crlf_is_normalised(tmp_path: Path) -> None:
    path = tmp_path / "crlf.txt"
    path.write_bytes(b"a\r\nb\rc\n")
    assert load_document(path, tmp_path).text == "a\nb\nc\n"


def test_extensionless_text_is_loaded(tmp_path: Path) -> None:
    (tmp_path / "README").write_text("plain words\n", encoding="utf-8")
    result = _results(tmp_path)["README"]
    assert result.document is not None
    assert result.document.media_type == "text/plain"


@pytest.mark.parametrize(
    ("name", "data", "reason"),
    [
        ("empty.txt", b"", "empty file"),
        ("blank.md", b"  \n\n\t\n", "empty file"),
        ("bin.txt", b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" * 10, "binary file"),
        ("noext", bytes(range(256)) * 4, "binary file"),
        ("bad.txt", "café au lait".encode("latin-1") + b"\xff\xfe\xfa more", "undecodable"),
        ("pic.png", b"not really", "unsupported file type '.png'"),
    ],
)
def test_skip_reasons(tmp_path: Path, name: str, data: bytes, reason: str) -> None:
    (tmp_path / name).write_bytes(data)
    result = _results(tmp_path)[name]
    assert result.document is None
    assert result.skip_reason is not None
    assert result.skip_reason.startswith(reason)
    assert "\n" not in result.skip_reason


def test_load_document_raises_with_document_id(tmp_path: Path) -> None:
    (tmp_path / "empty.txt").write_bytes(b"")
    with pytest.raises(IngestError, match=r"empty\.txt: empty file") as err:
        load_document(tmp_path / "empty.txt", tmp_path)
    assert err.value.doc == "empty.txt"


def test_big_file_is_skipped_without_reading(tmp_path: Path) -> None:
    path = tmp_path / "big.txt"
    with path.open("wb") as f:  # sparse: 50 MB of size, no 50 MB of data to read
        f.truncate(50 * 1024 * 1024)
    began = time.perf_counter()
    result = _results(tmp_path)["big.txt"]
    assert time.perf_counter() - began < 0.5
    assert result.skip_reason is not None
    assert result.skip_reason.startswith("file larger than the 20.0 MiB limit (50.0 MiB)")
    small = _results(tmp_path, max_bytes=10)
    assert small["big.txt"].skip_reason is not None


def test_order_hidden_files_and_ids(tmp_path: Path) -> None:
    for rel in ["b.txt", "a/z.md", "a/c.txt", ".hidden.txt", ".git/config", "a/.x/y.txt"]:
        path = tmp_path / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("内容。\n", encoding="utf-8")
    ids = [r.document.id for r in iter_corpus([tmp_path]) if r.document]
    assert ids == ["a/c.txt", "a/z.md", "b.txt"]
    again = [r.document.id for r in iter_corpus([tmp_path]) if r.document]
    assert again == ids


def test_several_roots_duplicates_and_missing_root(tmp_path: Path) -> None:
    one, two = tmp_path / "one", tmp_path / "two"
    for root in (one, two):
        root.mkdir()
        (root / "same.txt").write_text(f"{root.name}。\n", encoding="utf-8")
    (two / "own.txt").write_text("自己。\n", encoding="utf-8")
    results = list(iter_corpus([one, two, tmp_path / "missing"]))
    assert [r.document.text if r.document else r.skip_reason for r in results] == [
        "one。\n",
        "自己。\n",
        f"duplicate document id 'same.txt' (already loaded from {one / 'same.txt'})",
        "corpus root does not exist",
    ]


def test_a_file_root_is_loaded_with_its_name_as_id(tmp_path: Path) -> None:
    path = tmp_path / "one.md"
    path.write_text("# T\n\nbody\n", encoding="utf-8")
    [result] = iter_corpus([path])
    assert result.document is not None
    assert result.document.id == "one.md"


def test_load_result_is_exactly_one_of_document_or_reason(tmp_path: Path) -> None:
    with pytest.raises(ValidationError):
        LoadResult(path=tmp_path)
    doc = load_document(_write(tmp_path / "x.txt", "x\n"), tmp_path)
    with pytest.raises(ValidationError):
        LoadResult(path=tmp_path, document=doc, skip_reason="both")


def _write(path: Path, text: str) -> Path:
    path.write_text(text, encoding="utf-8")
    return path


def test_decode_bytes_utf16_with_bom() -> None:
    assert decode_bytes("框架".encode("utf-16")) == ("框架", "utf-16")


HTML = """<html><head><title>x</title><style>p {color: red}</style></head><body>
<h1>推理框架</h1>
<p>训练完的模型要上线，
   推理链路是另一套工具。</p>
<table><thead><tr><th>框架</th><th>定位</th></tr></thead>
<tbody><tr><td>ONNX Runtime</td><td>跨框架 | 标准</td></tr><tr><td>vLLM</td><td>LLM 推理</td></tr>
</tbody></table>
<h2>选型逻辑</h2>
<ul><li>通用模型：ONNX Runtime<ul><li>成本最低</li></ul></li><li>LLM 服务：vLLM</li></ul>
<pre class="language-python">import torch
if True:
    x = 1</pre>
<script>var x = 1;</script>
</body></html>"""


def test_html_is_converted_and_parsed(tmp_path: Path) -> None:
    doc = load_document(_write(tmp_path / "page.html", HTML), tmp_path)
    assert doc.media_type == "text/html"
    assert "var x" not in doc.text and "color: red" not in doc.text
    assert "训练完的模型要上线， 推理链路是另一套工具。" in doc.text
    blocks = parse_blocks(doc)
    kinds = [b.kind for b in blocks]
    assert kinds == [
        BlockKind.HEADING,
        BlockKind.PROSE,
        BlockKind.TABLE,
        BlockKind.HEADING,
        BlockKind.LIST,
        BlockKind.CODE,
    ]
    table = blocks[2]
    assert table.rows == [
        ["框架", "定位"],
        ["ONNX Runtime", "跨框架 \\| 标准"],
        ["vLLM", "LLM 推理"],
    ]
    assert table.heading_path == ("推理框架",)
    lst = blocks[4]
    assert lst.items == ["通用模型：ONNX Runtime", "成本最低", "LLM 服务：vLLM"]
    assert lst.depths == [0, 1, 0]
    assert lst.heading_path == ("推理框架", "选型逻辑")
    code = blocks[5]
    assert code.language == "python"
    assert code.code == "import torch\nif True:\n    x = 1"


def test_html_to_text_ordered_list_and_br() -> None:
    text = html_to_text("<ol><li>one</li><li>two</li></ol><p>a<br>b</p>")
    assert text == "1. one\n2. two\n\na\n\nb\n"


# A docs site's generated page (Sphinx's layout): a step of an ordered list holds a sentence,
# a command in a highlighted block, and what to run otherwise
STEPS_HTML = """<html><body><nav>Menu</nav>
<div role="main"><h1>Installing Wisp</h1>
<ol><li><p>Install Brindle first.</p></li>
<li><p>Install the <code>wisp</code> package.</p>
<p>If you built Brindle from its tarball, point the build at it:</p>
<div class="highlight-bash notranslate"><div class="highlight">
<pre><span></span>$ BRINDLE_HOME=/opt/brindle-&lt;version&gt; pip install wisp
</pre></div></div>
<p>If Brindle came from your distribution, run:</p>
<div class="highlight-bash notranslate"><div class="highlight"><pre>$ pip install wisp
</pre></div></div></li>
<li><p>Check it with <code>wisp --version</code>.</p></li></ol></div>
<footer>© Wisp</footer></body></html>"""


def test_an_html_list_step_keeps_its_commands_as_code_under_it(tmp_path: Path) -> None:
    from ingest.formats import document_blocks
    from ingest.units import document_units

    doc = load_document(_write(tmp_path / "install.html", STEPS_HTML), tmp_path)
    blocks = document_blocks(doc)
    code = [b for b in blocks if b.kind == BlockKind.CODE]
    # each command its own code block, in the language the page marks, written as it is
    assert [(b.language, b.code) for b in code] == [
        ("bash", "$ BRINDLE_HOME=/opt/brindle-<version> pip install wisp"),
        ("bash", "$ pip install wisp"),
    ]
    units = {u.text: u for u in document_units(doc, blocks)}
    # the step after the commands is still the list's, and what the step says after a
    # command is read under the step
    assert units["If Brindle came from your distribution, run:"].context == (
        "Install the wisp package."
    )
    assert "Check it with wisp --version." in units
    assert not any("pip install" in text for text in units if not text.startswith("$"))
