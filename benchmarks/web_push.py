"""The verdict the moment it exists: click-to-verdict in a browser, minus the grading time, with the long-poll
(academy/jobs/waiting.py) and with plain polling, side by side in one run.

    .venv/bin/python benchmarks/web_push.py [--rounds 12]

Two servers start as `scripts/run` starts one (gunicorn, 1 worker x 8 threads, the academy's gunicorn hooks,
SQLite, the local sandbox with its warm pool of 2), each with its own instance folder:

    long-poll   the defaults: `GET ?wait=20` answers when the verdict is stored
    polling     DLA_LONG_POLL_WAITERS=0: every GET answers at once, and the page asks again after 0.6 s
                (what every page did before the long-poll)

Headless Chromium (Debian's) opens amp-step's exercise page on each as a guest. First, on each server, as
soon as it answers: the first Run after its start (click to output shown, and the server's start to output
shown). Then `--rounds` Submits of the reference solution on each, taking turns: click to verdict drawn,
timed in the page (a MutationObserver on the result box), minus the verdict's own grading time
(`duration_s`, what "Graded in" shows) and minus the job's time (started_at to finished_at, which adds the
job's database writes). The two columns differ only in how the verdict reaches the page.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from datetime import datetime
from pathlib import Path

from api_latency import EXERCISE, REPO, SOLUTION, free_port, percentile, print_table

CHROMIUM = "/usr/bin/chromium"
SERVERS = {"long-poll": {}, "polling": {"DLA_LONG_POLL_WAITERS": "0"}}
VENV_BIN = Path(sys.executable).parent

# In the page: click the button, resolve with the ms until the box holds a new summary (an element the click's
# answer drew, not the one already there).
CLICK_AND_TIME = """([button, box]) => new Promise((resolve) => {
  const target = document.getElementById(box);
  const before = target.querySelector('h2.summary');
  const started = performance.now();
  const seen = () => {
    const head = target.querySelector('h2.summary');
    if (head && head !== before && !head.closest('.earlier-result')) {
      observer.disconnect();
      resolve(performance.now() - started);
    }
  };
  const observer = new MutationObserver(seen);
  observer.observe(target, { childList: true, subtree: true });
  document.querySelector(button).click();
})"""


class Server:
    def __init__(self, name: str, extra_env: dict[str, str], folder: Path):
        self.name, self.port = name, free_port()
        self.base = f"http://127.0.0.1:{self.port}"
        instance = folder / name
        self.env = {**os.environ, "DLA_INSTANCE": str(instance), "DLA_SANDBOX": "local", "SECRET_KEY": "bench",
                    "DLA_SUBMISSIONS_PER_MINUTE": "100000", "DLA_LIMIT_RUNS_PER_ACCOUNT": "100000 per minute",
                    "PYTHONUNBUFFERED": "1", **extra_env}
        for name_ in ("DATABASE_URL", "REDIS_URL", "DLA_EXERCISES"):
            self.env.pop(name_, None)
        subprocess.run([str(VENV_BIN / "flask"), "--app", "academy", "init-db"], env=self.env, cwd=REPO, check=True,
                       stdout=subprocess.DEVNULL)
        self.log = open(folder / f"{name}.log", "wb")
        self.started = time.monotonic()
        self.process = subprocess.Popen(
            [str(VENV_BIN / "gunicorn"), "--workers", "1", "--threads", "8", "--bind", f"127.0.0.1:{self.port}",
             "-c", "python:academy.gunicorn_hooks", "academy:create_app()"],
            env=self.env, cwd=REPO, stdout=self.log, stderr=subprocess.STDOUT)

    def wait_up(self) -> None:
        deadline = time.monotonic() + 60
        while True:
            try:
                urllib.request.urlopen(self.base + "/auth/signin", timeout=2)
                return
            except OSError:
                if self.process.poll() is not None or time.monotonic() > deadline:
                    raise SystemExit(f"{self.name}: the server did not start; see {self.log.name}")
                time.sleep(0.05)

    def stop(self) -> None:
        self.process.terminate()
        self.process.wait(timeout=60)


def exercise_url(base: str) -> str:
    from grader.core.course import load_course

    course = load_course()
    for lesson in course.lessons:
        for number, step in enumerate(lesson.steps, 1):
            if step.kind == "exercise" and step.exercise.id == EXERCISE:
                return f"{base}/lessons/{lesson.id}/{number}"
    raise SystemExit(f"{EXERCISE} is in no lesson")


def open_exercise(browser, server: Server):  # noqa: ANN001, ANN201
    page = browser.new_page()
    page.goto(server.base + "/")
    page.get_by_role("button", name="Start as a guest").click()
    page.goto(exercise_url(server.base))
    for _ in range(300):
        if page.evaluate("window.academyEditor !== undefined"):
            break
        page.wait_for_timeout(50)
    page.evaluate("code => window.academyEditor.setCode(code)", SOLUTION)
    return page


def newest(page, server: Server, kind: str) -> dict:  # noqa: ANN001
    """The newest submission (kind "submissions") of this page's learner, as the API gives it."""
    body = page.request.get(f"{server.base}/api/{kind}?exercise={EXERCISE}").json()
    return body["submissions"][0]


def job_s(submission: dict) -> float:
    started, finished = (datetime.fromisoformat(submission[key].rstrip("Z")) for key in ("started_at", "finished_at"))
    return (finished - started).total_seconds()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--rounds", type=int, default=12)
    args = parser.parse_args()
    from playwright.sync_api import sync_playwright

    folder = Path(tempfile.mkdtemp(prefix="dla-bench-push-"))
    servers = [Server(name, env, folder) for name, env in SERVERS.items()]
    first_runs: dict[str, tuple[float, float, float]] = {}
    overheads: dict[str, list[tuple[float, float]]] = {name: [] for name in SERVERS}
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=CHROMIUM, headless=True,
                                                 args=["--no-sandbox", "--disable-gpu"])
            pages = {}
            for server in servers:
                server.wait_up()
                pages[server.name] = page = open_exercise(browser, server)
                runs: list[dict] = []  # the Run as the page's last GET of it answered
                page.on("response", lambda response, runs=runs: runs.append(response.json()) if
                        "/api/runs/" in response.url and response.ok else None)
                click_ms = page.evaluate(CLICK_AND_TIME, ["#run-code", "run-output"])
                since_start = time.monotonic() - server.started
                page.wait_for_timeout(200)  # the response event of the GET that drew it
                ran = next(run for run in reversed(runs) if run.get("run"))["run"]
                first_runs[server.name] = (click_ms / 1000, since_start, ran["duration_s"])
            for _ in range(args.rounds):
                for server in servers:
                    page = pages[server.name]
                    click_ms = page.evaluate(CLICK_AND_TIME, ["#submit-code", "result"])
                    verdict = newest(page, server, "submissions")
                    if not verdict["result"]["passed"]:
                        raise SystemExit(f"{server.name}: the reference solution did not pass: {verdict}")
                    click_s = click_ms / 1000
                    overheads[server.name].append((click_s - verdict["result"]["duration_s"],
                                                   click_s - job_s(verdict)))
            browser.close()
    finally:
        for server in servers:
            server.stop()

    print(f"First Run after the server's start ({EXERCISE}'s example; the pool starts with the server):\n")
    print_table(["server", "click to output shown (s)", "server start to output shown (s)", "Run's own time (s)"],
                [[name, *first_runs[name]] for name in SERVERS])
    print(f"\nSubmit to verdict drawn, minus the grading time, {args.rounds} Submits each, taking turns:\n")
    rows = []
    for name in SERVERS:
        minus_grading = [a for a, _ in overheads[name]]
        minus_job = [b for _, b in overheads[name]]
        rows.append([name, statistics.median(minus_grading), percentile(minus_grading, 90),
                     statistics.median(minus_job), percentile(minus_job, 90)])
    print_table(["server", "p50 minus grading (s)", "p90 minus grading (s)", "p50 minus job (s)",
                 "p90 minus job (s)"], rows)


if __name__ == "__main__":
    sys.path.insert(0, str(REPO / "platform"))
    main()
