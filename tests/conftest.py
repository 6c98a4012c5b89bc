"""Fixtures shared by more than one test folder (a fixture here is visible to every test below tests/), and the
hooks that split the suite over two workers (defined in tests/support/workers.py; importing them here registers
them). Plain helpers live in tests/support."""
from __future__ import annotations

import itertools
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Iterator

import pytest

from tests.support.paths import REPO
from tests.support.sandboxes import SHARED_POOLS
from tests.support.workers import (  # noqa: F401 - pytest's hooks, registered by their names here
    pytest_collection_modifyitems,
    pytest_runtest_protocol,
    pytest_sessionfinish,
    pytest_xdist_make_scheduler,
)

if TYPE_CHECKING:
    from flask import Flask

    from tests.support.databases import PostgresServer
    from tests.support.mail import Inbox

# Password hashes at 1/32 of the production cost (academy's DLA_PASSWORD_HASH; its default is werkzeug's
# scrypt:32768:8:1): the suite hashes some 500 passwords, ~0.13 CPU-s each at that cost, over a minute of CPU.
# Every app and server the tests start inherits it; tests/web/test_settings.py holds the default and the tests
# that time or inspect hashes ask for it (tests/abuse/test_signin.py). The compose stack keeps its own.
os.environ.setdefault("DLA_PASSWORD_HASH", "scrypt:1024:8:1")


@pytest.fixture(scope="session")
def repo() -> Path:
    return REPO


@pytest.fixture(scope="session")
def warm_sandbox() -> Iterator[Callable[[str], object]]:
    """`warm_sandbox("local" | "docker")`: one warm sandbox of that kind (a pool of 2) for the whole session,
    started on first use and shared by every test that only grades through it (a grading process is single-use
    whatever the pool: sharing the pool shares no state between submissions). Tests of the pools themselves
    make their own. Skips, saying why, where that kind cannot run here."""
    made: dict[str, object] = {}

    def get(name: str) -> object:
        from grader.host.sandboxes import get_sandbox
        from sandbox import SandboxError

        if name not in made:
            try:
                made[name] = get_sandbox(name, warm=2)
                SHARED_POOLS.append(made[name].pool)
            except SandboxError as exc:
                made[name] = exc
        if isinstance(made[name], SandboxError):
            pytest.skip(f"no {name} sandbox here: {made[name]}")
        return made[name]

    yield get
    for sandbox in made.values():
        if not isinstance(sandbox, Exception):
            sandbox.close()
            SHARED_POOLS.remove(sandbox.pool)


@pytest.fixture(scope="session")
def tutor_model(tmp_path_factory: pytest.TempPathFactory) -> Iterator[object]:
    """The tutor's embedded model server (tests.support.tutor.TutorModelServer), the real engine and model, started
    once per test process and shared by every test that asks it something (tests/tutor, tests/browser).
    DLA_TEST_TUTOR_PORT=N uses an embedded model server already running on that port instead (re-running a few
    tests while changing them, without loading the model each time)."""
    from tests.support.tutor import TutorModelServer

    if os.environ.get("DLA_TEST_TUTOR_PORT"):
        yield TutorModelServer.running(int(os.environ["DLA_TEST_TUTOR_PORT"])).wait_ready(timeout=5)
        return
    server = TutorModelServer(tmp_path_factory.mktemp("tutor-model"))
    try:
        yield server.wait_ready()
    finally:
        server.stop()


# --- apps in this process (tests/web, tests/abuse)

@pytest.fixture
def make_app(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Callable[..., Flask]]:
    """make_app(**config): a fresh app in this process, its own instance folder and SQLite database (made ready
    as `init-db` does), the local sandbox; every one made is shut down after the test."""
    from academy import jobs
    from tests.support.apps import ready_app

    # The embedded defaults, whatever the calling shell has set.
    for name in ("DATABASE_URL", "REDIS_URL", "DLA_INSTANCE", "DLA_SANDBOX", "DLA_EXERCISES", "SECRET_KEY"):
        monkeypatch.delenv(name, raising=False)
    apps: list[Flask] = []

    def _make(**config: Any) -> Flask:
        # No validations started by the overview (DLA_VALIDATE_ON_CHANGE) unless a test asks for them.
        app = ready_app({"INSTANCE_PATH": str(tmp_path / "instance"), "SANDBOX": "local",
                         "SECRET_KEY": "test", "TESTING": True, "VALIDATE_ON_CHANGE": False, **config})
        apps.append(app)
        return app
    yield _make
    for app in apps:
        jobs.shutdown(app)


@pytest.fixture
def app(make_app: Callable[..., Flask]) -> Flask:
    return make_app()


@pytest.fixture(scope="module")
def postgres() -> Iterator[PostgresServer]:
    """A PostgreSQL cluster for the module's tests (tests/deploy has its own, one per test)."""
    from tests.support.databases import PostgresServer, postgres_bin

    if postgres_bin() is None:
        pytest.skip("PostgreSQL is not installed (apt-get install postgresql)")
    cluster = PostgresServer().start()
    yield cluster
    cluster.stop()


_race_databases = itertools.count(1)


@pytest.fixture(params=["sqlite", "postgresql"])
def race_app(request: pytest.FixtureRequest, make_app: Callable[..., Flask]) -> Iterator[Flask]:
    """make_app()'s app, on SQLite and on a fresh database of the module's PostgreSQL cluster (`postgres`)."""
    from sqlalchemy import create_engine, text

    if request.param == "sqlite":
        yield make_app()
        return
    cluster: PostgresServer = request.getfixturevalue("postgres")
    name = f"races_{next(_race_databases)}"
    admin = create_engine(cluster.url("postgres"), isolation_level="AUTOCOMMIT")
    with admin.connect() as connection:
        connection.execute(text(f'CREATE DATABASE "{name}"'))
    admin.dispose()
    app = make_app(DATABASE_URL=cluster.url(name))
    yield app
    app.extensions["academy.engine"].dispose()  # the cluster stops once no connection is left


@pytest.fixture
def inbox() -> Iterator[tuple[Inbox, int]]:
    """A real SMTP server on a free loopback port (aiosmtpd): (what it received, its port)."""
    from tests.support.mail import smtp_inbox

    with smtp_inbox() as found:
        yield found


@pytest.fixture
def mailing(make_app: Callable[..., Flask], inbox: tuple[Inbox, int]) -> tuple[Flask, Inbox]:
    """An app that mails through `inbox`'s server, and that inbox."""
    box, port = inbox
    app = make_app(SMTP_HOST="127.0.0.1", SMTP_PORT=port, SMTP_SECURITY="none",
                   MAIL_FROM="Academy <academy@example.org>")
    return app, box


@pytest.fixture(autouse=True)
def no_listener_outlives_its_test() -> Iterator[None]:
    """An app's listener for finished rows (academy/jobs/waiting.py) ends with `jobs.shutdown(app)`. One left
    running retried a stopped Redis for the rest of the run, formatting a traceback every 5 s, and Python 3.11's
    traceback formatting parses source (ast) beside a test doing the same: CPython then raised "AST constructor
    recursion depth mismatch" in tests/test_architecture.py (3.11's AST converter counts depth per interpreter)."""
    import threading

    yield
    left = [thread for thread in threading.enumerate() if thread.name == "academy-finishes"]
    for thread in left:
        thread.join(5)
    assert not [thread for thread in left if thread.is_alive()], \
        "an app's listener for finished rows outlived the test: call academy.jobs.shutdown(app)"
