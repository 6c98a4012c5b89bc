"""A cookie or a token names exactly one user forever: the attacks of tests/support/identity.py against one
running server, on SQLite and on PostgreSQL (tests/deploy/test_identity_postgres.py: on a server of its own)."""
from __future__ import annotations

from typing import Iterator

import pytest

from tests.abuse.databases import url
from tests.support import identity
from tests.support.databases import UserRows
from tests.support.servers import LiveServer


@pytest.fixture(scope="module")
def rows(shared_server: LiveServer) -> Iterator[UserRows]:
    found = UserRows(url(shared_server))
    yield found
    found.dispose()


def test_a_kept_guest_cookie_never_becomes_the_next_account(shared_server: LiveServer, rows: UserRows) -> None:
    identity.kept_guest_cookie_never_becomes_the_next_account(shared_server, rows, "127.0.7", reused=False)


def test_a_kept_guest_cookie_stays_nobody_even_when_its_id_comes_back(shared_server: LiveServer,
                                                                      rows: UserRows) -> None:
    identity.kept_guest_cookie_never_becomes_the_next_account(shared_server, rows, "127.0.8", reused=True)


def test_a_replayed_merge_offer_moves_nobodys_work(shared_server: LiveServer, rows: UserRows) -> None:
    identity.replayed_merge_offer_moves_nobodys_work(shared_server, rows, "127.0.9", reused=False)


def test_guest_cookies_copied_before_sign_up_or_sign_in_die(shared_server: LiveServer) -> None:
    identity.guest_cookies_copied_before_signup_or_signin_die(shared_server, "127.0.10")


def test_the_token_of_a_deleted_account_dies(shared_server: LiveServer, rows: UserRows) -> None:
    identity.token_of_a_deleted_user_dies(shared_server, rows, "127.0.11")


def test_a_merge_ends_every_earlier_cookie_of_the_account(shared_server: LiveServer) -> None:
    identity.merge_ends_every_earlier_cookie_of_the_account(shared_server, "127.0.19")
