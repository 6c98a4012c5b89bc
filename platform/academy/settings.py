"""Every setting of the web app and its grading workers, in one place (in the spirit of RQ's defaults.py).

A field of `Settings` is one setting: its name in upper case is its key in `app.config`, in the instance
folder's `config.py` and in `create_app(test_config)`; its metadata names its environment variable and says
what it does. `load` reads them once, when the app is made, in this order (later wins): the default, the
environment, the instance's `config.py`, `test_config`. The app keeps the result, frozen, as
`app.extensions["academy.settings"]` (`settings()` in a request or job) and copies it into `app.config`
for Flask and its extensions. The grader's own variables (the course folder, the docker image, ...) are in
grader/settings.py. docs/web.md's table is printed by `python -m academy.settings` and tested against it.
"""
from __future__ import annotations

import dataclasses
import logging
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from flask import Config, Flask, current_app

from academy.setting_values import (
    SMTP_SECURITY,
    _choice,
    host_names,
    ipv6_prefix_length,
    networks,
    password_method,
    per_minute,
    public_origin,
    setting,
    untried_cell,
)
from grader.core.settings import GRADER_SETTINGS, exercises_root
from sandbox.settings import Setting, SettingError, flag

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Settings:
    # -- where things are
    instance_path: str | None = setting(
        "DLA_INSTANCE", None, "the instance folder: database, `secret_key`, optional `config.py`; hidden from "
        "learner code", shown_default="`./instance` with `scripts/run`; else Flask's default")
    database_url: str | None = setting(
        "DATABASE_URL", None, "any SQLAlchemy URL (PostgreSQL: `postgresql+psycopg://...`); its migrations "
        "(Alembic, `platform/academy/migrations`) run by `flask --app academy init-db`, never by the app itself",
        shown_default="`sqlite:///<instance>/academy.sqlite`")
    exercises_dir: str | None = setting(
        None, None, "the course folder (set it with the grader's `DLA_EXERCISES`, below)",
        shown_default="`DLA_EXERCISES`")
    secret_key: str | None = setting(
        "SECRET_KEY", None, "signs the session cookie; unset: read from `<instance>/secret_key`, which `init-db` "
        "creates (a serving app without either refuses to start and says so)",
        shown_default="random, made by `init-db`, kept in `<instance>/secret_key`")

    # -- grading
    sandbox: str = setting(
        "DLA_SANDBOX", "auto", "`auto`, `local` or `docker`: where submissions run; never `unconfined`, and a "
        "`local` that cannot confine on this host is refused ([sandbox.md](sandbox.md))")
    grading_workers: int = setting(
        "DLA_GRADING_WORKERS", 2, "grading threads in the web process (without `REDIS_URL`)", int)
    warm_pool: int = setting(
        "DLA_WARM_POOL", 2, "warm single-use grading processes kept by each process that grades (the web "
        "process, or each RQ worker): containers with docker, fork-server children with local; `0` = a cold "
        "process per submission", int, old_env="DLA_POOL_SIZE")
    submission_rate: tuple[int, int] = setting(
        "DLA_SUBMISSIONS_PER_MINUTE", (10, 60), "per-account submission limit; above it `429` with "
        "`Retry-After` (the other limits: [Limits](#limits))", per_minute, shown_default="`10`")
    long_poll_s: int = setting(
        "DLA_LONG_POLL_S", 20, "the longest a `GET` of a submission or Run with `?wait=` waits for it to finish "
        "(keep it under the proxy's read timeout; nginx's default is 60 s)", int)
    long_poll_waiters: int = setting(
        "DLA_LONG_POLL_WAITERS", 4, "requests of one web process that may wait at once for a verdict, each "
        "holding one of the server's threads: keep it at most half of them (`scripts/run`: 4 of 8; "
        "the compose image: half of its threads); one client address holds at most half of them; the others are "
        "answered at once and the browser polls; `0` = never wait", int)
    requeue_on_start: bool = setting(
        None, True, "recover unfinished jobs on the serving process's first request (tests turn it off)", flag)

    # -- the job queue (RQ), used when REDIS_URL is set
    redis_url: str | None = setting(
        "REDIS_URL", None, "when set, grading jobs go to RQ workers (`python -m academy worker`) and rate-limit "
        "counters to Redis; without it keep the server at one process, as `scripts/run` does",
        shown_default="unset: in-process grading")
    queue: str = setting("DLA_QUEUE", "grading", "queue name (one per course deployment sharing a Redis)")
    job_timeout: int = setting(
        "DLA_JOB_TIMEOUT", 300, "seconds a grading job may run before RQ stops it and the row ends as `error`", int)
    regrade_timeout: int = setting(
        "DLA_REGRADE_TIMEOUT", 3600, "seconds a regrade job (all finished submissions of one exercise) may run; "
        "it occupies one worker meanwhile", int)
    job_retries: int = setting(
        "DLA_JOB_RETRIES", 1, "how often a job whose worker died is run again before it ends as `error`", int)
    queue_sweep_s: int = setting(
        "DLA_QUEUE_SWEEP_S", 60, "how often workers clean RQ's registries and run the recovery pass", int)
    heartbeat_grace_s: int = setting(
        "DLA_HEARTBEAT_GRACE_S", 60, "a started job counts as abandoned `DLA_JOB_TIMEOUT` + this after its "
        "start", int)
    recover_after_s: int = setting(
        "DLA_RECOVER_AFTER_S", 10, "a queued row younger than this is left to the request that is enqueueing it",
        int)
    worker_log: str = setting("DLA_WORKER_LOG", "INFO", "the RQ worker's log level")

    # -- people and requests
    trusted_proxies: int = setting(
        "DLA_TRUSTED_PROXIES", 0, "how many reverse proxies in front of the app append to `X-Forwarded-For`; "
        "the client address (rate limits, guests' grading turn) is then taken from them (Werkzeug's "
        "`ProxyFix`). `0`: the TCP peer. Never more than you run: one extra lets clients pick their own address",
        int)
    ipv6_prefix: int = setting(
        "DLA_IPV6_PREFIX", 64, "per-address limits count an IPv6 client by its network of this prefix length: one "
        "home line or server holds a whole /64, so counting each of its addresses apart would multiply every "
        "per-address budget by 2^64 (`128`: each address apart); an IPv4-mapped address counts as its IPv4 one",
        ipv6_prefix_length)
    public_lessons: bool = setting(
        "DLA_PUBLIC_LESSONS", True, "anyone can read every lesson (cards, exercise prompts, starter code) "
        "without an account; the first Run, Submit or quiz answer makes that browser a guest. `0`: a closed "
        "course, where every lesson page needs a sign-in", flag, shown_default="`1`")
    guest_idle_days: int = setting(
        "DLA_GUEST_IDLE_DAYS", 30, "`flask --app academy remove-idle-guests` deletes guests with no request for "
        "longer", int)
    content_reload: bool = setting(
        "DLA_CONTENT_RELOAD", True, "the instructor page's \"Reload content\" button (set `0` in production)",
        flag, shown_default="`1`")
    validate_on_change: bool = setting(
        "DLA_VALIDATE_ON_CHANGE", True, "the instructor overview starts `grader validate` in the background for "
        "every exercise never validated or whose files changed since its last validation; `0`: only its Validate "
        "buttons do", flag, shown_default="`1`")
    gradebook_untried: str = setting(
        "DLA_GRADEBOOK_UNTRIED", "blank", "what the gradebooks write for an exercise or quiz a learner never tried: "
        "`blank` (a Canvas or Moodle import then leaves that grade as it is) or `zero` (a course past its "
        "deadline); the learners page's download can choose the other", untried_cell)
    insecure_cookies: bool = setting(
        "DLA_INSECURE_COOKIES", False, "session cookies are `Secure; HttpOnly; SameSite=Lax`. Browsers accept "
        "Secure cookies from `http://localhost`/`127.0.0.1`; to reach a development server over plain http by "
        "another name, set `1`", flag, shown_default="unset")

    # -- rate limits (Flask-Limiter strings: "10 per minute"; several separated by ";"), academy/web/limits.py
    limit_guests_per_address: str = setting(
        "DLA_LIMIT_GUESTS_PER_ADDRESS", "60 per 10 minutes;300 per day", "new guests from one client address")
    limit_signups_per_address: str = setting(
        "DLA_LIMIT_SIGNUPS_PER_ADDRESS", "60 per hour", "sign-ups from one client address")
    limit_signins_per_address: str = setting(
        "DLA_LIMIT_SIGNINS_PER_ADDRESS", "300 per hour", "sign-in attempts from one client address")
    limit_lti_logins_per_address: str = setting(
        "DLA_LIMIT_LTI_LOGINS_PER_ADDRESS", "1200 per hour", "LMS launches (LTI 1.3 logins, each storing a nonce) "
        "from one client address")
    limit_quiz_answers_per_account: str = setting(
        "DLA_LIMIT_QUIZ_ANSWERS_PER_ACCOUNT", "30 per minute;1000 per day", "quiz answers of one account")
    limit_quiz_answers_per_address: str = setting(
        "DLA_LIMIT_QUIZ_ANSWERS_PER_ADDRESS", "600 per minute;20000 per day", "quiz answers from one client address")
    limit_submissions_per_address: str = setting(
        "DLA_LIMIT_SUBMISSIONS_PER_ADDRESS", "200 per minute", "submissions from one client address")
    limit_runs_per_account: str = setting(
        "DLA_LIMIT_RUNS_PER_ACCOUNT", "20 per minute",
        "Runs (the learner's function once on the exercise's example, no verdict) of one account; a Run also "
        "waits for the account's pending submission or Run ([Run](#run))")
    limit_runs_per_address: str = setting(
        "DLA_LIMIT_RUNS_PER_ADDRESS", "400 per minute", "Runs from one client address")
    limit_drafts_per_account: str = setting(
        "DLA_LIMIT_DRAFTS_PER_ACCOUNT", "120 per minute",
        "draft saves of one account (the editor saves 0.7 s after typing stops)")
    limit_drafts_per_address: str = setting(
        "DLA_LIMIT_DRAFTS_PER_ADDRESS", "2400 per minute", "draft saves from one client address")

    # -- what stays stored (academy/web/api.py: save_draft)
    draft_kb_per_account: int = setting(
        "DLA_DRAFT_KB_PER_ACCOUNT", 1024, "KB all the drafts of one account may take together; a save above it "
        "answers `413` and the draft stored before stays", int)
    draft_kb_per_address: int = setting(
        "DLA_DRAFT_KB_PER_ADDRESS", 65536, "KB the drafts last saved from one client address may take together "
        "(every guest and account behind it); `remove-idle-guests` frees what idle guests kept", int)

    # -- stored passwords (academy/data/accounts.py, academy/web/auth.py)
    password_hash: str = setting(
        "DLA_PASSWORD_HASH", "scrypt:32768:8:1", "werkzeug's method for new password hashes: `scrypt:N:r:p` or "
        "`pbkdf2:sha256:ITERATIONS`. A stored hash keeps its own, so a change applies to passwords set afterwards; "
        "until then a sign-in answers a known email at the old cost and an unknown one at the new (a timing "
        "difference): choose it before accounts exist. A cheaper method makes stolen hashes cheaper to crack: the "
        "test suite lowers it only to save CPU",
        password_method)

    # -- wrong passwords (academy/web/backoff.py): growing delays, never a lock-out ([Sign-in](#limits))
    signin_free_failures: int = setting(
        "DLA_SIGNIN_FREE_FAILURES", 5, "wrong passwords for one account from browsers that never signed in to it, "
        "or from one browser that did (its device cookie), before each further attempt waits", int)
    signin_free_failures_per_address: int = setting(
        "DLA_SIGNIN_FREE_FAILURES_PER_ADDRESS", 50, "wrong passwords from one client address (a classroom behind "
        "one NAT) before its further attempts wait; browsers with a device cookie for the account are exempt", int)
    signin_first_delay_s: int = setting(
        "DLA_SIGNIN_FIRST_DELAY_S", 2, "seconds the first attempt after the free ones waits after the last wrong "
        "password; each further wrong password doubles it", int)
    signin_max_delay_s: int = setting(
        "DLA_SIGNIN_MAX_DELAY_S", 900, "the longest wait after a wrong password (a delay, never a lock: no "
        "attempt is ever held back for longer)", int)

    # -- how long a sign-in lasts (academy/web/security.py)
    session_idle_days: float = setting(
        "DLA_SESSION_IDLE_DAYS", 7.0, "a signed-in session that made no request for this long ends, and the "
        "browser signs in again", float)
    session_max_days: float = setting(
        "DLA_SESSION_MAX_DAYS", 30.0, "the longest a signed-in session lives from its sign-in, however often it "
        "is used (a guest's session is bounded by `DLA_GUEST_IDLE_DAYS` instead: it has no password to sign in "
        "again with)", float)

    # -- email (academy/web/mail.py): confirmation links for sign-ups
    smtp_host: str = setting(
        "DLA_SMTP_HOST", "", "the SMTP server that sends confirmation links; empty: no mail is sent, the link is "
        "written to the server's log for the operator, and addresses stay unconfirmed until opened",
        shown_default="empty")
    smtp_port: int = setting("DLA_SMTP_PORT", 587, "the SMTP server's port", int)
    smtp_security: str = setting(
        "DLA_SMTP_SECURITY", "starttls", "`starttls` (upgrade the connection; port 587), `ssl` (TLS from the "
        "start; port 465) or `none` (a relay on this host or network only)", lambda v: _choice(v, SMTP_SECURITY))
    smtp_user: str = setting("DLA_SMTP_USER", "", "the SMTP login, if the server wants one",
                             shown_default="empty")
    smtp_password: str = setting("DLA_SMTP_PASSWORD", "", "the SMTP password", shown_default="empty")
    mail_from: str = setting(
        "DLA_MAIL_FROM", "Deep Learning Academy <noreply@localhost>", "the `From` of every mail the site sends")
    email_confirm_hours: int = setting(
        "DLA_EMAIL_CONFIRM_HOURS", 48, "hours a confirmation link stays valid", int)

    # -- what the server may reach on an LMS's behalf (academy/lti/outbound.py)
    lti_private_networks: tuple[str, ...] = setting(
        "DLA_LTI_PRIVATE_NETWORKS", (), "networks (CIDR, comma separated, e.g. `10.20.0.0/16`) an LTI "
        "registration's URLs may resolve to although they are not public: a campus LMS on a private network. "
        "Loopback, link-local and cloud metadata addresses are never reached, whatever this says",
        networks, shown_default="empty")
    lti_allow_http: bool = setting(
        "DLA_LTI_ALLOW_HTTP", False, "accept `http://` LTI registration URLs (development and tests against a "
        "local LMS only; with it, loopback is reachable too)", flag, shown_default="unset")

    # -- absolute URLs (hreflang links; academy/i18n/interface.py)
    public_url: str | None = setting(
        "DLA_PUBLIC_URL", None, "the site's public origin, e.g. `https://academy.example.org`: absolute links "
        "(the pages' `hreflang` alternates) are built from it, never from the request's `Host`",
        public_origin, shown_default="unset")
    allowed_hosts: tuple[str, ...] = setting(
        "DLA_ALLOWED_HOSTS", ("localhost", "127.0.0.1", "::1"), "without `DLA_PUBLIC_URL`: host names (comma "
        "separated) whose `Host` header absolute links may be built from; any other host gets links without "
        "one (a path)", host_names, shown_default="`localhost,127.0.0.1,::1`")


    # -- the tutor (academy/tutor/): any OpenAI-compatible Chat Completions server that streams ([Tutor](tutor.md))
    tutor_enabled: bool = setting(
        "DLA_TUTOR", True, "the tutor panel on every lesson step and its API; `0` turns it off (the panel is not "
        "drawn, the API answers `503` saying so)", flag, shown_default="`1`")
    tutor_url: str = setting(
        "DLA_TUTOR_URL", "http://127.0.0.1:8090/v1", "the model server's OpenAI-compatible API root (`.../v1`); "
        "`scripts/run` starts the embedded one there (SmolLM2-135M-Instruct on the CPU) unless this is set")
    tutor_model: str = setting(
        "DLA_TUTOR_MODEL", "", "the `model` each request names (vLLM's `--served-model-name`, an Ollama tag, a "
        "hosted model); empty: none is sent and the server answers with the one it serves (the embedded server); a "
        "named model is also asked to answer in the page's language (with none named, the embedded model is assumed "
        "and asked for English: [Tutor](tutor.md))",
        shown_default="empty")
    tutor_api_key: str = setting(
        "DLA_TUTOR_API_KEY", "", "sent as `Authorization: Bearer ...` when set (hosted services, a vLLM "
        "`--api-key`)", shown_default="empty")
    tutor_connect_timeout_s: float = setting(
        "DLA_TUTOR_CONNECT_TIMEOUT_S", 3.0, "seconds to connect to the model server before the learner is told "
        "the tutor is unreachable", float)
    tutor_first_token_timeout_s: float = setting(
        "DLA_TUTOR_FIRST_TOKEN_TIMEOUT_S", 60.0, "seconds the model server may take to send its first token "
        "(and the longest silence between two) before the answer is abandoned", float)
    tutor_answer_timeout_s: float = setting(
        "DLA_TUTOR_ANSWER_TIMEOUT_S", 120.0, "seconds one whole answer may take; past it the upstream request "
        "is closed and the learner keeps what came", float)
    tutor_max_tokens: int = setting(
        "DLA_TUTOR_MAX_TOKENS", 220, "the longest answer, in tokens (`max_tokens` of each request)", int)
    tutor_questions_per_minute: int = setting(
        "DLA_TUTOR_QUESTIONS_PER_MINUTE", 4, "questions one learner may ask per minute; above it `429` with "
        "`Retry-After`", int)
    tutor_questions_per_day: int = setting(
        "DLA_TUTOR_QUESTIONS_PER_DAY", 60, "questions one learner may ask per day (24 h); above it `429`", int)
    tutor_concurrent: int = setting(
        "DLA_TUTOR_CONCURRENT", 1, "answers one web process streams at once (each holds one of the server's "
        "threads and the model server's attention)", int)
    tutor_queue: int = setting(
        "DLA_TUTOR_QUEUE", 1, "questions that may wait for a free answer slot; beyond them `503` \"the tutor is "
        "busy, try again in N s\" with `Retry-After`. Keep concurrent + queue well under the server's threads "
        "less `DLA_LONG_POLL_WAITERS` (`scripts/run`: 8 - 4)", int)


class InstanceNotReady(RuntimeError):
    """The instance is not ready for this version of the app (no secret key, a database schema that is
    missing or behind): the message says what is wrong and which command makes it ready."""


def fields() -> list[tuple[dataclasses.Field, Setting]]:
    return [(f, f.metadata["setting"]) for f in dataclasses.fields(Settings)]


def from_environment(environ: Mapping[str, str] | None = None) -> dict[str, Any]:
    """The settings the environment sets, as config keys with typed values (old variable names warn)."""
    environ = os.environ if environ is None else environ
    values: dict[str, Any] = {}
    for f, spec in fields():
        old_env = f.metadata["old_env"]
        if spec.env and spec.is_set(environ):
            values[f.name.upper()] = spec.get(environ)
        elif old_env and environ.get(old_env):
            log.warning("%s is the old name of %s: rename it (it still works for now)", old_env, spec.env)
            values[f.name.upper()] = dataclasses.replace(spec, env=old_env).get(environ)
    return values


def load(instance_path: Path, config_file: Mapping[str, Any], test_config: Mapping[str, Any]) -> Settings:
    """The settings of one app: defaults < environment < the instance's config.py < test_config."""
    values = {**from_environment(), **{k: v for k, v in {**config_file, **test_config}.items() if k.isupper()}}
    known = {f.name.upper(): f.name for f, _spec in fields()}
    settings = Settings(**{known[key]: value for key, value in values.items() if key in known})
    try:  # config.py and test_config are not parsed like the environment: the one setting a typo turns into 500s
        password_method(str(settings.password_hash))
    except ValueError:
        spec = Settings.__dataclass_fields__["password_hash"].metadata["setting"]
        raise SettingError(f"PASSWORD_HASH={settings.password_hash!r} is not valid: {spec.description}") from None
    return dataclasses.replace(
        settings, instance_path=str(instance_path),
        database_url=settings.database_url or f"sqlite:///{instance_path / 'academy.sqlite'}",
        exercises_dir=str(settings.exercises_dir or exercises_root()))


def instance_folder(test_config: Mapping[str, Any]) -> str | None:
    """The instance folder, needed before anything else (config.py lives in it): INSTANCE_PATH, else $DLA_INSTANCE."""
    value = test_config.get("INSTANCE_PATH") or Settings.__dataclass_fields__["instance_path"] \
        .metadata["setting"].get()
    return str(Path(value).resolve()) if value else None


def read_config_file(instance_path: str | Path) -> dict[str, Any]:
    """The instance's config.py (optional), as Flask reads it: its upper-case names."""
    config = Config(str(instance_path))
    config.from_pyfile("config.py", silent=True)
    return dict(config)


def for_instance(instance_path: str | Path) -> Settings:
    """The settings an app on this instance folder would read (scripts/run asks before starting one)."""
    return load(Path(instance_path), read_config_file(instance_path), {})


def settings(app: Flask | None = None) -> Settings:
    """The settings of `app`, else of the current app (in a request, a CLI command or a job)."""
    return (app or current_app).extensions["academy.settings"]


def markdown_table() -> str:
    """docs/web.md's configuration table: every variable of the app and of the grader."""
    rows = ["| Variable | Default | Meaning |", "|---|---|---|"]
    for f, spec in fields():
        if spec.env:
            rows.append(_row(spec, f.metadata["old_env"]))
    rows += [_row(spec) for spec in GRADER_SETTINGS]
    return "\n".join(rows)


def _row(spec: Setting, old_env: str | None = None) -> str:
    default = spec.shown_default or f"`{spec.default}`"
    meaning = spec.description + (f" (formerly `{old_env}`, still read)" if old_env else "")
    return f"| `{spec.env}` | {default} | {meaning} |"


if __name__ == "__main__":
    if sys.argv[1:] not in ([], ["--markdown"]):
        sys.exit("usage: python -m academy.settings [--markdown]   (prints docs/web.md's configuration table)")
    print(markdown_table())


__all__ = ["InstanceNotReady", "Settings", "SettingError", "from_environment", "load", "markdown_table", "settings"]
