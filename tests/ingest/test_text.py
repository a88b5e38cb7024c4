"""The text helpers every stage shares: the sentence splitter, the tokenizer, the stopwords."""

from __future__ import annotations

import os
from pathlib import Path

from ingest.jieba_dict import _DICT_FORMAT as DICT_FORMAT
from ingest.text import (
    CJK_PARTICLES,
    FUNCTION_BIGRAMS,
    QUESTION_STOPWORDS,
    Tokenizer,
    split_sentences,
)


def test_split_sentences() -> None:
    text = "PyTorch 适合研究。JAX 呢？适合 TPU！Use it; e.g. for speed. v2.0 is out\n下一行"
    assert [text[s:e] for s, e in split_sentences(text)] == [
        "PyTorch 适合研究。",
        "JAX 呢？",
        "适合 TPU！",
        "Use it;",
        "e.g. for speed.",
        "v2.0 is out",
        "下一行",
    ]
    assert split_sentences("  ") == []


def test_split_sentences_keeps_closing_quotes_and_technical_dots() -> None:
    text = "他说“先学 PyTorch。”然后用 torch.compile 加速（可选）。vs. 其他 Done"
    assert [text[s:e] for s, e in split_sentences(text)] == [
        "他说“先学 PyTorch。”",
        "然后用 torch.compile 加速（可选）。",
        "vs. 其他 Done",
    ]


def test_tokenize_keeps_technical_tokens_whole_and_lowercases() -> None:
    tokens = Tokenizer().tokenize("Use torch.compile, W&B and vLLM; C++ too")
    for token in ("torch.compile", "w&b", "vllm", "c++", "use"):
        assert token in tokens
    assert "Use" not in tokens and "vLLM" not in tokens


def test_tokenize_segments_chinese_and_drops_particles() -> None:
    tokens = Tokenizer().tokenize("梯度的累积")
    assert "梯度" in tokens and "累积" in tokens
    assert "的" not in tokens and "的" in CJK_PARTICLES


def test_terms_belong_to_one_tokenizer() -> None:
    term = "昇腾芯片栈"
    text = f"国产{term}部署"
    taught, plain = Tokenizer([term]), Tokenizer()
    assert term in taught.tokenize(text)
    assert term not in plain.tokenize(text)
    assert taught.terms == (term,) and plain.terms == ()
    plain.add_terms(["not chinese", term])  # only words with Chinese characters are taught
    assert plain.terms == (term,) and term in plain.tokenize(text)


def test_the_array_dictionary_segments_like_jieba_itself(tmp_path: Path) -> None:
    texts = ["国产昇腾芯片部署推理引擎", "梯度累积与混合精度训练让单张消费级显卡也能微调大模型"]
    cached = Tokenizer(["推理引擎"], cache_dir=tmp_path)
    whole = Tokenizer(["推理引擎"])
    assert [cached.tokenize(t) for t in texts] == [whole.tokenize(t) for t in texts]
    assert type(cached.segmenter.FREQ).__name__ == "JiebaDictionary"
    assert type(whole.segmenter.FREQ).__name__ == "dict"
    assert len(list(tmp_path.glob("jieba-dict-*.npz"))) == 1


def test_a_dictionary_made_anew_prunes_its_older_copies(tmp_path: Path) -> None:
    older = [tmp_path / f"jieba-dict-v{DICT_FORMAT}-0.1-{n}-{n}.npz" for n in (1, 2)]
    for age, path in enumerate(older):
        path.write_bytes(b"old")
        os.utime(path, ns=(age * 10**9, age * 10**9))
    Tokenizer(cache_dir=tmp_path).tokenize("国产芯片部署")
    made = [p for p in tmp_path.glob("jieba-dict-*.npz") if p not in older]
    assert len(made) == 1, made
    assert [p.exists() for p in older] == [False, True]


def test_stopwords_say_nothing_about_a_subject() -> None:
    assert {"什么", "哪个", "the", "which"} <= QUESTION_STOPWORDS
    assert {"什么", "选择", "使用"} <= FUNCTION_BIGRAMS
    assert "选择" not in QUESTION_STOPWORDS and "the" not in FUNCTION_BIGRAMS
    assert not {"PyTorch", "推理", "部署"} & (QUESTION_STOPWORDS | FUNCTION_BIGRAMS)
