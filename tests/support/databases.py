"""Databases as the tests reach them: a throwaway PostgreSQL cluster from Debian's postgresql package,
and a live server's `users` table as its administrator reaches it."""
from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
import time
from pathlib import Path

from tests.support.processes import free_port


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



class UserRows:
    """A live server's `users` table as its administrator reaches it: straight through the database (on
    SQLite as the sqlite3 shell does, foreign keys off)."""

    def __init__(self, url: str):
        from sqlalchemy import create_engine

        self.engine = create_engine(url)

    def id_of(self, email: str) -> int | None:
        from sqlalchemy import text

        with self.engine.connect() as connection:
            return connection.execute(text("SELECT id FROM users WHERE email = :e"), {"e": email}).scalar()

    def newest_id(self) -> int:
        from sqlalchemy import text

        with self.engine.connect() as connection:
            return connection.execute(text("SELECT max(id) FROM users")).scalar()

    def exists(self, user_id: int) -> bool:
        from sqlalchemy import text

        with self.engine.connect() as connection:
            return connection.execute(text("SELECT count(*) FROM users WHERE id = :id"), {"id": user_id}).scalar() > 0

    def delete(self, user_id: int) -> None:
        from sqlalchemy import text

        with self.engine.begin() as connection:
            connection.execute(text("DELETE FROM users WHERE id = :id"), {"id": user_id})

    def hand_out_again(self, user_id: int) -> None:
        """The next user made gets `user_id` again, as the database would if ids were reused (SQLite without
        AUTOINCREMENT hands out the newest deleted id by itself; a sequence reset, a restored dump ...)."""
        from sqlalchemy import text
        from sqlalchemy.exc import OperationalError

        with self.engine.begin() as connection:
            if self.engine.dialect.name == "postgresql":
                connection.execute(text("SELECT setval('users_id_seq', :id, false)"), {"id": user_id})
                return
            try:
                connection.execute(text("DELETE FROM sqlite_sequence WHERE name = 'users'"))
                connection.execute(text("INSERT INTO sqlite_sequence (name, seq) VALUES ('users', :seq)"),
                                   {"seq": user_id - 1})
            except OperationalError:  # no AUTOINCREMENT table at all: the newest deleted id comes back anyway
                pass

    def dispose(self) -> None:
        self.engine.dispose()
