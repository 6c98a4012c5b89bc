"""LTI 1.3: this site as a tool inside an LMS (Canvas, Moodle, Blackboard, Brightspace), through PyLTI1p3.

    GET|POST /lti/login      the platform's third-party initiated login (OIDC): checks the registration, sets
                             the state cookie and the browser's LTI session, sends the browser to the platform
    POST /lti/launch         the launch (id_token + state): a resource link signs the LMS user in to their own
                             account here and opens the lesson or exercise it names; a deep-linking request
                             shows the picker
    POST /lti/deep-link      the instructor's pick: a signed deep-linking response, posted back to the platform
    GET  /lti/jwks           the tool's public keys (one per registration), what platforms verify it with
    /lti/platforms           registrations (instructors; `flask --app academy lti-register` for operators): add,
                             add a deployment, edit in place (/edit), remove once confirmed (/remove)

Everything a launch claims is believed only after PyLTI1p3 has checked it: the state against the cookie the
login set, the nonce (kept in the database under the browser's LTI session id, and deleted when a launch
uses it: no launch can be replayed), the registration (issuer + client id) and deployment, the signature
against the platform's published keys (fetched through outbound.py: https, public addresses only, no
redirects, bounded; kept per URL), the message's shape; and here the claims LTI 1.3 requires (`exp`, `iat`, `azp`
when `aud` is a list) and the lengths of what is stored. An LMS user is an account keyed by the
registration, the deployment and the platform's `sub` (`LtiIdentity`), never by an email or a name the LMS
sends, and is always a learner here: an LMS instructor gets no instructor rights on this site. A removed
registration keeps its row (`removed_at`), so registering its issuer and client id again finds the same accounts.
Nothing an LMS answered (a body, an exception naming a URL) reaches a page or a stored error: each says a fixed
reason, and the detail goes to the log, escaped (`outbound.printable`). After each
graded submission the exercise's best score goes to the line item of every resource link the learner
launched it from (Assignment and Grade Services, `send_best_score`).

PyLTI1p3, requests and cryptography are imported by the functions that need them, not with these modules:
administrators' commands never pay for them (docs/web.md, "What starting costs").

The package, one concern a module; each imports only modules listed above it:

    claims.py          the launch claims' names, this site's limits on them
    keys.py            a registration's key pair; its public half as a JWK
    outbound.py        every request the server makes on an LMS's behalf (https, public addresses, bounded)
    registration.py    PlatformForm; register, edit, remove a registration, add a deployment; find one
    pylti.py           PyLTI1p3's seams: tool conf, nonce and launch storage, cookies, the checked message launch
    identities.py      the accounts of LMS users (account_for)
    scores.py          grade passback: grade links, the best score, sending it (send_best_score, send_lms_scores)
    blueprint.py       the blueprint, who may frame its pages, the refusal page
    launch.py          /lti/login, /lti/launch, /lti/jwks
    deep_linking.py    /lti/deep-link
    platform_pages.py  /lti/platforms and its edit and remove pages (instructors)

Other modules import this package (`from academy import lti`), never one of its modules: what they use is named
here. A test that replaces a function patches it in the module that looks it up.
"""
from academy.lti import deep_linking, launch, platform_pages  # noqa: F401 - their routes on bp
from academy.lti.blueprint import FRAMEABLE, bp, platform_origins
from academy.lti.claims import SCORE_SCOPE
from academy.lti.identities import account_for
from academy.lti.keys import new_key_pair, public_jwk
from academy.lti.registration import (
    PlatformForm,
    active_platforms,
    add_deployment,
    edit_platform,
    find_platform,
    is_removed,
    register_platform,
    remove_platform,
    tool_urls,
)
from academy.lti.scores import best_score, send_best_score, send_lms_scores

__all__ = ["FRAMEABLE", "SCORE_SCOPE", "PlatformForm", "account_for", "active_platforms", "add_deployment",
           "best_score", "bp", "edit_platform", "find_platform", "is_removed", "new_key_pair", "platform_origins",
           "public_jwk", "register_platform", "remove_platform", "send_best_score", "send_lms_scores", "tool_urls"]
