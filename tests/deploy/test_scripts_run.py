"""`scripts/run`, the README's first command, as an operator runs it: it readies the instance, checks the
course and the sandbox, says how it grades, and serves (academy/serve.py: waitress, which slow clients cannot
stall: tests/deploy/test_slow_clients.py); the warm pool starts with the server (academy.runners.start_serving),
before any request, so the first Run does not wait for it; SIGTERM stops the server gracefully."""
from __future__ import annotations

import os
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from tests.support.paths import REPO
from tests.support.processes import free_port, stop_group

pytestmark = pytest.mark.slow


def _descendants(pid: int) -> list[int]:
    parents: dict[int, int] = {}
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        parents[int(stat.parent.name)] = int(fields[1])
    found, frontier = [], [pid]
    while frontier:
        children = [child for child, parent in parents.items() if parent in frontier]
        found += children
        frontier = children
    return found


def test_scripts_run_serves_and_starts_its_warm_pool_before_any_request(tmp_path) -> None:  # noqa: ANN001
    port = free_port()
    env = {**os.environ, "DLA_INSTANCE": str(tmp_path / "instance"), "DLA_SANDBOX": "local", "DLA_WARM_POOL": "1",
           "HOST": "127.0.0.1", "PORT": str(port)}
    for name in ("DATABASE_URL", "REDIS_URL", "DLA_EXERCISES", "SECRET_KEY"):
        env.pop(name, None)
    log = tmp_path / "run.log"
    server = subprocess.Popen([str(REPO / "scripts" / "run")], cwd=REPO, env=env, stdout=open(log, "wb"),
                              stderr=subprocess.STDOUT, start_new_session=True)
    try:
        deadline = time.monotonic() + 120
        address = f"Deep Learning Academy is at http://127.0.0.1:{port}/"
        while address not in log.read_text(errors="replace"):
            assert server.poll() is None and time.monotonic() < deadline, log.read_text(errors="replace")
            time.sleep(0.2)
        printed = log.read_text()
        assert "Grading sandbox: local (warm pool of 1 forked grading processes)" in printed, printed
        # The address is printed once the warm pool's processes wait (serve --announce): whoever opens it first
        # finds a grading process ready, not one importing torch.
        assert printed.index("Listening at") < printed.index("ready: grading with local (warm pool of 1)") \
            < printed.index(address), printed
        # No request yet: the serving process's grading processes start on their own.
        while len(_descendants(server.pid)) < 2:  # the server, and the pool's processes under it
            assert time.monotonic() < deadline, f"no warm pool started: {log.read_text(errors='replace')}"
            time.sleep(0.2)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=30) as page:
            assert page.status == 200 and b"Deep Learning Academy" in page.read()
        assert "academy.serve: Listening at: http://127.0.0.1:" in log.read_text()
        # The access log's line is written once the server has closed the answer, which may be just after the
        # client read it: waited for, not read at once (one full run read the log a moment too early).
        while '"GET / HTTP/1.1" 200' not in log.read_text():
            assert time.monotonic() < deadline, f"no access log line: {log.read_text(errors='replace')[-3000:]}"
            time.sleep(0.1)
    finally:
        stop_group(server, timeout=60)
    assert "academy.serve: stopped" in log.read_text(), log.read_text()[-3000:]
