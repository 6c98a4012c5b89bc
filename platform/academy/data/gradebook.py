"""What each learner has done, for instructors: a per-learner record and the gradebook as CSV.

Grades are 0-100: an exercise's is the best score of the learner's graded submissions; a lesson quiz's is the
share of its questions whose *first* answer was right (later tries teach, they do not count). Work never
tried is a blank cell, not a 0 (an LMS import would record a real zero); `untried="zero"` (the setting
DLA_GRADEBOOK_UNTRIED, or the download's choice) writes 0 instead, for a course past its deadline. The CSV
comes in three shapes (`FORMATS`): plain (accounts; guests only when asked for), Canvas's gradebook import
(its own leading columns: the name, Canvas's ID left blank, the SIS id, the email as SIS login) and Moodle's
"Import grades from CSV" (an email column to map users by). The Canvas and Moodle shapes follow the
vendors' documentation (docs/web.md, "Gradebook") and were not tried against a live Canvas or Moodle.

An LMS puts a row's grades under whoever has the row's email, so the Canvas and Moodle files hold only an
address somebody proved (`matching_email`): an account's address once confirmed (academy/web/confirmation.py), or,
for a learner who came through an LTI launch, the address their LMS asserted. An unconfirmed address is never
exported there (anyone could have typed a classmate's at sign-up); an account with neither such an address nor
an SIS id is left out of those files. The plain file shows every address, and whether it is confirmed.
"""
from __future__ import annotations

import csv
import io
import json
import re
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Callable

from sqlalchemy import func, select

from academy.data.db import get_session
from academy.data.models import (
    GRADED,
    HintReveal,
    JobStatus,
    LessonProgress,
    LtiIdentity,
    QuizAnswer,
    StepVisit,
    Submission,
    User,
)
from grader.core.course import Course


@dataclass
class LearnerRecord:
    """One learner across the course."""
    user: User
    steps_seen: dict[str, int] = field(default_factory=dict)  # lesson id -> steps opened that still exist
    attempts: dict[str, int] = field(default_factory=dict)  # exercise id -> submissions
    best: dict[str, float] = field(default_factory=dict)  # exercise id -> best score, 0-100
    last: dict[str, Submission] = field(default_factory=dict)  # exercise id -> latest submission
    passed: set[str] = field(default_factory=set)  # exercise ids with a passing submission
    first_try: dict[tuple[str, str], bool] = field(default_factory=dict)  # (lesson, question) -> first right?
    hints: dict[str, int] = field(default_factory=dict)  # exercise id -> hints the learner opened
    resume: dict[str, str] = field(default_factory=dict)  # lesson id -> step id last opened
    lms_email: str | None = None  # what an LMS asserted at the learner's LTI launch (LtiIdentity.email)

    @property
    def matching_email(self) -> str | None:
        """The address an LMS may match this learner by: the one their LMS asserted, else the account's once
        confirmed; never an unconfirmed one."""
        if self.lms_email:
            return self.lms_email
        return self.user.email if self.user.email_confirmed else None

    def quiz_grade(self, course: Course, lesson_id: str) -> float | None:
        """The share of the quiz's questions right at the first try; None when none of them was answered."""
        quiz = course.lesson(lesson_id).quiz
        if quiz is None or not quiz.questions or not any((lesson_id, q.id) in self.first_try for q in quiz.questions):
            return None
        right = sum(self.first_try.get((lesson_id, q.id), False) for q in quiz.questions)
        return round(100 * right / len(quiz.questions), 1)


def learner_ids(page: int, per_page: int, guests: bool = True) -> tuple[list[int], int]:
    """One page of learners (not instructors) with any activity, newest first, and how many there are;
    without the guests when `guests` is false."""
    db = get_session()
    active = select(Submission.user_id).union(select(QuizAnswer.user_id), select(LessonProgress.user_id))
    where = (User.role != "instructor") & User.id.in_(active)
    if not guests:
        where = where & User.is_guest.is_(False)
    total = db.scalar(select(func.count()).select_from(User).where(where)) or 0
    ids = db.scalars(select(User.id).where(where).order_by(User.id.desc())
                     .offset((page - 1) * per_page).limit(per_page)).all()
    return list(ids), total


def records(course: Course, user_ids: list[int]) -> list[LearnerRecord]:
    """The records of these learners, in the order given (a few queries for the whole list)."""
    if not user_ids:
        return []
    db = get_session()
    users = {u.id: u for u in db.scalars(select(User).where(User.id.in_(user_ids)))}
    found = {uid: LearnerRecord(users[uid]) for uid in user_ids if uid in users}
    steps = {lesson.id: set(lesson.step_ids) for lesson in course.lessons}
    seen: dict[int, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for uid, lesson_id, step_id in db.execute(select(StepVisit.user_id, StepVisit.lesson_id, StepVisit.step_id)
                                              .where(StepVisit.user_id.in_(found))):
        if step_id in steps.get(lesson_id, ()):
            seen[uid][lesson_id] += 1
    for uid, per_lesson in seen.items():
        found[uid].steps_seen = dict(per_lesson)
    for uid, email in db.execute(select(LtiIdentity.user_id, LtiIdentity.email).where(LtiIdentity.user_id.in_(found))):
        found[uid].lms_email = email
    for row in db.scalars(select(LessonProgress).where(LessonProgress.user_id.in_(found))):
        found[row.user_id].resume[row.lesson_id] = row.step_id
    for sub in db.scalars(select(Submission).where(Submission.user_id.in_(found), GRADED).order_by(Submission.id)):
        record = found[sub.user_id]
        record.attempts[sub.exercise_id] = record.attempts.get(sub.exercise_id, 0) + 1
        record.last[sub.exercise_id] = sub
        if sub.passed:
            record.passed.add(sub.exercise_id)
        if sub.status == JobStatus.DONE and sub.result_json:
            score = round(100 * float(json.loads(sub.result_json).get("score", 0.0)), 1)
            record.best[sub.exercise_id] = max(record.best.get(sub.exercise_id, 0.0), score)
    for uid, lesson_id, question_id, correct in db.execute(
            select(QuizAnswer.user_id, QuizAnswer.lesson_id, QuizAnswer.question_id, QuizAnswer.correct)
            .where(QuizAnswer.user_id.in_(found)).order_by(QuizAnswer.id)):
        found[uid].first_try.setdefault((lesson_id, question_id), bool(correct))
    for uid, exercise_id, count in db.execute(
            select(HintReveal.user_id, Submission.exercise_id, func.count()).join(Submission)
            .where(HintReveal.user_id.in_(found)).group_by(HintReveal.user_id, Submission.exercise_id)):
        found[uid].hints[exercise_id] = count
    return [found[uid] for uid in user_ids if uid in found]


def all_records(course: Course, guests: bool = True) -> list[LearnerRecord]:
    """Every learner with any activity, oldest account first (a gradebook's stable order)."""
    ids, _total = learner_ids(1, 10**9, guests)
    return records(course, sorted(ids))


# -- CSV -----------------------------------------------------------------------------------------------

Grade = Callable[[LearnerRecord], "float | None"]  # None: never tried


def _columns(course: Course) -> list[tuple[str, Grade]]:
    """(column title, grade of a record) for every exercise and every lesson quiz, in course order."""
    columns: list[tuple[str, Grade]] = []
    for lesson in course.lessons:
        for exercise in lesson.exercises:
            columns.append((f"{exercise.title} [{exercise.id}]", lambda r, ex=exercise.id: r.best.get(ex)))
        if lesson.quiz is not None:
            columns.append((f"Quiz: {lesson.title} [{lesson.id}/quiz]",
                            lambda r, lid=lesson.id: r.quiz_grade(course, lid)))
    return columns


UNTRIED = ("blank", "zero")  # what a cell of work never tried holds: DLA_GRADEBOOK_UNTRIED


def _grades(record: LearnerRecord, columns: list[tuple[str, Grade]], untried: str) -> list[str]:
    cells = []
    for _title, grade in columns:
        value = grade(record)
        cells.append(f"{value:g}" if value is not None else ("0" if untried == "zero" else ""))
    return cells


# Every line break a reader may split lines at: \r and \n, and the others str.splitlines() knows (vertical tab,
# form feed, the file/group/record separators, NEL, the Unicode line and paragraph separators).
_LINE_BREAKS = "\r\n\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029"
# Wherever a reader may start a cell inside this one (the cell's start, after any separator it may be set to
# split on, "," ";" tab "|", after any line break, after a quote when it splits before unquoting), then blanks,
# then what a spreadsheet reads as the start of a formula.
_FORMULA_START = re.compile(rf'(^|[,;\t|"{_LINE_BREAKS}])([^\S\t{_LINE_BREAKS}]*)(?=[=+\-@\t\r])')


def _text(value: str) -> str:
    """A learner-chosen text cell (an email) no spreadsheet reads as a formula, whatever it splits on: an
    apostrophe before every place a formula could start (OWASP's CSV injection advice, applied to each
    possible cell, not only the first). Sign-up refuses such emails now; accounts made before may have them."""
    return _FORMULA_START.sub(r"\1\2'", value)


def plain_csv(course: Course, rows: list[LearnerRecord], untried: str = "blank") -> list[list[str]]:
    columns = _columns(course)
    table = [["learner_id", "name", "email", "sis_id", "guest", "email_confirmed"] + [title for title, _ in columns]]
    for record in rows:
        user = record.user
        table.append([str(user.id), _text(user.name or ""), _text(user.email or ""), _text(user.sis_id or ""),
                      "yes" if user.is_guest else "no", "yes" if user.email_confirmed else "no"]
                     + _grades(record, columns, untried))
    return table


def _matchable(record: LearnerRecord) -> bool:
    """An account an LMS can match by one of its ids: a proven address or an SIS id (a guest has neither)."""
    return not record.user.is_guest and bool(record.matching_email or record.user.sis_id)


def canvas_csv(course: Course, rows: list[LearnerRecord], untried: str = "blank") -> list[list[str]]:
    """Canvas's gradebook import: Student, ID, SIS User ID, SIS Login ID, Section, then one column per
    assignment (a name Canvas does not know becomes a new assignment), and a "Points Possible" row.
    Canvas matches a row by ID, else SIS User ID, else SIS Login ID: ID is Canvas's own number, which this
    site does not know (left blank); SIS User ID is the account's SIS id (an instructor sets it, an LTI
    launch brings it); SIS Login ID is the matching email (a confirmed address, or the LMS's own), which
    matches where the institution's Canvas logins are email addresses. Student is the account's name (Canvas
    shows it, it does not match by it)."""
    columns = _columns(course)
    table = [["Student", "ID", "SIS User ID", "SIS Login ID", "Section"] + [title for title, _ in columns],
             ["Points Possible", "", "", "", ""] + ["100"] * len(columns)]
    for record in rows:
        user = record.user
        if not _matchable(record):
            continue
        table.append([_text(user.name or record.matching_email or ""), "", _text(user.sis_id or ""),
                      _text(record.matching_email or ""), ""] + _grades(record, columns, untried))
    return table


def moodle_csv(course: Course, rows: list[LearnerRecord], untried: str = "blank") -> list[list[str]]:
    """Moodle's "Import grades from CSV": map "Email address" to the user field "Email address" under
    "Identify user by" (or "ID number" to "ID number", where the SIS id is Moodle's idnumber), and each grade
    column to a grade item (or "New grade item"). A blank cell leaves that grade as it is. "Email address" is
    the matching email (a confirmed address, or for an LMS learner the LMS's own), blank without one."""
    columns = _columns(course)
    table = [["Email address", "ID number", "Full name"] + [title for title, _ in columns]]
    for record in rows:
        user = record.user
        if not _matchable(record):
            continue
        table.append([_text(record.matching_email or ""), _text(user.sis_id or ""), _text(user.name or "")]
                     + _grades(record, columns, untried))
    return table


FORMATS: dict[str, Callable[[Course, list[LearnerRecord], str], list[list[str]]]] = {
    "plain": plain_csv, "canvas": canvas_csv, "moodle": moodle_csv,
}


def gradebook_csv(course: Course, shape: str, untried: str = "blank", guests: bool = False) -> str:
    """The whole gradebook in one of FORMATS, as CSV text (KeyError for an unknown shape). Guests are in the
    plain shape only, and only when `guests` is true (an abandoned guest is nobody's grade); an LMS cannot
    match them anyway."""
    table = FORMATS[shape](course, all_records(course, guests=guests and shape == "plain"), untried)
    out = io.StringIO()
    csv.writer(out, lineterminator="\r\n", quoting=csv.QUOTE_ALL).writerows(table)  # no cell runs into the next
    return out.getvalue()
