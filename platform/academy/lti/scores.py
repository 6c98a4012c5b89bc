"""Grade passback (Assignment and Grade Services): where a learner's launch said an exercise's score goes
(`remember_grade_link`), and after each graded submission the exercise's best score sent to every line item the
learner launched it from (`send_best_score`; `send_lms_scores`, the hook academy.jobs calls). A platform that
refuses or cannot be reached leaves a fixed reason on its link, for instructors; the next graded submission tries
again."""
from __future__ import annotations

import json
import logging
from typing import Any

from sqlalchemy import select

from academy.data.db import get_session
from academy.data.models import GRADED, JobStatus, LtiGradeLink, LtiIdentity, Submission, utcnow
from academy.logline import printable
from academy.lti.claims import AGS, RESOURCE_LINK, SCORE_SCOPE
from academy.lti.outbound import OutboundError
from academy.lti.pylti import outbound_session, registration_of
from academy.lti.registration import is_removed

log = logging.getLogger(__name__)


class LtiRefused(Exception):
    """A login or launch this site refuses: `message` says why, plainly; `status` is the answer's code."""

    def __init__(self, message: str, status: int = 400):
        super().__init__(message)
        self.message, self.status = message, status


# What a link's stored error says when the LMS cannot be reached or does not take the score: one fixed reason,
# never the upstream text (it may be anything the URL answered, an internal service's included), and the same
# whether the port was closed, filtered or answered.
SCORE_NOT_TAKEN = "the LMS could not be reached, or did not take the score"


def remember_grade_link(identity: LtiIdentity, exercise_id: str, data: dict[str, Any]) -> None:
    """Where this exercise's score goes for this LMS user: the launch's Assignment and Grade Services claim."""
    db = get_session()
    resource_link = str((data.get(RESOURCE_LINK) or {}).get("id", ""))
    link = db.scalar(select(LtiGradeLink).where(LtiGradeLink.identity_id == identity.id,
                                                LtiGradeLink.resource_link_id == resource_link))
    if link is None:
        link = LtiGradeLink(identity_id=identity.id, user_id=identity.user_id, resource_link_id=resource_link,
                            exercise_id=exercise_id, ags_json="{}")
        db.add(link)
    claim = data[AGS]
    if link.exercise_id != exercise_id or json.loads(link.ags_json) != claim:
        link.sent_score = None  # a new line item (or a link re-pointed) has had nothing yet
    link.exercise_id, link.ags_json, link.updated_at = exercise_id, json.dumps(claim), utcnow()


def best_score(user_id: int, exercise_id: str) -> float | None:
    """The exercise's best score for this user, 0-100, as the gradebook has it; None when nothing was graded."""
    db = get_session()
    best = None
    for (result_json,) in db.execute(select(Submission.result_json).where(
            Submission.user_id == user_id, Submission.exercise_id == exercise_id, GRADED,
            Submission.status == JobStatus.DONE)):
        if result_json:
            score = round(100 * float(json.loads(result_json).get("score", 0.0)), 1)
            best = score if best is None else max(best, score)
    return best


def send_best_score(user_id: int, exercise_id: str) -> int:
    """Send the exercise's best score to every line item this user launched it from (a grading job calls this
    after each graded submission). A platform that refuses or cannot be reached leaves its link's `error`
    set, and the next graded submission tries again. Returns how many line items took the score."""
    db = get_session()
    links = db.scalars(select(LtiGradeLink).where(LtiGradeLink.user_id == user_id,
                                                  LtiGradeLink.exercise_id == exercise_id)).all()
    if not links:
        return 0
    best = best_score(user_id, exercise_id)
    if best is None:
        return 0
    sent = 0
    for link in links:
        if link.sent_score == best and link.error is None:
            continue
        try:
            _put_score(link, best)
        except LtiRefused as exc:  # this site's own reason
            log.warning("the score of %s for user %s was not sent: %s", exercise_id, user_id, exc.message)
            link.error = exc.message
        except Exception as exc:  # noqa: BLE001 - the platform's refusal or a network failure: kept, retried later
            detail = exc.detail if isinstance(exc, OutboundError) else f"{type(exc).__name__}: {exc}"
            log.warning("sending the score of %s for user %s failed: %s", exercise_id, user_id, printable(detail))
            link.error = SCORE_NOT_TAKEN  # never the upstream text: it may be anything the URL answered
        else:
            link.sent_score, link.sent_at, link.error = best, utcnow(), None
            sent += 1
        db.commit()
    return sent


def _put_score(link: LtiGradeLink, score: float) -> None:
    from pylti1p3.assignments_grades import AssignmentsGradesService
    from pylti1p3.grade import Grade
    from pylti1p3.lineitem import LineItem
    from pylti1p3.service_connector import ServiceConnector

    from academy.content import get_content

    claim = json.loads(link.ags_json)
    if SCORE_SCOPE not in claim.get("scope", []):
        raise LtiRefused("the LMS did not allow this tool to send scores for this link")
    platform = link.identity.platform
    if is_removed(platform):
        raise LtiRefused("this LMS's registration was removed")
    service = AssignmentsGradesService(ServiceConnector(registration_of(platform), outbound_session()), claim)
    timestamp = utcnow().replace(microsecond=0).isoformat() + "Z"
    grade = (Grade().set_score_given(score).set_score_maximum(100).set_timestamp(timestamp)
             .set_activity_progress("Completed").set_grading_progress("FullyGraded").set_user_id(link.identity.sub))
    if claim.get("lineitem"):
        service.put_grade(grade)  # the resource link's own line item
        return
    try:
        title = get_content().exercise(link.exercise_id).title
    except KeyError:
        title = link.exercise_id
    lineitem = (LineItem().set_tag(f"dla:{link.exercise_id}").set_label(title).set_score_maximum(100)
                .set_resource_id(link.exercise_id).set_resource_link_id(link.resource_link_id))
    service.put_grade(grade, lineitem)  # found by its tag, or made


def send_lms_scores(user_id: int, exercise_id: str) -> None:
    """The exercise's best score to the LMS line items this learner launched it from, if any: the hook the jobs call
    after a graded verdict (academy.jobs.on_graded; they log and roll back what fails here)."""
    db = get_session()
    if db.scalar(select(LtiGradeLink.id).where(LtiGradeLink.user_id == user_id,
                                               LtiGradeLink.exercise_id == exercise_id).limit(1)) is None:
        return
    send_best_score(user_id, exercise_id)
