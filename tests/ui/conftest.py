"""Fixtures for the UI tests: stores built from the shipped corpus and from small documents of a
user's own (`own_corpus/`), the real `kgqa ui` server on a free 127.0.0.1 port (a subprocess),
and a headless Debian Chromium driven by Playwright."""

from __future__ import annotations

import shutil
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import httpx
import pytest
from needs import missing_modules, skip_or_fail
from processes import die_with_parent

REPO = Path(__file__).resolve().parents[2]
ARTIFACTS = REPO / "test-artifacts"
CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def ingest(docs: list[Path], root: Path) -> Path:
    """A store built by `kgqa ingest` from copies of `docs`."""
    corpus = root / "corpus"
    corpus.mkdir()
    for doc in docs:
        shutil.copy(doc, corpus / doc.name)
    store = root / "store"
    done = subprocess.run(
        [sys.executable, "-m", "qa.cli", "ingest", "--corpus", str(corpus), "--store", str(store)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=900,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return store


@pytest.fixture(scope="session")
def store_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store built by `kgqa ingest` from the corpus's text documents."""
    docs = sorted((REPO / "corpus").glob("*.txt"))
    return ingest(docs, tmp_path_factory.mktemp("ui"))


#: Small documents written for these tests (made-up engines, English and Chinese): which engine
#: runs where depends on the hardware, so that a follow-up that changes it changes the answer.
OWN_CORPUS = Path(__file__).resolve().parent / "own_corpus"


@pytest.fixture(scope="session")
def own_store(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A store of a user's own documents (not the bundled articles)."""
    return ingest(sorted(OWN_CORPUS.glob("*.md")), tmp_path_factory.mktemp("own"))


def start_ui(store: Path, *extra: str, log: Path) -> tuple[subprocess.Popen[bytes], str]:
    """`kgqa ui` in a subprocess; returns it and its URL once the page answers. It dies with the
    test process, however that ends (a killed test run leaves no server behind)."""
    port = free_port()
    command = [sys.executable, "-m", "qa.cli", "ui", "--store", str(store), "--port", str(port)]
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [*command, *extra],
            cwd=REPO,
            stdout=out,
            stderr=subprocess.STDOUT,
            preexec_fn=die_with_parent,
        )
    url = f"http://127.0.0.1:{port}/"
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"kgqa ui exited {proc.returncode}:\n{log.read_text()}")
        try:
            if httpx.get(url, timeout=5).status_code in (200, 401):
                return proc, url
        except httpx.HTTPError:
            pass
        time.sleep(1)
    proc.terminate()
    raise AssertionError(f"kgqa ui did not come up in 300 s:\n{log.read_text()}")


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop a server started by `start_ui`."""
    proc.terminate()
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@pytest.fixture(scope="session")
def ui_url(store_dir: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The app served by `kgqa ui` (lexical retrieval, to keep the shared test machine light)."""
    log = tmp_path_factory.mktemp("ui-log") / "ui.log"
    proc, url = start_ui(store_dir, "--no-dense", log=log)
    yield url
    stop(proc)


@pytest.fixture(scope="session")
def own_ui_url(own_store: Path, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The app over the user's own store (examples drawn from it)."""
    log = tmp_path_factory.mktemp("own-ui-log") / "ui.log"
    proc, url = start_ui(own_store, "--no-dense", log=log)
    yield url
    stop(proc)


@pytest.fixture(scope="session")
def browser() -> Iterator[object]:
    """Debian's headless Chromium through Playwright (never a downloaded browser)."""
    if not CHROMIUM.exists():
        skip_or_fail("chromium", "Debian chromium is not installed: apt-get install -y chromium")
    if missing_modules("playwright"):
        skip_or_fail("chromium", "playwright is not installed: pip install 'kgqa[dev]'")
    import playwright.sync_api as playwright

    with playwright.sync_playwright() as p:
        chromium = p.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture()
def launch_ui(tmp_path: Path) -> Iterator[Callable[..., str]]:
    """Start extra `kgqa ui` servers with flags (`launch_ui(store, "--auth", "u:p")`)."""
    started: list[subprocess.Popen[bytes]] = []

    def launch(store: Path, *extra: str) -> str:
        proc, url = start_ui(store, *extra, log=tmp_path / f"ui-{len(started)}.log")
        started.append(proc)
        return url

    yield launch
    for proc in started:
        stop(proc)


@pytest.fixture()
def artifacts() -> Path:
    """Where screenshots go (gitignored)."""
    ARTIFACTS.mkdir(exist_ok=True)
    return ARTIFACTS
