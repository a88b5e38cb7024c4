"""The `ask` endpoint through `gradio_client`, and what the server refuses to serve."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import httpx
import pytest
from gradio_client import Client  # type: ignore[import-untyped]

from qa.schema import Answer


def test_ask_endpoint_returns_the_answer_object(ui_url: str) -> None:
    client = Client(ui_url, verbose=False)
    endpoints = client.view_api(print_info=False, return_format="dict")["named_endpoints"]
    assert "/ask" in endpoints
    raw = client.predict("我是零基础，想做研究，先学哪个框架？", api_name="/ask")
    answer = Answer.model_validate(raw)
    assert not answer.abstained and answer.recommendations
    assert answer.citations and all(e.evidence for c in answer.citations for e in c.path)
    assert answer.backend == "graph"
    declined = Answer.model_validate(
        client.predict("What is the best pizza in Naples?", api_name="/ask")
    )
    assert declined.abstained and not declined.recommendations


@pytest.mark.parametrize("path", ["/etc/passwd", str(Path(__file__).resolve())])
def test_no_files_outside_the_app(ui_url: str, path: str) -> None:
    response = httpx.get(f"{ui_url}gradio_api/file={path}", timeout=60)
    assert response.status_code in (403, 404)
    assert "root:" not in response.text and "def test_" not in response.text


def test_auth_is_required_when_configured(store_dir: Path, launch_ui: Callable[..., str]) -> None:
    url = launch_ui(store_dir, "--no-dense", "--auth", "ada:lovelace")
    assert httpx.get(f"{url}config", timeout=60).status_code == 401
    with pytest.raises(Exception, match=r"(?i)auth|login|401|credentials"):
        Client(url, verbose=False)
    client = Client(url, auth=("ada", "lovelace"), verbose=False)
    answer = Answer.model_validate(client.predict("Which framework for research?", api_name="/ask"))
    assert answer.question == "Which framework for research?"
