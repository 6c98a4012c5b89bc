"""A cookie names exactly one user forever on PostgreSQL too: tests/support/identity.py's attacks against a
running server on a real PostgreSQL. Its sequence never hands an id out twice by itself, so the attacks
make it do so (`reused=True`, as a sequence reset or a restored dump would): the session secret holds."""
from __future__ import annotations

from pathlib import Path
from typing import Iterator

import pytest

from tests.support import identity
from tests.support.databases import PostgresServer, UserRows, postgres_bin
from tests.support.servers import LiveServer


@pytest.fixture(scope="module")
def on_postgres(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[LiveServer, UserRows]]:
    if postgres_bin() is None:
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    database = PostgresServer().start()
    folder: Path = tmp_path_factory.mktemp("server")
    server = LiveServer(folder, {"DATABASE_URL": database.url()})
    rows = UserRows(database.url())
    try:
        yield server.start(), rows
    finally:
        rows.dispose()
        server.stop()
        database.stop()


def test_a_kept_guest_cookie_stays_nobody_when_its_id_comes_back(on_postgres: tuple[LiveServer, UserRows]) -> None:
    identity.kept_guest_cookie_never_becomes_the_next_account(*on_postgres, "127.0.20", reused=True)


def test_a_replayed_merge_offer_moves_nobodys_work(on_postgres: tuple[LiveServer, UserRows]) -> None:
    identity.replayed_merge_offer_moves_nobodys_work(*on_postgres, "127.0.21", reused=True)


def test_guest_cookies_copied_before_sign_up_or_sign_in_die(on_postgres: tuple[LiveServer, UserRows]) -> None:
    identity.guest_cookies_copied_before_signup_or_signin_die(on_postgres[0], "127.0.22")
