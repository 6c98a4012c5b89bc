"""The interface's phrases that the pages' scripts and the status words need in the page's language."""
from __future__ import annotations

from typing import Any

from flask import g
from flask_babel import lazy_gettext, lazy_pgettext

# What static/lesson.js and figures.js write into exercise pages, translated for the page (`js_text`);
# %(name)s-style placeholders are filled in by lesson.js.
JS_MESSAGES = [
    lazy_gettext("Draft kept in this browser"), lazy_gettext("Saving draft…"), lazy_gettext("Draft saved"),
    lazy_gettext("Running your code"), lazy_gettext("Queued"), lazy_gettext("All checks passed. Well done!"),
    lazy_gettext("Your code ran out of time."),
    lazy_gettext("Your code was stopped."),
    lazy_gettext("Your code could not be checked."), lazy_gettext("The grader failed; your submission is saved."),
    lazy_gettext("%(passed)s of %(total)s checks passed."), lazy_gettext("Show a hint"),
    lazy_gettext("Show the next hint"), lazy_gettext("No submissions yet."), lazy_gettext("Run finished"),
    lazy_gettext("Run stopped"), lazy_gettext("Printed output"), lazy_gettext("Returned"),
    lazy_gettext("Code editor: your %(name)s solution"), lazy_gettext("View"), lazy_gettext("Restore"),
    lazy_gettext("Diff with previous"), lazy_gettext("When"), lazy_gettext("Score"), lazy_gettext("Status"),
    lazy_gettext("Draft not kept (this browser blocks storage)"), lazy_gettext("Draft not saved (%(status)s)"),
    lazy_gettext("Draft not saved (offline?)"), lazy_gettext("Reset to the starter code (Ctrl+Z undoes it)."),
    lazy_gettext("line %(line)s"), lazy_gettext("Grading failed; your submission is saved. Try again."),
    lazy_gettext("Not judged: %(check)s explains it."), lazy_gettext("an earlier check"),
    lazy_gettext("Output of your code"), lazy_gettext("(truncated)"), lazy_gettext("Graded in %(seconds)s s."),
    lazy_gettext("Graded in %(seconds)s s on %(device)s."), lazy_gettext("Hint"),
    lazy_gettext("Hint %(number)s of %(total)s"), lazy_gettext("Could not show the hint (%(status)s)"),
    lazy_gettext("passed"), lazy_gettext("failed"), lazy_gettext("error"), lazy_gettext("timed out"),
    lazy_gettext("stopped"), lazy_gettext("grader failed"), lazy_gettext("queued"), lazy_gettext("running"),
    lazy_gettext("Could not load your attempts (%(status)s)."), lazy_gettext("Could not load it."),
    lazy_gettext("Restored submission #%(id)s into the editor (Ctrl+Z undoes it)."),
    lazy_gettext("Submission #%(id)s is in the editor."), lazy_gettext("Submission #%(id)s against #%(previous)s"),
    lazy_gettext("Submission #%(id)s"), lazy_gettext("Not available (%(status)s)."),
    lazy_gettext("Could not fetch the result (%(status)s)."),
    lazy_gettext("Could not reach the server. Your code is still in the editor; try again."),
    lazy_gettext("Submitting failed (%(status)s)."), lazy_gettext("The Run failed; try again."),
    lazy_gettext("(nothing printed)"), lazy_gettext("Ran once on the example in %(seconds)s s. Not graded: Submit to "
                                                    "check it."),
    lazy_gettext("Ran once on the example in %(seconds)s s on %(device)s. Not graded: Submit to check it."),
    lazy_gettext("Running your function on the example…"), lazy_gettext("Run failed (%(status)s)."),
    lazy_gettext("Could not fetch the Run (%(status)s)."),
    # lesson.js, the lesson page's frictions (issue 30): the device's words, a restored draft, the time limit, and
    # the older panel folded under the newest
    lazy_gettext("cpu (cuda emulated)"), lazy_gettext("Your draft, saved %(when)s"),
    lazy_gettext("Your draft from an earlier visit"), lazy_gettext("stops after %(seconds)s s"),
    lazy_gettext("Earlier Run, before this submission"), lazy_gettext("Earlier verdict, before this Run"),
    # lesson.js: how long a 429 (too many Runs or submissions) asks the learner to wait (its `retry_after`)
    lazy_gettext("Try again in %(seconds)s s."),
    # lesson.js (issue 53): a stopped run's headline by what stopped it; why Run and Submit wait
    lazy_gettext("Your code printed too much output and was stopped."),
    lazy_gettext("Your code ran out of memory and was stopped."),
    lazy_gettext("Run and Submit wait until this submission's verdict arrives."),
    lazy_gettext("Run and Submit wait until this Run ends."),
    lazy_gettext("cpu"),  # the device where the run used no CUDA emulation
    # figures.js: its own headings and labels (the figures' titles and captions come from the grader)
    lazy_gettext("What your code did"), lazy_gettext("Line"), lazy_gettext("Call"), lazy_gettext("Autocast"),
    lazy_gettext("Output dtype"), lazy_gettext("Backward on"), lazy_gettext("Gradients"),
    lazy_pgettext("optimizer step", "Step"),
    lazy_gettext("Scale after"), lazy_gettext("on"), lazy_gettext("off"),
    lazy_gettext("%(title)s (%(group_label)s %(group)s of %(groups)s)"),
]

# The status words instructor pages show in badges (`_(status)`): of jobs, validation runs and results.
STATUSES = [lazy_gettext("queued"), lazy_gettext("running"), lazy_gettext("done"), lazy_gettext("ok"),
            lazy_gettext("passed"), lazy_gettext("failed"), lazy_gettext("error"), lazy_gettext("timeout"),
            lazy_gettext("killed"), lazy_gettext("infra-error"), lazy_gettext("not run")]


# CodeMirror's own phrases (EditorState.phrases) in the extensions the editor bundle includes (basicSetup:
# search, go to line, folding, completion, lint panel); "$" is CodeMirror's placeholder.
EDITOR_PHRASES = [
    lazy_pgettext("code editor", "Find"), lazy_pgettext("code editor", "Replace"),
    lazy_pgettext("code editor", "next"), lazy_pgettext("code editor", "previous"),
    lazy_pgettext("code editor", "all"), lazy_pgettext("code editor", "match case"),
    lazy_pgettext("code editor", "regexp"), lazy_pgettext("code editor", "by word"),
    lazy_pgettext("code editor", "replace"), lazy_pgettext("code editor", "replace all"),
    lazy_pgettext("code editor", "close"), lazy_pgettext("code editor", "current match"),
    lazy_pgettext("code editor", "on line"), lazy_pgettext("code editor", "replaced match on line $"),
    lazy_pgettext("code editor", "replaced $ matches"), lazy_pgettext("code editor", "Go to line"),
    lazy_pgettext("code editor", "go"), lazy_pgettext("code editor", "Folded lines"),
    lazy_pgettext("code editor", "Unfolded lines"), lazy_pgettext("code editor", "to"),
    lazy_pgettext("code editor", "folded code"), lazy_pgettext("code editor", "unfold"),
    lazy_pgettext("code editor", "Fold line"), lazy_pgettext("code editor", "Unfold line"),
    lazy_pgettext("code editor", "Completions"), lazy_pgettext("code editor", "Diagnostics"),
    lazy_pgettext("code editor", "No diagnostics"), lazy_pgettext("code editor", "Selection deleted"),
    lazy_pgettext("code editor", "Control character"),
]


def msgid(message: Any) -> str:
    """A lazy message's English text (the last argument: lazy_pgettext's first is its context)."""
    return message._args[-1]


def js_text() -> dict[str, str]:
    """English message -> this page's translation, for lesson.js (empty in English: it has the English)."""
    if g.get("language", "en") == "en":
        return {}
    return {msgid(message): str(message) for message in JS_MESSAGES}


def editor_phrases() -> dict[str, str]:
    """CodeMirror's English phrase -> this page's translation (empty in English)."""
    if g.get("language", "en") == "en":
        return {}
    return {msgid(phrase): str(phrase) for phrase in EDITOR_PHRASES}
