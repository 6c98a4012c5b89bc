"""A live academy server (werkzeug, local sandbox, a fresh SQLite database) and Debian's Chromium."""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Callable, Iterator

import pytest
from playwright.sync_api import Page

from tests.helpers import INSTRUCTOR, REPO, free_port

ARTIFACTS = REPO / "artifacts" / "browser"
CHROMIUM = "/usr/bin/chromium"


def _flask(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flask", "--app", "academy", *args], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=120, check=True)


@pytest.fixture(scope="session")
def live_instance(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The live server's instance folder (its SQLite database, its secret key), for tests that store rows."""
    return tmp_path_factory.mktemp("academy-instance")


@contextlib.contextmanager
def running_server(instance: Path, **settings: str) -> Iterator[str]:
    """A live academy server (`flask run`, local sandbox) on a fresh database in `instance`, with `settings` as
    extra DLA_* environment variables; yields its URL and stops it afterwards. One start for every live server of
    the browser tests (live_server below; tests/browser/test_tutor.py's, pointed at the tutor's model)."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: run scripts/setup-system (installs Debian's chromium)")
    env = {**os.environ, "DLA_INSTANCE": str(instance), "DLA_SANDBOX": "local", "DLA_GRADING_WORKERS": "2",
           "PYTHONUNBUFFERED": "1", **settings}
    for name in ("DATABASE_URL", "REDIS_URL", "DLA_EXERCISES", "SECRET_KEY"):
        env.pop(name, None)
    _flask(env, "init-db")
    _flask(env, "create-user", INSTRUCTOR[0], "--instructor", "--password", INSTRUCTOR[1])
    port = free_port()
    log = open(instance / "server.log", "w")
    server = subprocess.Popen([sys.executable, "-m", "flask", "--app", "academy", "run", "--port", str(port),
                               "--no-reload", "--no-debugger"], env=env, cwd=REPO, stdout=log,
                              stderr=subprocess.STDOUT)
    url = f"http://127.0.0.1:{port}"
    deadline = time.monotonic() + 60
    try:
        while True:
            try:
                urllib.request.urlopen(url + "/", timeout=2)
                break
            except OSError:
                if server.poll() is not None or time.monotonic() > deadline:
                    pytest.fail(f"the server did not start: {(instance / 'server.log').read_text()[-3000:]}")
                time.sleep(0.2)
        yield url
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        log.close()


@pytest.fixture(scope="session")
def live_server(live_instance: Path) -> Iterator[str]:
    with running_server(live_instance) as url:
        yield url


@pytest.fixture(scope="session")
def browser_type_launch_args(browser_type_launch_args: dict) -> dict:
    # `playwright install` cannot download browsers here: drive the distribution's Chromium.
    return {**browser_type_launch_args, "executable_path": CHROMIUM, "headless": True,
            "args": ["--no-sandbox", "--disable-gpu", "--disable-background-networking",
                     "--disable-component-update", "--disable-sync", "--no-first-run", "--disable-quic",
                     "--disable-dev-shm-usage"]}


@pytest.fixture(scope="session")
def browser_context_args(browser_context_args: dict) -> dict:
    # Reduced motion: the spinner of a running submission stands still (tests/browser/test_dark_mode.py checks both
    # ways). Spinning in software rendering while a verdict is awaited cost Chromium ~15% of its CPU in these tests.
    return {**browser_context_args, "viewport": {"width": 1200, "height": 900}, "reduced_motion": "reduce"}


@pytest.fixture
def shoot() -> Callable[[Page, str], Path]:
    """shoot(page, name): a full-page screenshot under artifacts/browser/ (ignored by git)."""
    ARTIFACTS.mkdir(parents=True, exist_ok=True)

    def _shoot(page: Page, name: str) -> Path:
        path = ARTIFACTS / f"{name}.png"
        page.screenshot(path=str(path), full_page=True)
        return path
    return _shoot
