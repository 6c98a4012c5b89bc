"""A throwaway PostgreSQL cluster from Debian's postgresql package, on a free loopback port."""
from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Iterator

import pytest

from tests.queue.conftest import free_port


def postgres_bin() -> Path | None:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    return Path(found[-1]).parent if found else None


class PostgresServer:
    """initdb + postgres as the `postgres` system user (PostgreSQL refuses to run as root), trust auth
    on 127.0.0.1 only; the cluster is deleted afterwards."""

    def __init__(self) -> None:
        self.bin = postgres_bin()
        self.port = free_port()
        # Not under pytest's tmp_path: its parents are root-only and the postgres user must enter.
        self.folder = Path(tempfile.mkdtemp(prefix="dla-pg-"))
        self.process: subprocess.Popen | None = None

    def url(self, database: str = "academy") -> str:
        return f"postgresql+psycopg://postgres@127.0.0.1:{self.port}/{database}"

    def _as_postgres(self, *command: str) -> list[str]:
        return ["setpriv", "--reuid=postgres", "--regid=postgres", "--init-groups", *command] \
            if os.geteuid() == 0 else list(command)

    def start(self) -> PostgresServer:
        data = self.folder / "data"
        if os.geteuid() == 0:
            user = pwd.getpwnam("postgres")
            os.chown(self.folder, user.pw_uid, user.pw_gid)
        subprocess.run(self._as_postgres(str(self.bin / "initdb"), "-D", str(data), "-U", "postgres",
                                         "--auth=trust", "--no-sync", "-E", "UTF8"),
                       check=True, capture_output=True, timeout=120)
        self.process = subprocess.Popen(
            self._as_postgres(str(self.bin / "postgres"), "-D", str(data), "-p", str(self.port),
                              "-c", "listen_addresses=127.0.0.1", "-c", f"unix_socket_directories={self.folder}",
                              "-c", "fsync=off", "-c", "max_connections=200"),
            stdout=open(self.folder / "postgres.log", "ab"), stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 30
        while subprocess.run([str(self.bin / "pg_isready"), "-q", "-h", "127.0.0.1", "-p", str(self.port)]
                             ).returncode != 0:
            if self.process.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError("postgres did not start: " + (self.folder / "postgres.log").read_text())
            time.sleep(0.1)
        subprocess.run([str(self.bin / "createdb"), "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres",
                        "academy"], check=True, timeout=30)
        return self

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.terminate()  # "smart" shutdown
            try:
                self.process.wait(timeout=20)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


@pytest.fixture
def postgres() -> Iterator[PostgresServer]:
    if postgres_bin() is None:
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    server = PostgresServer().start()
    yield server
    server.stop()
