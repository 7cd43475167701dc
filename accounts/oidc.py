"""The provider (its discovery document, read once per process and checked when the web server
starts), the settings mozilla-django-oidc reads, and the roles a login's groups give.

Why mozilla-django-oidc and not django-allauth: it does one thing, the authorization-code flow
against one configured provider, as an authentication backend and two views — what this needs —
with four dependencies (Django, requests, PyJWT, cryptography). allauth brings its own account
model, signup, email and provider registry, pages and settings to keep in step with ours (axes,
the audit log, the login page); here we subclass two views and a backend and keep our own page.
What it leaves to us, we do (backends.py): the audience, issuer and azp of the ID token (it
checks only the signature, expiry and nonce), an expired token as a refused login (not a 500),
users found by issuer and subject (not by email), and the roles.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass
from urllib.parse import urlsplit

import requests
from django.conf import settings
from django.contrib.auth import SESSION_KEY
from django.contrib.auth.models import Group
from django.contrib.sessions.models import Session
from django.core import checks
from django.core.exceptions import ImproperlyConfigured
from django.utils import timezone
from mozilla_django_oidc.utils import import_from_settings

from audit.context import WEB, audit_context, current
from audit.services import audit_record

NEEDED = ("authorization_endpoint", "token_endpoint", "jwks_uri", "userinfo_endpoint")
SIGNING = ("RS256", "ES256", "RS384", "ES384", "RS512", "ES512")  # asymmetric: the key is the provider's


@dataclass(frozen=True)
class Provider:
    issuer: str  # as its discovery document says it, which ID tokens must repeat exactly
    authorization_endpoint: str
    token_endpoint: str
    userinfo_endpoint: str
    jwks_uri: str
    sign_algo: str


def enabled() -> bool:
    return bool(settings.RYSH_OIDC_ISSUER)


def provider() -> Provider:
    """The configured provider, discovered on first use (the web server does it at start)."""
    return _discover(settings.RYSH_OIDC_ISSUER, settings.RYSH_OIDC_TIMEOUT)


def provider_check() -> None:
    """With company login on, read the discovery document now: a provider that does not answer
    or answers with something that is not an OpenID Connect discovery document stops start-up,
    saying what to set. Off: nothing, no network."""
    if enabled():
        provider()


def provider_deploy_check(app_configs=None, **kwargs) -> list[checks.CheckMessage]:
    """`manage.py check --deploy`: the same, as a system check."""
    try:
        provider_check()
    except ImproperlyConfigured as exc:
        return [checks.Error(str(exc), id="accounts.E001")]
    return []


@functools.lru_cache(maxsize=4)
def _discover(issuer: str, timeout: int) -> Provider:
    url = f"{issuer}/.well-known/openid-configuration"
    try:
        response = requests.get(url, timeout=timeout)
    except requests.RequestException as exc:
        raise ImproperlyConfigured(
            f"RYSH_OIDC_ISSUER: the provider did not answer at {url} ({type(exc).__name__}). Check the issuer URL "
            f"(Keycloak: https://HOST/realms/REALM; Google: https://accounts.google.com; Okta: "
            f"https://ORG.okta.com/oauth2/default) and that this server can reach it; RYSH_OIDC_TIMEOUT is "
            f"{timeout}s. Unset RYSH_OIDC_ISSUER to turn company login off."
        ) from None
    if response.status_code != 200:
        raise ImproperlyConfigured(
            f"RYSH_OIDC_ISSUER: {url} answered {response.status_code}, not a discovery document: set "
            f"RYSH_OIDC_ISSUER to the provider's issuer URL (what its discovery document calls `issuer`)"
        )
    try:
        document = response.json()
    except ValueError:
        document = None
    if not isinstance(document, dict):
        raise ImproperlyConfigured(f"RYSH_OIDC_ISSUER: {url} did not answer with a JSON discovery document")
    return _provider_from(issuer, url, document)


def _provider_from(issuer: str, url: str, document: dict) -> Provider:
    missing = [key for key in NEEDED if not isinstance(document.get(key), str) or not document[key]]
    if missing:
        raise ImproperlyConfigured(
            f"RYSH_OIDC_ISSUER: the discovery document at {url} has no {', '.join(missing)}: is {issuer} an "
            f"OpenID Connect issuer? Set RYSH_OIDC_ISSUER to one (the URL before /.well-known/openid-configuration)"
        )
    said = str(document.get("issuer") or "")
    if said.rstrip("/") != issuer:
        fix = f"set RYSH_OIDC_ISSUER={said}" if said else "is this an OpenID Connect issuer?"
        raise ImproperlyConfigured(
            f"RYSH_OIDC_ISSUER is {issuer}, but the discovery document at {url} says the issuer is "
            f"{said or 'nobody'}: {fix}"
        )
    offered = document.get("id_token_signing_alg_values_supported") or ["RS256"]
    algo = next((a for a in SIGNING if a in offered), None)
    if algo is None:
        raise ImproperlyConfigured(
            f"RYSH_OIDC_ISSUER: the provider signs ID tokens with {', '.join(map(str, offered))}; the dashboard "
            f"accepts {', '.join(SIGNING)}: choose one of them for this client at the provider"
        )
    return Provider(
        issuer=said,
        authorization_endpoint=document["authorization_endpoint"],
        token_endpoint=document["token_endpoint"],
        userinfo_endpoint=document["userinfo_endpoint"],
        jwks_uri=document["jwks_uri"],
        sign_algo=algo,
    )


# -- what mozilla-django-oidc reads: from our settings and the discovery, not OIDC_* settings ------

RP_SETTINGS = {
    "OIDC_RP_CLIENT_ID": lambda: settings.RYSH_OIDC_CLIENT_ID,
    "OIDC_RP_CLIENT_SECRET": lambda: settings.RYSH_OIDC_CLIENT_SECRET,
    "OIDC_RP_SCOPES": lambda: settings.RYSH_OIDC_SCOPES,
    "OIDC_TIMEOUT": lambda: settings.RYSH_OIDC_TIMEOUT,
    "OIDC_OP_AUTHORIZATION_ENDPOINT": lambda: provider().authorization_endpoint,
    "OIDC_OP_TOKEN_ENDPOINT": lambda: provider().token_endpoint,
    "OIDC_OP_USER_ENDPOINT": lambda: provider().userinfo_endpoint,
    "OIDC_OP_JWKS_ENDPOINT": lambda: provider().jwks_uri,
    "OIDC_RP_SIGN_ALGO": lambda: provider().sign_algo,
    "OIDC_USE_NONCE": lambda: True,
    "OIDC_USE_PKCE": lambda: True,  # a stolen code is useless without this browser's verifier
    "OIDC_CREATE_USER": lambda: True,
    "OIDC_STORE_ACCESS_TOKEN": lambda: False,
    "OIDC_STORE_ID_TOKEN": lambda: False,
    "OIDC_ALLOW_UNSECURED_JWT": lambda: False,
    "OIDC_VERIFY_SSL": lambda: True,
}


def rp_setting(attr: str, *default):
    if attr in RP_SETTINGS:
        return RP_SETTINGS[attr]()
    return import_from_settings(attr, *default)


# -- roles ------------------------------------------------------------------------------------------


def groups_from(claims: dict) -> list[str] | None:
    """The groups claim as a list of names; None when the provider did not send it (or sent
    something that is not a name or a list of names)."""
    value = claims.get(settings.RYSH_OIDC_GROUPS_CLAIM)
    if isinstance(value, str):
        return [value]
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return value
    return None


def roles_sync(*, user, groups: list[str] | None, keep_session: str | None = None) -> None:
    """Give `user` exactly the roles RYSH_OIDC_ROLE_MAP maps their groups to, among the roles the
    map names; a role the map does not name (given by hand in the admin) is left alone. No groups
    claim: none of the mapped roles. Through the ORM, so the role changes are audited
    (audit/receivers.py) and the person's open sockets re-checked (runs/receivers.py) like any
    other; the rows name the provider as who changed them. A role taken away also ends the
    person's other sessions (all but `keep_session`, the one logging in now): their open pages go
    to the login page and their sockets close, so nothing they opened with the old role lives on."""
    role_map = settings.RYSH_OIDC_ROLE_MAP
    if not role_map:
        return  # roles are given by hand
    managed = set(role_map.values())
    wanted = {role_map[g] for g in groups or () if g in role_map}
    have = set(user.groups.filter(name__in=managed).values_list("name", flat=True))
    with as_provider():
        if groups is None:
            audit_record(
                action="auth.groups_missing",
                target=("user", user.pk, f"user #{user.pk} {user.get_username()}"),
                detail={"claim": settings.RYSH_OIDC_GROUPS_CLAIM, "removed": sorted(have)},
            )
        if have - wanted:
            user.groups.remove(*Group.objects.filter(name__in=have - wanted))
            sessions_end(user, keep=keep_session)
        if wanted - have:
            user.groups.add(*Group.objects.filter(name__in=wanted - have))


def as_provider():
    """Audit rows written inside name the provider (`oidc:<issuer host>`), from the request's address."""
    context = current()
    host = urlsplit(settings.RYSH_OIDC_ISSUER).netloc
    return audit_context(source=WEB, address=context.address if context else None, actor_name=f"oidc:{host}")


def sessions_end(user, *, keep: str | None = None) -> int:
    """End every stored session of `user` but `keep` (database sessions, the default engine): a
    scan of the live sessions, done only when a login takes a role away."""
    ended = [
        session.session_key
        for session in Session.objects.filter(expire_date__gt=timezone.now()).exclude(session_key=keep or "")
        if session.get_decoded().get(SESSION_KEY) == str(user.pk)
    ]
    Session.objects.filter(session_key__in=ended).delete()
    return len(ended)
