"""A throwaway PostgreSQL cluster from Debian's postgresql package, on a free loopback port."""
from __future__ import annotations

from typing import Iterator

import pytest

from tests.support.databases import PostgresServer, postgres_bin


@pytest.fixture
def postgres() -> Iterator[PostgresServer]:
    if postgres_bin() is None:
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    server = PostgresServer().start()
    yield server
    server.stop()
