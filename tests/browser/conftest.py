"""A live academy server (werkzeug, local sandbox, a fresh SQLite database) and Debian's Chromium."""
from __future__ import annotations

from pathlib import Path
from typing import Callable, Iterator

import pytest
from playwright.sync_api import Page

from tests.support.browser import CHROMIUM, running_server
from tests.support.paths import REPO

ARTIFACTS = REPO / "artifacts" / "browser"


@pytest.fixture(scope="session")
def live_instance(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The live server's instance folder (its SQLite database, its secret key), for tests that store rows."""
    return tmp_path_factory.mktemp("academy-instance")


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
