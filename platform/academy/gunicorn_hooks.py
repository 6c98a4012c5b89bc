"""gunicorn's server hooks for the academy: `gunicorn -c python:academy.gunicorn_hooks ...`. scripts/run and the
compose image serve with academy/serve.py (waitress) now; this is for running the app under gunicorn anyway (the
benchmarks' and tests' "before" shape, benchmarks/server_shape.py; gunicorn's gthread worker lets slow clients hold
its threads, so keep it behind a buffering proxy). A gunicorn worker process that has loaded the app starts serving
at once: its grading sandbox's warm pool starts then, not at the first learner's request
(academy.runners.start_serving, as academy.serve does)."""
from __future__ import annotations

from typing import Any


def post_worker_init(worker: Any) -> None:  # gunicorn.workers.base.Worker, after it loaded the app
    from academy.runners import start_serving

    start_serving(worker.wsgi)
