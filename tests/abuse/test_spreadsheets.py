"""What learners type reaches the instructor's spreadsheet as text, against the running server: sign-up refuses
emails a CSV reader could split or unquote and names with control characters or line breaks, and every gradebook
shape quotes every cell and puts an apostrophe
wherever a formula could start, for a reader that splits on ",", ";" (many European locales), tab or "|",
or splits lines (at any separator str.splitlines() knows) before unquoting; accounts made before the check
included."""
from __future__ import annotations

import csv
import io

from sqlalchemy import update
from sqlalchemy.orm import Session

from academy.data.models import LessonProgress, User
from tests.abuse.databases import admin
from tests.support.clients import Client
from tests.support.servers import LiveServer

REFUSED = ["x;=2+5;@evil.io", "a,=1@evil.io", 'q"=1@evil.io', "tab\t=1@evil.io", "s p@evil.io", "l\n=1@evil.io",
           "bell\x07@evil.io", "pipe|=1@evil.io", "tick`=1@evil.io", "nbsp\u00a0=1@evil.io"]
# Accounts from before sign-up checked emails: the gradebook must still be safe with them.
LEGACY = ["old;=2+5;@evil.io", "a,=1@old.io", 'q;"=1@old.io', "t;\t=1@old.io", "sp; =1@old.io", "l\r\n=1@old.io",
          "p|@old.io", "=HYPERLINK(\"http://evil.io\")@old.io", "-2+3@old.io", "nb;\u00a0@old.io"]
# Every line separator str.splitlines() knows besides \r and \n: a reader may split lines at any of them.
LINE_SEPARATORS = "\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
LEGACY += [f"ls{ord(separator):x}{separator}=1@old.io" for separator in LINE_SEPARATORS]
FORMULA = ("=", "+", "-", "@", "\t", "\r")
HEADERS = {"plain": '"learner_id","name","email","sis_id","guest",',
           "canvas": '"Student","ID","SIS User ID","SIS Login ID",',
           "moodle": '"Email address","ID number","Full name",'}  # every cell quoted, the header's too
# Names are learner-chosen text too (sign-up asks for one; a name with a formula start is a fine name).
NAMES_REFUSED = ["tab\t=1", "l\n=1", "bell\x07", "ls\u2028=1", "nul\x00"]


def _starts_a_formula(cell: str) -> bool:
    return cell.lstrip(" \u00a0")[:1] in FORMULA and cell.strip() != ""


def _formula_cells(body: str) -> list[tuple[str, str]]:
    """Every cell a spreadsheet would read as a formula, for each way it may split the file."""
    found = []
    for delimiter in (",", ";", "\t", "|"):
        for row in csv.reader(io.StringIO(body, newline=""), delimiter=delimiter):
            found += [(delimiter, cell) for cell in row if _starts_a_formula(cell)]
        for line in body.splitlines():  # lines first (at every separator Python knows), then cells
            found += [(f"naive {delimiter!r}", cell) for cell in line.split(delimiter)
                      if _starts_a_formula(cell.strip(' "'))]
    return found


def test_sign_up_refuses_emails_a_spreadsheet_could_split(shared_server: LiveServer) -> None:
    for n, email in enumerate(REFUSED):
        refused = Client(shared_server, f"127.0.14.{n + 1}").signup(email)
        assert refused.status == 400 and "valid email" in refused.text, email
    assert Client(shared_server, "127.0.14.30").signup("o'brien+course@example.org").status == 302
    for n, name in enumerate(NAMES_REFUSED):
        refused = Client(shared_server, f"127.0.14.{n + 31}").signup(f"named{n}@example.org", name=name)
        assert refused.status == 400 and "control characters or line breaks" in refused.text, name
    assert Client(shared_server, "127.0.14.39").signup("formula@example.org", name="=1+2, @SUM").status == 302


def _legacy_account(db: Session, email: str) -> None:
    """An account as the sign-up of before made it (no check of its email), with some activity so the
    gradebook lists it."""
    user = User(email=email, name=email, sis_id=f"sis-{email}", role="learner", is_guest=False)
    db.add(user)
    db.flush()
    db.add(LessonProgress(user_id=user.id, lesson_id="mixed-precision", step_id="meet-autocast"))


def test_no_cell_of_any_gradebook_starts_a_formula(shared_server: LiveServer) -> None:
    teacher = Client(shared_server, "127.0.14.40")
    assert teacher.signup("csv-teacher@example.org").status == 302
    with admin(shared_server) as db:
        db.execute(update(User).where(User.email == "csv-teacher@example.org").values(role="instructor"))
        for email in LEGACY:
            _legacy_account(db, email)
    for shape in ("plain", "canvas", "moodle"):
        download = teacher.get(f"/instructor/gradebook.csv?format={shape}")
        assert download.status == 200, shape
        assert _formula_cells(download.text) == [], shape
        # Read as CSV, the text is all there, quoted: an apostrophe marks each place a formula could start.
        assert download.text.startswith(HEADERS[shape]) and '"old;\'=2+5;\'@evil.io"' in download.text, shape
        assert '"sis-old;\'=2+5;\'@evil.io"' in download.text, shape  # the SIS id, an instructor's text, too
