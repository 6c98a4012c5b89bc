"""gunicorn's server hooks for the academy: `gunicorn -c python:academy.gunicorn_hooks ...` (scripts/run,
deploy/app/entrypoint). A gunicorn worker process that has loaded the app starts serving at once: its
grading sandbox's warm pool starts then, not at the first learner's request (academy.runners.start_serving)."""
from __future__ import annotations

from typing import Any


def post_worker_init(worker: Any) -> None:  # gunicorn.workers.base.Worker, after it loaded the app
    from academy.runners import start_serving

    start_serving(worker.wsgi)
