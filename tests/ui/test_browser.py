"""End-to-end: the real app in a real headless Chromium. Screenshots land in test-artifacts/."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

TIMEOUT_MS = 120_000


def _page(browser: Any, url: str) -> Any:
    page = browser.new_page(viewport={"width": 1400, "height": 1000})
    errors: list[str] = []
    page.on("pageerror", lambda err: errors.append(str(err)))
    page.goto(url, wait_until="load")
    page.locator("#kgqa-question textarea").wait_for(timeout=TIMEOUT_MS)
    page.errors = errors
    return page


def _ask(page: Any, question: str, turn: int) -> None:
    page.locator("#kgqa-question textarea").fill(question)
    page.locator("#kgqa-send").click()
    # the answer panel of this turn of the session (chat_turn numbers them)
    page.locator(f'#kgqa-answer [data-turn="{turn}"] .kgqa-backend').wait_for(timeout=TIMEOUT_MS)
    page.locator("#kgqa-chat .progress-text, #kgqa-chat .eta-bar").first.wait_for(
        state="detached", timeout=TIMEOUT_MS
    )


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
    quote = page.locator("#kgqa-answer .kgqa-quote").first.inner_text()
    assert "“" in quote and ".txt" in quote  # verbatim quote with its document
    svg = page.locator("#kgqa-picture svg.kgqa-graph")
    svg.wait_for(timeout=TIMEOUT_MS)
    assert svg.locator("g.kgqa-node").count() >= 2
    assert svg.locator("g.kgqa-edge").count() >= 1
    chat = page.locator("#kgqa-chat").inner_text()
    assert question in chat
    page.screenshot(path=str(artifacts / f"ui-answer-{lang}.png"), full_page=True)
    assert page.errors == []
    page.close()


def test_follow_up_keeps_context_and_out_of_scope_abstains(
    browser: Any, ui_url: str, artifacts: Path
) -> None:
    page = _page(browser, ui_url)
    _ask(page, "Which framework should I use for research?", 1)
    _ask(page, "and for inference?", 2)
    chat = page.locator("#kgqa-chat").inner_text()
    assert "read as: Which framework should I use for research? and for inference?" in chat
    page.locator("#kgqa-send").wait_for()
    page.screenshot(path=str(artifacts / "ui-follow-up.png"), full_page=True)
    page.locator("#kgqa-clear").click()
    page.locator("#kgqa-answer [data-turn]").wait_for(state="detached", timeout=TIMEOUT_MS)
    _ask(page, "What is the best pizza in Naples?", 1)
    page.locator("#kgqa-answer .kgqa-abstained").wait_for(timeout=TIMEOUT_MS)
    assert "Not covered by the sources" in page.locator("#kgqa-answer").inner_text()
    assert page.locator("#kgqa-picture svg").count() == 0
    page.screenshot(path=str(artifacts / "ui-abstained.png"), full_page=True)
    page.close()


def test_graph_explorer_finds_chinese_alias(browser: Any, ui_url: str, artifacts: Path) -> None:
    page = _page(browser, ui_url)
    page.get_by_role("tab", name="Graph explorer 图谱浏览").click()
    page.locator("#kgqa-search textarea").fill("英伟达")
    page.locator("#kgqa-search-go").click()
    card = page.locator("#kgqa-entity-panel #kgqa-entity")
    card.wait_for(timeout=TIMEOUT_MS)
    assert "NVIDIA" in card.locator("h3").inner_text()
    assert card.locator(".kgqa-quote").count() >= 1
    assert page.locator("#kgqa-entity-picture svg g.kgqa-node").count() >= 2
    page.screenshot(path=str(artifacts / "ui-explorer.png"), full_page=True)
    page.locator("#kgqa-search textarea").fill("no-such-thing-xyz")
    page.locator("#kgqa-search-go").click()
    page.locator("#kgqa-entity-panel .kgqa-abstained").wait_for(timeout=TIMEOUT_MS)
    page.close()
