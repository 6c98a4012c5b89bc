"""The browser tests (tests/browser): Debian's Chromium, the live server they drive (one start for every live
server: tests/browser/conftest.py's live_server, tests/browser/test_tutor.py's), its instructor, the accessibility
check (axe-core), the phone's viewport, and amp-step's page as several tests use it."""
from __future__ import annotations

import contextlib
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path
from typing import Iterator

import pytest
from playwright.sync_api import Page, expect

from tests.support.paths import EXERCISES, LESSON, REPO
from tests.support.processes import free_port

CHROMIUM = "/usr/bin/chromium"
INSTRUCTOR = ("teacher@example.org", "teacher-password")
# axe-core, vendored (tests/browser/vendor/axe.min.js, from npm via platform/frontend's `npm run vendor-axe`).
AXE = (REPO / "tests" / "browser" / "vendor" / "axe.min.js").read_text()
PHONE = {"viewport": {"width": 390, "height": 844}, "is_mobile": True, "has_touch": True,
         "device_scale_factor": 2}
VERDICT_TIMEOUT = 120_000  # ms
STEP = f"/lessons/{LESSON}/amp-step"
GRADING = 90_000  # ms: a grading on a loaded 2-core machine
# Runs for about 3 s, then returns: long enough to see the Run while it runs.
SLOW = ("def train_step(*args):\n    import time\n    end = time.monotonic() + 3\n"
        "    while time.monotonic() < end:\n        time.sleep(0.05)\n    return 1\n")


def _flask(env: dict[str, str], *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "flask", "--app", "academy", *args], env=env, cwd=REPO,
                          capture_output=True, text=True, timeout=120, check=True)


@contextlib.contextmanager
def running_server(instance: Path, **settings: str) -> Iterator[str]:
    """A live academy server (`flask run`, local sandbox) on a fresh database in `instance`, with `settings` as
    extra DLA_* environment variables; yields its URL and stops it afterwards. One start for every live server of
    the browser tests (tests/browser/conftest.py's live_server; tests/browser/test_tutor.py's, pointed at the tutor's
    model)."""
    if not Path(CHROMIUM).exists():
        pytest.fail(f"{CHROMIUM} is missing: run scripts/setup-system (installs Debian's chromium)")
    env = {**os.environ, "DLA_INSTANCE": str(instance), "DLA_SANDBOX": "local", "DLA_GRADING_WORKERS": "2",
           "PYTHONUNBUFFERED": "1", "DLA_VALIDATE_ON_CHANGE": "0", **settings}  # validations only when asked
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


def serious_violations(page: Page) -> list[str]:
    page.evaluate(AXE + "\n;0")  # evaluated by the test, not loaded by the page: the CSP stays as strict
    found = page.evaluate("""async () => {
        const r = await axe.run(document, {resultTypes: ['violations']});
        return r.violations.filter(v => ['serious', 'critical'].includes(v.impact))
            .map(v => v.id + ': ' + v.nodes.slice(0, 3).map(n => n.target.join(' ')).join(' | '));
    }""")
    return found


def source(exercise: str, name: str) -> str:
    """A file of an exercise's folder (a mistake, the solution)."""
    return (EXERCISES / exercise / name).read_text()


def guest_on(page: Page, live_server: str, prefix: str = "") -> None:
    """A new guest (under the language `prefix`, "" or "/ar" ...), on amp-step's page with its editor shown."""
    page.goto(f"{live_server}{prefix}/")
    page.locator("form[action$='/auth/guest'] button").click()  # by its form: its name is the page's language
    page.goto(f"{live_server}{prefix}{STEP}")
    expect(page.locator(".cm-editor")).to_be_visible()


def set_code(page: Page, code: str) -> None:
    """The editor's code, as if typed."""
    page.evaluate("code => window.academyEditor.setCode(code)", code)
