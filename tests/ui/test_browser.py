"""End-to-end: the real app in a real headless Chromium. Screenshots land in test-artifacts/.

Two servers: the bundled articles (`ui_url`) and a store of a user's own documents
(`own_ui_url`, made-up engines whose hardware decides the answer).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

TIMEOUT_MS = 120_000
#: every drawn text of a picture, with its box as the browser laid it out
_TEXT_BOXES = """(selector) => Array.from(document.querySelectorAll(selector + ' text')).map(t => {
  const r = t.getBoundingClientRect();
  return [t.textContent, r.left, r.top, r.right, r.bottom];
})"""


def _page(browser: Any, url: str, locale: str = "en-US") -> Any:
    page = browser.new_page(viewport={"width": 1400, "height": 1000}, locale=locale)
    errors: list[str] = []
    page.on("pageerror", lambda err: errors.append(str(err)))
    page.goto(url, wait_until="load")
    page.locator("#kgqa-question textarea").wait_for(timeout=TIMEOUT_MS)
    page.errors = errors
    return page


def _idle(page: Any) -> None:
    page.locator("#kgqa-chat .progress-text, #kgqa-chat .eta-bar").first.wait_for(
        state="detached", timeout=TIMEOUT_MS
    )


def _ask(page: Any, question: str, turn: int) -> None:
    page.locator("#kgqa-question textarea").fill(question)
    page.locator("#kgqa-send").click()
    # the answer panel of this turn of the session (chat_turn numbers them)
    page.locator(f'#kgqa-answer [data-turn="{turn}"] .kgqa-backend').wait_for(timeout=TIMEOUT_MS)
    _idle(page)


def _overlaps(boxes: list[list[Any]]) -> list[tuple[str, str]]:
    """Pairs of drawn texts whose boxes overlap (by more than half a pixel)."""
    bad = []
    for i, (a, l1, t1, r1, b1) in enumerate(boxes):
        for b, l2, t2, r2, b2 in boxes[i + 1 :]:
            if l1 < r2 - 0.5 and l2 < r1 - 0.5 and t1 < b2 - 0.5 and t2 < b1 - 0.5:
                bad.append((a, b))
    return bad


def _recommended(page: Any) -> str:
    return str(page.locator("#kgqa-answer .kgqa-recommendation strong").inner_text().strip())


@pytest.mark.parametrize(
    ("question", "lang", "label"),
    [
        ("我想复现一篇顶会论文的代码，应该选哪个深度学习框架？", "zh", "推荐"),
        ("Which framework should I use for research and writing papers?", "en", "Recommendation"),
    ],
)
def test_question_shows_recommendation_citations_and_subgraph(
    browser: Any, ui_url: str, artifacts: Path, question: str, lang: str, label: str
) -> None:
    page = _page(browser, ui_url)
    status = page.locator("#kgqa-status").inner_text()
    assert "documents" in status and "entities" in status and "graph" in status
    _ask(page, question, 1)
    recommendation = page.locator("#kgqa-answer .kgqa-recommendation")
    recommendation.wait_for(timeout=TIMEOUT_MS)
    assert label in recommendation.inner_text()
    assert recommendation.locator("strong").inner_text().strip()
    assert page.locator("#kgqa-answer .kgqa-citation").count() >= 1
    quotes = page.locator("#kgqa-answer .kgqa-citations .kgqa-quote").all_inner_texts()
    assert quotes and all("“" in q and ".txt" in q for q in quotes)  # each with its document
    assert len(quotes) == len(set(quotes))  # a quote shows once, whatever paths it supports
    svg = page.locator("#kgqa-picture svg.kgqa-graph")
    svg.wait_for(timeout=TIMEOUT_MS)
    assert svg.locator("g.kgqa-node").count() >= 2
    assert svg.locator("g.kgqa-edge").count() >= 1
    types = set(
        svg.evaluate("s => [...s.querySelectorAll('g.kgqa-node')].map(n => n.dataset.type)")
    )
    legend = page.locator("#kgqa-picture .kgqa-legend-item")
    assert {legend.nth(i).get_attribute("data-type") for i in range(legend.count())} == types
    assert question in page.locator("#kgqa-chat").inner_text()
    page.screenshot(path=str(artifacts / f"ui-answer-{lang}.png"), full_page=True)
    assert page.errors == []
    page.close()


def test_first_page_says_what_the_store_holds_with_examples_drawn_from_it(
    browser: Any, own_ui_url: str, artifacts: Path
) -> None:
    page = _page(browser, own_ui_url)
    overview = page.locator("#kgqa-answer #kgqa-overview")
    overview.wait_for(timeout=TIMEOUT_MS)
    text = overview.inner_text()
    assert "4 documents" in text and "quokka-serve.md" in text and "Chinese (2)" in text
    assert "Most connected entities" in text and "Wombat Infer" in text
    examples = page.locator("#kgqa-examples button").all_inner_texts()
    assert len(examples) == 4
    own = ("Quokka", "Wombat", "Numbat", "Kangaroo", "Apache", "MIT", "GGUF", "NVIDIA", "Ascend")
    assert all(any(name in q for name in own) for q in examples), examples
    assert any(any("\u4e00" <= ch <= "\u9fff" for ch in q) for q in examples)  # its languages
    listed = overview.locator(".kgqa-example").all_inner_texts()
    assert [q.strip() for q in listed] == [q.strip() for q in examples]
    page.screenshot(path=str(artifacts / "ui-own-first-page.png"), full_page=True)
    page.locator("#kgqa-examples button").first.click()
    page.wait_for_function(  # an example fills the question box
        "(q) => document.querySelector('#kgqa-question textarea').value.trim() === q",
        arg=examples[0].strip(),
        timeout=TIMEOUT_MS,
    )
    page.locator("#kgqa-send").click()
    page.locator('#kgqa-answer [data-turn="1"] .kgqa-backend').wait_for(timeout=TIMEOUT_MS)
    assert page.locator("#kgqa-answer .kgqa-abstained").count() == 0  # an example is answered
    assert page.errors == []
    page.close()


def test_follow_up_changes_the_answer_and_new_chat_starts_afresh(
    browser: Any, own_ui_url: str, artifacts: Path
) -> None:
    page = _page(browser, own_ui_url)
    _ask(page, "Which inference engine runs on Ascend NPUs?", 1)
    assert _recommended(page) == "Quokka Serve"
    _ask(page, "What about NVIDIA GPUs?", 2)
    assert _recommended(page) == "Wombat Infer"
    chat = page.locator("#kgqa-chat").inner_text()
    assert "read as: Which inference engine runs on NVIDIA GPUs?" in chat
    page.screenshot(path=str(artifacts / "ui-follow-up.png"), full_page=True)
    page.locator("#kgqa-clear").click()
    page.locator("#kgqa-answer #kgqa-overview").wait_for(timeout=TIMEOUT_MS)
    _ask(page, "哪个推理引擎能在昇腾 NPU 上运行？", 1)
    assert _recommended(page) == "Numbat"
    _ask(page, "那如果是英伟达显卡呢？", 2)
    assert _recommended(page) == "Kangaroo"
    assert "理解为: 哪个推理引擎能在英伟达显卡 上运行？" in page.locator("#kgqa-chat").inner_text()
    page.locator("#kgqa-clear").click()
    page.locator("#kgqa-answer #kgqa-overview").wait_for(timeout=TIMEOUT_MS)
    _ask(page, "What is the best pizza in Naples?", 1)
    page.locator("#kgqa-answer .kgqa-abstained").wait_for(timeout=TIMEOUT_MS)
    assert "read as" not in page.locator("#kgqa-chat").inner_text()  # a new chat: no context
    assert page.locator("#kgqa-picture svg").count() == 0
    assert page.errors == []
    page.close()


@pytest.mark.parametrize(
    ("locale", "text", "expected"),
    [
        ("zh-CN", "", "请输入一个问题"),
        ("en-US", "", "Please type a question"),
        ("en-US", "为什么" * 1000, "问题太长了：3000 个字符，上限是 2000"),
        ("zh-CN", "why is it so " * 200, "The question is too long: 2599 characters"),
    ],
)
def test_empty_and_too_long_questions_get_one_message_in_their_language(
    browser: Any, own_ui_url: str, artifacts: Path, locale: str, text: str, expected: str
) -> None:
    page = _page(browser, own_ui_url, locale)
    page.locator("#kgqa-answer #kgqa-overview").wait_for(timeout=TIMEOUT_MS)
    box = page.locator("#kgqa-question textarea")
    box.fill(text)
    counter = page.locator("#kgqa-counter-line .kgqa-counter")
    count = len(text)
    page.locator(f'#kgqa-counter-line [data-count="{count}"]').wait_for(timeout=TIMEOUT_MS)
    assert f"{count} / 2000" in counter.inner_text()
    assert (counter.locator(".kgqa-over").count() == 1) == (count > 2000)
    page.locator("#kgqa-send").click()
    feedback = page.locator("#kgqa-feedback-line .kgqa-feedback")
    feedback.wait_for(timeout=TIMEOUT_MS)
    assert expected in feedback.inner_text()
    assert page.locator(".kgqa-feedback").count() == 1  # one message, in one place
    assert page.locator("#kgqa-chat [data-testid='user'], #kgqa-chat .message").count() == 0
    assert page.locator("#kgqa-answer #kgqa-overview").count() == 1  # the panel is unchanged
    assert page.locator("#kgqa-answer .kgqa-abstained").count() == 0
    assert box.input_value() == text  # kept, to be edited
    page.screenshot(path=str(artifacts / f"ui-rejected-{locale}-{count}.png"), full_page=True)
    box.fill("Which inference engine runs on Ascend NPUs?")
    page.locator("#kgqa-send").click()
    page.locator('#kgqa-answer [data-turn="1"] .kgqa-backend').wait_for(timeout=TIMEOUT_MS)
    assert page.locator(".kgqa-feedback").count() == 0  # an answer clears the message
    page.close()


def test_pictures_have_no_overlapping_labels(
    browser: Any, ui_url: str, own_ui_url: str, artifacts: Path
) -> None:
    page = _page(browser, own_ui_url)
    _ask(page, "Which inference engine runs on NVIDIA GPUs?", 1)
    page.locator("#kgqa-picture svg.kgqa-graph").wait_for(timeout=TIMEOUT_MS)
    boxes = page.evaluate(_TEXT_BOXES, "#kgqa-picture svg.kgqa-graph")
    assert len(boxes) >= 3 and _overlaps(boxes) == []
    page.close()
    page = _page(browser, ui_url)
    page.get_by_role("tab", name="Graph explorer 图谱浏览").click()
    page.locator("#kgqa-search textarea").fill("PyTorch")
    page.locator("#kgqa-search-go").click()
    svg = page.locator("#kgqa-entity-picture svg.kgqa-graph")
    svg.wait_for(timeout=TIMEOUT_MS)
    assert svg.locator("g.kgqa-node").count() >= 10  # a crowded neighbourhood
    boxes = page.evaluate(_TEXT_BOXES, "#kgqa-entity-picture svg.kgqa-graph")
    assert _overlaps(boxes) == []
    assert svg.get_attribute("data-hidden-labels") == "0"
    width = svg.evaluate("s => s.getBoundingClientRect().width")
    assert width >= 700  # a useful size on a 1,400 px page
    assert page.locator("#kgqa-entity-picture .kgqa-legend-item").count() >= 2
    page.screenshot(path=str(artifacts / "ui-explorer.png"), full_page=True)
    page.close()


def test_explorer_suggests_names_for_a_misspelling_and_lists_entities(
    browser: Any, own_ui_url: str, artifacts: Path
) -> None:
    page = _page(browser, own_ui_url)
    page.get_by_role("tab", name="Graph explorer 图谱浏览").click()
    page.locator("#kgqa-search textarea").fill("Qokka Serv")
    page.locator("#kgqa-search-go").click()
    page.locator("#kgqa-entity-panel .kgqa-abstained").wait_for(timeout=TIMEOUT_MS)
    assert "Did you mean: Quokka Serve" in page.locator("#kgqa-entity-panel").inner_text()
    choice = page.locator("#kgqa-suggestions label", has_text="Quokka Serve")
    choice.wait_for(timeout=TIMEOUT_MS)
    choice.click()
    card = page.locator("#kgqa-entity-panel #kgqa-entity")
    card.wait_for(timeout=TIMEOUT_MS)
    assert "Quokka Serve" in card.locator("h3").inner_text()
    assert page.locator("#kgqa-search textarea").input_value() == "Quokka Serve"
    assert page.locator("text=Neighbours and evidence").count() == 1
    page.screenshot(path=str(artifacts / "ui-suggestions.png"), full_page=True)
    page.locator("#kgqa-entity-list input").click()
    page.locator("#kgqa-entity-list input").fill("Kanga")
    page.get_by_role("option", name="Kangaroo").click()
    page.locator("#kgqa-entity-panel #kgqa-entity h3", has_text="Kangaroo").wait_for(
        timeout=TIMEOUT_MS
    )
    assert page.errors == []
    page.close()


def test_graph_explorer_finds_chinese_alias(browser: Any, ui_url: str) -> None:
    page = _page(browser, ui_url)
    page.get_by_role("tab", name="Graph explorer 图谱浏览").click()
    page.locator("#kgqa-search textarea").fill("英伟达")
    page.locator("#kgqa-search-go").click()
    card = page.locator("#kgqa-entity-panel #kgqa-entity")
    card.wait_for(timeout=TIMEOUT_MS)
    assert "NVIDIA" in card.locator("h3").inner_text()
    assert card.locator(".kgqa-quote").count() >= 1
    assert page.locator("#kgqa-entity-picture svg g.kgqa-node").count() >= 2
    page.locator("#kgqa-search textarea").fill("no-such-thing-xyz")
    page.locator("#kgqa-search-go").click()
    page.locator("#kgqa-entity-panel .kgqa-abstained").wait_for(timeout=TIMEOUT_MS)
    page.close()
