"""The names LTI 1.3 gives a launch's claims, and this site's limits on them (every module of academy.lti reads
them here)."""
from __future__ import annotations

import re

CUSTOM = "https://purl.imsglobal.org/spec/lti/claim/custom"
DEPLOYMENT = "https://purl.imsglobal.org/spec/lti/claim/deployment_id"
RESOURCE_LINK = "https://purl.imsglobal.org/spec/lti/claim/resource_link"
AGS = "https://purl.imsglobal.org/spec/lti-ags/claim/endpoint"
LIS = "https://purl.imsglobal.org/spec/lti/claim/lis"
TARGET = "dla_target"  # the custom parameter a deep link sets: "exercise:<id>" or "lesson:<id>"
LAUNCH_LIFETIME_S = 3600  # a deep-linking launch waits this long for the instructor's pick
SCORE_SCOPE = "https://purl.imsglobal.org/spec/lti-ags/scope/score"
ROLES = "https://purl.imsglobal.org/spec/lti/claim/roles"
MESSAGE_TYPE = "https://purl.imsglobal.org/spec/lti/claim/message_type"


# The context (course membership) roles that may choose what the LMS links to: the course's instructors, content
# developers and administrators. Institution roles (.../institution/person#Instructor, #Faculty, #Staff) say
# nothing about this course: a learner of it may hold one.
DEEP_LINKING_ROLES = frozenset(f"http://purl.imsglobal.org/vocab/lis/v2/membership#{role}"
                               for role in ("Instructor", "ContentDeveloper", "Administrator"))
MAX_CLAIM = 255  # the longest `sub`, resource link id ... a launch may carry (the columns they are kept in)
SESSION_ID = re.compile(r"[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}")  # PyLTI1p3's uuid4
