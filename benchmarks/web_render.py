"""Server-side render time of the web pages, measured through the whole Flask stack (WSGI, session,
database, templates) with the test client: no network, no browser.

    .venv/bin/python benchmarks/web_render.py [--runs 300]

Target (issue: web platform): a lesson page renders in under 50 ms median on the server.
"""
from __future__ import annotations

import argparse
import re
import statistics
import tempfile
import time

from academy import create_app, jobs
from academy.instance import init_instance

PAGES = [
    ("course page", "/"),
    ("lesson: card step", "/lessons/mixed-precision/4"),
    ("lesson: exercise step", "/lessons/mixed-precision/11"),
    ("lesson: quiz step", "/lessons/mixed-precision/14"),
    ("api: progress", "/api/progress"),
]
TARGET_MS = 50.0


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=300)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as instance:
        app = create_app({"INSTANCE_PATH": instance, "SECRET_KEY": "bench", "SANDBOX": "local"})
        init_instance(app)  # what `flask --app academy init-db` does
        client = app.test_client()
        token = re.search(r'name="csrf-token" content="([^"]+)"', client.get("/").get_data(as_text=True))
        client.post("/auth/guest", data={"csrf_token": token.group(1)})
        samples: dict[str, list[float]] = {name: [] for name, _ in PAGES}
        for _name, url in PAGES:  # warm-up: first render compiles the templates
            assert client.get(url).status_code == 200, url
        for _ in range(args.runs):  # interleaved, so machine noise hits every page alike
            for name, url in PAGES:
                started = time.perf_counter()
                client.get(url)
                samples[name].append((time.perf_counter() - started) * 1000)
        jobs.shutdown(app)
    print(f"Server-side render, {args.runs} requests per page (Flask test client, SQLite, one guest)\n")
    print(f"| page | median ms | p95 ms | median / {TARGET_MS:g} ms target |")
    print("|---|---:|---:|---:|")
    for name, _ in PAGES:
        values = sorted(samples[name])
        median = statistics.median(values)
        p95 = values[int(0.95 * (len(values) - 1))]
        print(f"| {name} | {median:.2f} | {p95:.2f} | {median / TARGET_MS:.2f} |")


if __name__ == "__main__":
    main()
