"""The deep-linking pick: the course's instructor chose a lesson or an exercise in the picker the launch showed,
and a signed deep-linking response goes back to the platform (an exercise with a line item of 100 points)."""
from __future__ import annotations

from flask import flash, g, render_template, request, url_for
from flask.typing import ResponseReturnValue

from academy.data.accounts import gettext
from academy.lti import pylti
from academy.lti.blueprint import bp, current_course, refused
from academy.lti.claims import TARGET
from academy.lti.registration import find_platform, public_base


@bp.post("/deep-link")
def deep_link() -> ResponseReturnValue:
    """The instructor picked a lesson or an exercise: a signed deep-linking response for the launch, posted to the
    platform by this browser. The launch is found only in the browser that made it (its LTI session id), and
    answers once."""
    from pylti1p3.deep_link_resource import DeepLinkResource
    from pylti1p3.exception import LtiException
    from pylti1p3.lineitem import LineItem

    launch_id = request.form.get("launch_id", "")
    try:
        message_launch = pylti.message_launch(launch_id) if launch_id.startswith("lti1p3-launch-") else None
    except LtiException:
        message_launch = None
    if message_launch is None or not message_launch.is_deep_link_launch():
        return refused(gettext("This choice belongs to no deep-linking launch of this browser (it may have been "
                                "answered already, or be older than an hour). Start again from the LMS."), 400)
    platform = find_platform(message_launch.get_iss(), message_launch.get_client_id())
    if platform is None:
        return refused(gettext("This LMS is no longer registered here."), 403)
    g.lti_platform = platform
    course = current_course()
    target = request.form.get("target", "")
    kind, _, item = target.partition(":")
    if kind == "exercise" and item in course.exercises:
        exercise = course.exercises[item]
        title = exercise.title
    elif kind == "lesson" and item in {lesson.id for lesson in course.lessons}:
        exercise, title = None, course.lesson(item).title
    else:
        flash(gettext("Choose a lesson or an exercise."), "error")
        return render_template("lti/pick.html", launch_id=launch_id, course=course, platform=platform), 400
    # One signed answer per launch: the launch is used up here, before anything is signed, by a DELETE that only
    # one request can win; the others (a double click, six tabs) are told it was answered.
    if not pylti.storage_for_launch().take(launch_id):
        return refused(gettext("This deep-linking launch was answered already. Start again from the LMS."), 409)
    base = public_base()
    resource = (DeepLinkResource().set_url(f"{base}{url_for('lti.launch')}").set_title(title)
                .set_custom_params({TARGET: target}).set_target("window"))
    if exercise is not None:
        resource.set_lineitem(LineItem().set_score_maximum(100).set_label(title).set_resource_id(exercise.id)
                              .set_tag(f"dla:{exercise.id}"))
    deep_link = message_launch.get_deep_link()
    jwt_value = deep_link.get_response_jwt([resource])
    return_url = message_launch.get_launch_data()[
        "https://purl.imsglobal.org/spec/lti-dl/claim/deep_linking_settings"]["deep_link_return_url"]
    return render_template("lti/return.html", return_url=return_url, jwt=jwt_value, title=title)
