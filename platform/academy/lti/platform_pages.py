"""The registration pages (instructors; `flask --app academy lti-register` for operators): the tool's URLs to
give an LMS, the registrations (add, add a deployment, edit in place, remove once confirmed), and the scores an LMS
refused."""
from __future__ import annotations

from flask import abort, flash, redirect, render_template, request, url_for
from flask.typing import ResponseReturnValue
from sqlalchemy import func, select
from sqlalchemy.exc import IntegrityError

from academy.data.accounts import AccountError, gettext
from academy.data.db import get_session
from academy.data.models import LtiGradeLink, LtiIdentity, LtiPlatform
from academy.lti.blueprint import bp
from academy.lti.registration import (
    PlatformForm,
    active_platforms,
    add_deployment,
    edit_platform,
    public_base,
    register_platform,
    remove_platform,
    tool_urls,
)
from academy.web.security import instructor_required


def _platform_form() -> PlatformForm:
    return PlatformForm(name=request.form.get("name", ""), issuer=request.form.get("issuer", ""),
                        client_id=request.form.get("client_id", ""),
                        auth_login_url=request.form.get("auth_login_url", ""),
                        auth_token_url=request.form.get("auth_token_url", ""),
                        key_set_url=request.form.get("key_set_url", ""),
                        deployment_ids=tuple(request.form.get("deployment_ids", "").split()),
                        auth_audience=request.form.get("auth_audience", ""))


@bp.route("/platforms", methods=["GET", "POST"])
@instructor_required
def platforms() -> ResponseReturnValue:
    db = get_session()
    status = 200
    form = None
    if request.method == "POST":
        form = _platform_form()
        try:
            platform = register_platform(form)
        except AccountError as exc:
            db.rollback()
            flash(str(exc), "error")
            status = 400
        else:
            db.commit()
            flash(gettext("Registered %(name)s. Give the LMS the tool's URLs below.", name=platform.name), "info")
            return redirect(url_for("lti.platforms"), 303)
    rows = db.scalars(active_platforms().order_by(LtiPlatform.id)).all()
    learners = dict(db.execute(select(LtiIdentity.platform_id, func.count()).group_by(LtiIdentity.platform_id)).all())
    failing = db.scalars(select(LtiGradeLink).where(LtiGradeLink.error.is_not(None))
                         .order_by(LtiGradeLink.updated_at.desc()).limit(20)).all()
    return render_template("lti/platforms.html", platforms=rows, urls=tool_urls(public_base()), form=form,
                           learners=learners, failing=failing), status


@bp.post("/platforms/<int:platform_id>/deployments")
@instructor_required
def platform_deployment(platform_id: int) -> ResponseReturnValue:
    db = get_session()
    platform = _active_platform(platform_id)
    deployment_id = request.form.get("deployment_id", "")
    try:
        add_deployment(platform, deployment_id)
        db.commit()
    except AccountError as exc:
        db.rollback()
        flash(str(exc), "error")
    except IntegrityError:  # the same deployment added a moment ago in another tab
        db.rollback()
        flash(gettext("%(platform)s already has the deployment %(id)s.", platform=platform.name,
                      id=deployment_id.strip()), "error")
    else:
        flash(gettext("Added the deployment to %(name)s.", name=platform.name), "info")
    return redirect(url_for("lti.platforms"), 303)


def _active_platform(platform_id: int) -> LtiPlatform:
    return get_session().scalar(active_platforms().where(LtiPlatform.id == platform_id)) or abort(404)


@bp.route("/platforms/<int:platform_id>/edit", methods=["GET", "POST"])
@instructor_required
def platform_edit(platform_id: int) -> ResponseReturnValue:
    """Correct a registration in place: its name, URLs and token audience (the issuer and client id are what the
    LMS's launches are matched by: a different one is another registration)."""
    db = get_session()
    platform = _active_platform(platform_id)
    form, status = None, 200
    if request.method == "POST":
        form = _platform_form()
        try:
            edit_platform(platform, form)
        except AccountError as exc:
            db.rollback()
            platform = _active_platform(platform_id)
            flash(str(exc), "error")
            status = 400
        else:
            db.commit()
            flash(gettext("Saved the registration %(name)s.", name=platform.name), "info")
            return redirect(url_for("lti.platforms"), 303)
    return render_template("lti/edit.html", platform=platform, form=form), status


@bp.route("/platforms/<int:platform_id>/remove", methods=["GET", "POST"])
@instructor_required
def platform_remove(platform_id: int) -> ResponseReturnValue:
    """Forget a registration, once confirmed: its launches are refused from now on. The accounts its users have stay
    (their work is theirs); registering the same issuer and client id again leads their launches back to them."""
    db = get_session()
    platform = _active_platform(platform_id)
    learners = db.scalar(select(func.count()).select_from(LtiIdentity).where(LtiIdentity.platform_id == platform.id))
    if request.method == "POST":
        if request.form.get("confirm") == "remove":
            name = platform.name
            remove_platform(platform)
            db.commit()
            flash(gettext("Removed the registration %(name)s; its launches are refused from now on. Its learners keep "
                          "their accounts.", name=name), "info")
            return redirect(url_for("lti.platforms"), 303)
        flash(gettext("Nothing was removed: confirm with the button below."), "error")
        return render_template("lti/remove.html", platform=platform, learners=learners), 400
    return render_template("lti/remove.html", platform=platform, learners=learners)
