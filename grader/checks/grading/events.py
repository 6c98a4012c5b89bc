"""The recorded event kinds, for an exercise's checks/test_*.py (the grading process): defined in
grader/core/events.py, which both sides of the channel read (the learner's spies write these kinds, the grading
side checks them)."""
from grader.core.events import AMENDABLE, EVENTS, EventKind, MalformedEvent, check_event, fields_of, table

__all__ = ["AMENDABLE", "EVENTS", "EventKind", "MalformedEvent", "check_event", "fields_of", "table"]
