"""The database tables, one module a concern (`db.py` owns the engine and sessions; Alembic, migrations/, owns the
schema). Every table is named here, so importing the package registers them all."""
from academy.data.models.base import Base, utcnow
from academy.data.models.learning import (
    GRADED,
    PENDING,
    REGRADE_BUSY,
    Draft,
    HintReveal,
    JobStatus,
    LessonProgress,
    QuizAnswer,
    RegradeRun,
    StepVisit,
    Submission,
    SubmissionKind,
    ValidationRun,
    ValidationStatus,
    stored_result,
)
from academy.data.models.lti import LtiDeployment, LtiGradeLink, LtiIdentity, LtiPlatform, LtiValue
from academy.data.models.tutor import TutorMessage
from academy.data.models.users import (
    NAME_MAX,
    SIS_ID_MAX,
    ApiToken,
    SigninFailure,
    SignupLinkMail,
    User,
    new_session_secret,
)

__all__ = ["GRADED", "NAME_MAX", "PENDING", "REGRADE_BUSY", "SIS_ID_MAX", "ApiToken", "Base", "Draft", "HintReveal",
           "JobStatus", "LessonProgress", "LtiDeployment", "LtiGradeLink", "LtiIdentity", "LtiPlatform", "LtiValue",
           "QuizAnswer", "RegradeRun", "SignupLinkMail", "SigninFailure", "StepVisit", "Submission", "SubmissionKind",
           "TutorMessage", "User", "ValidationRun", "ValidationStatus", "new_session_secret", "stored_result", "utcnow"]
