"""Apps in the test's own process: created and made ready as `flask --app academy init-db` leaves an instance
(on a copy of one database migrated once per test process), and driven through Flask's test client the way
the pages drive it (the CSRF token kept, sign-up's name given)."""
from __future__ import annotations

import atexit
import re
import shutil
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # Flask and the app load when an app is made, not when this module is imported
    from flask import Flask
    from flask.testing import FlaskClient

    from academy.data.models import Submission


def ready_app(config: dict[str, Any]) -> Flask:
    """create_app(config), then its instance made ready (academy.instance.init_instance, what `init-db` runs)."""
    from academy import create_app

    return ready_instance(create_app(config))


def ready_instance(app: Flask) -> Flask:
    """`init-db` for `app`'s instance. Its default SQLite database starts as a copy of one migrated once per
    test run (the migrations take a sixth of a second per app; tests/deploy runs them for real); init-db's
    own code then finds it at the newest migration and makes the rest (folder, secret key) as it would."""
    from academy.instance import init_instance
    from academy.settings import settings

    database = Path(app.instance_path) / "academy.sqlite"
    if settings(app).database_url == f"sqlite:///{database}" and not database.exists():
        database.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(_migrated_database(), database)
    init_instance(app)
    return app


_MIGRATED: list[Path] = []


def _migrated_database() -> Path:
    """An empty SQLite database at the newest migration, made by init-db's code once per test process."""
    if not _MIGRATED:
        from academy import create_app
        from academy.instance import init_instance

        folder = Path(tempfile.mkdtemp(prefix="dla-migrated-"))
        app = create_app({"INSTANCE_PATH": str(folder), "SECRET_KEY": "template", "REQUEUE_ON_START": False})
        init_instance(app)
        app.extensions["academy.engine"].dispose()  # the last connection folds SQLite's WAL into the file
        _MIGRATED.append(folder / "academy.sqlite")
        atexit.register(shutil.rmtree, folder, ignore_errors=True)
    return _MIGRATED[0]



def name_of(email: str) -> str:
    """The display name a test's sign-up gives (sign-up asks for one): the email's local part, capitalised."""
    return email.split("@")[0].replace(".", " ").title() or "Learner"


class WebSession:
    """A test client that keeps the CSRF token like the real pages do."""

    def __init__(self, client: FlaskClient):
        self.client = client

    def csrf(self) -> str:
        page = self.client.get("/").get_data(as_text=True)
        return re.search(r'name="csrf-token" content="([^"]+)"', page).group(1)

    def post(self, url: str, **kwargs: Any):  # noqa: ANN201
        data = kwargs.pop("data", {})
        return self.client.post(url, data={"csrf_token": self.csrf(), **data}, **kwargs)

    def api(self, method: str, url: str, json: Any = None, **kwargs: Any):  # noqa: ANN201
        headers = {"X-CSRF-Token": self.csrf(), **kwargs.pop("headers", {})}
        return self.client.open(url, method=method, json=json, headers=headers, **kwargs)

    def guest(self) -> "WebSession":
        self.post("/auth/guest")
        return self

    def signup(self, email: str, password: str = "password123", name: str | None = None):  # noqa: ANN201
        return self.post("/auth/signup", data={"email": email, "password": password,
                                               "name": name if name is not None else name_of(email)})

    def signin(self, email: str, password: str = "password123"):  # noqa: ANN201
        return self.post("/auth/signin", data={"email": email, "password": password})


def new_session(app: Flask) -> WebSession:
    return WebSession(app.test_client())


def wait_for(app: Flask, submission_id: int, timeout: float = 120) -> Submission:
    from academy.data.db import get_session
    from academy.data.models import Submission

    deadline = time.monotonic() + timeout
    while True:
        with app.app_context():
            submission = get_session().get(Submission, submission_id)
            if submission.status in ("done", "error"):
                return submission
        if time.monotonic() > deadline:
            raise AssertionError(f"submission {submission_id} still {submission.status}")
        time.sleep(0.2)


def make_instructor(app: Flask, email: str = "teacher@example.org") -> WebSession:
    """A new instructor account on `app`, signed in."""
    from academy.data.db import get_session
    from academy.web.auth import create_account

    with app.app_context():
        create_account(email, "password123", role="instructor")
        get_session().commit()
    teacher = new_session(app)
    teacher.signin(email)
    return teacher
