"""An LTI 1.3 platform (an LMS's side) for the tests, built on the `lti1p3platform` package from PyPI: it signs
the launches (resource links and deep-linking requests) with its own RSA key, publishes its JWKS, answers the
tool's OAuth 2 client-credentials requests (checking the tool's signed assertion against the tool's JWKS, over
HTTP), validates deep-linking responses, and keeps line items and the scores the tool sends (Assignment and
Grade Services). What lti1p3platform leaves abstract (storage, the HTTP framework) is filled in here with Flask
and plain dictionaries; no part of the protocol is written by hand.

    lms = Lms("https://lms.example", client_id="tool-1", deployment_id="dep-1")
    lms.connect(tool_base)              # the tool's login, launch and JWKS URLs
    with serve(lms.app) as base: ...    # lms.base is its origin
    lms.start("deep", user="teacher")   # the URL a browser opens to launch a link (or "deep" to pick one)
"""
from __future__ import annotations

import contextlib
import html
import itertools
import threading
import typing as t
from dataclasses import dataclass, field

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import rsa
from flask import Flask, jsonify, redirect, request
from lti1p3platform.ltiplatform import LTI1P3PlatformConfAbstract
from lti1p3platform.message_launch import LTIAdvantageMessageLaunchAbstract
from lti1p3platform.oidc_login import OIDCLoginAbstract
from lti1p3platform.registration import Registration
from lti1p3platform.request import Request, TRequest
from lti1p3platform.score import UpdateScoreStatus
from lti1p3platform.service_connector import AssignmentsGradesService, TPage
from werkzeug.serving import make_server

INSTRUCTOR = "http://purl.imsglobal.org/vocab/lis/v2/membership#Instructor"
LEARNER = "http://purl.imsglobal.org/vocab/lis/v2/membership#Learner"
# Institution-level roles: what the user is at the school, not in this course (a learner of it may hold one).
INSTITUTION = "http://purl.imsglobal.org/vocab/lis/v2/institution/person#"


def roles_of(user: str) -> list[str]:
    """teacher-*: the course's instructor; faculty-*/staff-*: a learner of the course who is an instructor, faculty
    or staff member of the institution; anyone else: a learner."""
    if user.startswith("teacher"):
        return [INSTRUCTOR]
    if user.startswith("faculty"):
        return [f"{INSTITUTION}Instructor", f"{INSTITUTION}Faculty", LEARNER]
    if user.startswith("staff"):
        return [f"{INSTITUTION}Staff", LEARNER]
    return [LEARNER]


def key_pair() -> tuple[str, str]:
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    private = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                serialization.NoEncryption()).decode()
    public = key.public_key().public_bytes(serialization.Encoding.PEM,
                                           serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    return private, public


class FlaskPlatformRequest(Request):
    """lti1p3platform's view of a Flask request."""

    def build_metadata(self, req: t.Any) -> TRequest:
        return {"method": req.method, "form_data": req.form.to_dict(), "get_data": req.args.to_dict(),
                "headers": req.headers, "content_type": req.content_type, "path": req.path,
                "json": req.get_json(silent=True)}


@dataclass
class Link:
    """A resource link placed in a course: what the tool's deep-linking response made."""
    id: str
    title: str
    custom: dict[str, str]
    lineitem: str | None  # the line item's id (URL), when the content item asked for one


@dataclass
class Lms:
    issuer: str
    client_id: str
    deployment_id: str
    base: str = ""
    tool_login: str = ""
    tool_launch: str = ""
    tool_jwks: str = ""
    private_key: str = ""
    public_key: str = ""
    links: dict[str, Link] = field(default_factory=dict)
    lineitems: dict[str, dict[str, t.Any]] = field(default_factory=dict)
    scores: dict[str, list[dict[str, t.Any]]] = field(default_factory=dict)  # line item id -> scores received
    token_requests: int = 0
    jwks_requests: int = 0
    refuse_tokens: bool = False  # the LMS down or the tool's access revoked: every token request refused
    refusals: list[str] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.private_key, self.public_key = key_pair()
        self._ids = itertools.count(1)
        self.app = self._make_app()

    # -- lti1p3platform's abstract parts, filled in

    def registration(self) -> Registration:
        return (Registration().set_iss(self.issuer).set_client_id(self.client_id)
                .set_deployment_id(self.deployment_id).set_oidc_login_url(self.tool_login)
                .set_launch_url(self.tool_launch).set_deeplink_launch_url(self.tool_launch)
                .set_tool_key_set_url(self.tool_jwks).set_platform_public_key(self.public_key)
                .set_platform_private_key(self.private_key))

    def config(self) -> LTI1P3PlatformConfAbstract:
        lms = self

        class Config(LTI1P3PlatformConfAbstract):
            def init_platform_config(self, **kwargs: t.Any) -> None:
                pass

            def get_registration_by_params(self, **kwargs: t.Any) -> Registration:
                return lms.registration()

        config = Config()
        config.get_registration()
        return config

    def connect(self, tool_base: str) -> None:
        self.tool_login, self.tool_launch, self.tool_jwks = (f"{tool_base}/lti/login", f"{tool_base}/lti/launch",
                                                             f"{tool_base}/lti/jwks")

    def start(self, link: str, user: str) -> str:
        """Where a browser goes to open `link` ("deep": the deep-linking picker) as the LMS user `user`."""
        return f"{self.base}/start?link={link}&user={user}"

    def _make_app(self) -> Flask:
        lms = self
        app = Flask(f"lms-{self.issuer}")

        class Login(OIDCLoginAbstract):
            def set_lti_message_hint(self, **kwargs: t.Any) -> None:
                self._lti_message_hint = kwargs["hint"]

            def get_redirect(self, url: str) -> t.Any:
                return redirect(url)

        class Launch(LTIAdvantageMessageLaunchAbstract):
            def prepare_launch(self, preflight_response: dict[str, t.Any]) -> None:
                # A real platform answers only the redirect URI registered for the tool.
                if preflight_response.get("redirect_uri") != lms.tool_launch:
                    raise ValueError(f"redirect_uri {preflight_response.get('redirect_uri')} is not registered")

            def render_launch_form(self, launch_data: dict[str, t.Any], **kwargs: t.Any) -> str:
                return (f'<form method="post" action="{html.escape(launch_data["launch_url"])}" id="launch">'
                        f'<input type="hidden" name="id_token" value="{html.escape(launch_data["id_token"])}">'
                        f'<input type="hidden" name="state" value="{html.escape(launch_data["state"])}"></form>')

        class Grades(AssignmentsGradesService):
            def find_lineitems(self, page: int = 1, limit: int | None = None, **kwargs: t.Any) -> TPage:
                items = [item for item in lms.lineitems.values()
                         if all(item.get(k) == v for k, v in (("tag", kwargs.get("tag")),
                                                               ("resourceId", kwargs.get("resource_id"))) if v)]
                return {"content": items, "has_next": False, "next": None}

            def find_lineitem(self, line_item_id: str) -> t.Any:
                return lms.lineitems[line_item_id]

            def create_lineitem(self, creation_data: t.Any) -> t.Any:
                return lms.new_lineitem(dict(creation_data))

            def update_lineitem(self, update_data: t.Any) -> t.Any:
                lms.lineitems[update_data["id"]].update(update_data)
                return lms.lineitems[update_data["id"]]

            def delete_lineitem(self, line_item_id: str) -> None:
                lms.lineitems.pop(line_item_id, None)

            def update_score(self, line_item_id: str, score: t.Any) -> UpdateScoreStatus:
                lms.scores.setdefault(line_item_id, []).append(dict(score))
                return UpdateScoreStatus.SUCCESS

            def get_results(self, line_item_id: str, page: int = 1, limit: int | None = None,
                            user_id: str | None = None) -> TPage:
                return {"content": [], "has_next": False, "next": None}

        def grades(lineitem_url: str | None = None) -> Grades:
            return Grades(FlaskPlatformRequest(request), lms.config(), f"{lms.base}/lineitems", lineitem_url)

        @app.get("/jwks")
        def jwks() -> t.Any:
            lms.jwks_requests += 1
            return jsonify({"keys": lms.registration().get_jwks()})

        @app.get("/start")
        def start() -> t.Any:
            login = Login(FlaskPlatformRequest(request), lms.config())
            login.set_lti_message_hint(hint=request.args["link"])
            return login.initiate_login(request.args["user"])

        @app.route("/auth", methods=["GET", "POST"])
        def auth() -> t.Any:
            hint = request.values.get("lti_message_hint", "")
            user = request.values.get("login_hint", "")
            message = Launch(FlaskPlatformRequest(request), lms.config())
            message.set_user_data(user, roles_of(user), full_name=f"{user.title()} Example",
                                  email_address=f"{user}@lms.example")
            message.set_launch_context_claim("course-1", context_title="Deep learning performance")
            message.set_extra_claims({"https://purl.imsglobal.org/spec/lti/claim/lis": {
                "person_sourcedid": f"SIS-{user}"}})
            if hint == "deep":
                message.set_dl(f"{lms.base}/deep-link-return", title="Pick", accept_types={"ltiResourceLink"})
            else:
                link = lms.links[hint]
                message.set_resource_link_claim(link.id, title=link.title)
                message.set_custom_parameters_claim(link.custom)
                if link.lineitem:
                    message.set_ags(f"{lms.base}/lineitems", link.lineitem, allow_creating_lineitems=True)
            try:
                return message.lti_launch()
            except Exception as exc:  # noqa: BLE001 - the platform refuses, as a real one would
                lms.refusals.append(f"auth: {exc!r}")
                return f"refused: {exc!r}", 400

        @app.post("/deep-link-return")
        def deep_link_return() -> t.Any:
            try:
                items = lms.config().validate_deeplinking_resp(request.form.to_dict())
            except Exception as exc:  # noqa: BLE001
                lms.refusals.append(f"deep link: {exc!r}")
                return f"refused: {exc!r}", 400
            made = []
            for item in items:
                lineitem = None
                if item.get("lineItem"):
                    lineitem = lms.new_lineitem(dict(item["lineItem"]))["id"]
                link = Link(f"link-{next(lms._ids)}", item.get("title", ""), dict(item.get("custom") or {}),
                            lineitem)
                lms.links[link.id] = link
                made.append(link.id)
            return jsonify(links=made)

        @app.post("/token")
        def token() -> t.Any:
            lms.token_requests += 1
            if lms.refuse_tokens:
                return jsonify(error="unauthorized_client"), 401
            try:
                return jsonify(lms.config().get_access_token(request.form.to_dict()))
            except Exception as exc:  # noqa: BLE001
                lms.refusals.append(f"token: {exc!r}")
                return jsonify(error="invalid_client"), 400

        @app.route("/lineitems", methods=["GET", "POST"])
        def lineitems() -> t.Any:
            service = grades()
            call = service.handle_get_lineitems if request.method == "GET" else service.handle_create_lineitem
            return answer(service.handle_resp(call))

        @app.post("/lineitems/<item>/scores")
        def scores(item: str) -> t.Any:
            url = f"{lms.base}/lineitems/{item}"
            service = grades(url)
            return answer(service.handle_resp(service.handle_update_score, line_item_id=url))

        def answer(resp: t.Any) -> t.Any:
            if 200 <= resp.code < 300:
                body = resp.result["content"] if isinstance(resp.result, dict) and "content" in resp.result \
                    else resp.result
                return jsonify(body if body is not None else {}), resp.code, {"Content-Type": resp.media_type}
            lms.refusals.append(f"service: {resp.code} {resp.message}")
            return jsonify(error=resp.message), resp.code

        return app

    def new_lineitem(self, data: dict[str, t.Any]) -> dict[str, t.Any]:
        item_id = f"{self.base}/lineitems/{next(self._ids)}"
        self.lineitems[item_id] = {**data, "id": item_id}
        return self.lineitems[item_id]

    def rotate_keys(self) -> None:
        """A new key pair: launches are signed with it from now on, and the JWKS publishes it instead."""
        self.private_key, self.public_key = key_pair()

    def token_url(self) -> str:
        return f"{self.base}/token"


@contextlib.contextmanager
def serve(app: Flask) -> t.Iterator[str]:
    """`app` on a free loopback port in a thread (werkzeug, threaded): its origin."""
    server = make_server("127.0.0.1", 0, app, threaded=True)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_port}"
    finally:
        server.shutdown()
        thread.join()
