"""The two authentication backends of the company login (docs/login.md).

OIDCBackend: mozilla-django-oidc's, with what it leaves open closed (accounts/oidc.py says what).
BreakGlassBackend: Django's password check, for the break-glass users only (RYSH_LOCAL_LOGIN=false).
"""

from __future__ import annotations

import jwt
import requests
from django.conf import settings
from django.contrib.auth import get_user_model
from django.contrib.auth.backends import ModelBackend
from django.contrib.auth.validators import UnicodeUsernameValidator
from django.core.exceptions import ValidationError
from django.db import transaction
from django.utils import timezone
from mozilla_django_oidc.auth import OIDCAuthenticationBackend

from accounts.models import OIDCIdentity
from accounts.oidc import groups_from, provider, roles_sync, rp_setting

User = get_user_model()
LEEWAY_SECONDS = 60  # the provider's clock and ours may differ a little
REQUIRED_CLAIMS = ["iss", "aud", "exp", "iat", "sub"]


class LoginRefused(Exception):
    """A company login that must not go through; `reason` is said on the login page and audited."""

    def __init__(self, reason: str, *, username: str = "", subject: str = ""):
        super().__init__(reason)
        self.reason, self.username, self.subject = reason, username, subject


def _lazy(name: str) -> property:
    return property(lambda self: rp_setting(name))


class OIDCBackend(OIDCAuthenticationBackend):
    get_settings = staticmethod(rp_setting)
    # read when a company login needs them: Django makes the backends for every password login
    # and every session's user too, which must not depend on the provider
    OIDC_OP_TOKEN_ENDPOINT = _lazy("OIDC_OP_TOKEN_ENDPOINT")
    OIDC_OP_USER_ENDPOINT = _lazy("OIDC_OP_USER_ENDPOINT")
    OIDC_OP_JWKS_ENDPOINT = _lazy("OIDC_OP_JWKS_ENDPOINT")
    OIDC_RP_CLIENT_ID = _lazy("OIDC_RP_CLIENT_ID")
    OIDC_RP_CLIENT_SECRET = _lazy("OIDC_RP_CLIENT_SECRET")
    OIDC_RP_SIGN_ALGO = _lazy("OIDC_RP_SIGN_ALGO")
    OIDC_RP_IDP_SIGN_KEY = None  # the provider's keys come from its jwks_uri

    def __init__(self, *args, **kwargs):
        self.UserModel = User  # the library's reads every endpoint here (see above)

    def authenticate(self, request, *, nonce, code_verifier):
        """Only for the callback (it alone passes a nonce and a code verifier): a password form's
        credentials never reach this backend, whatever the request's query string says."""
        return super().authenticate(request, nonce=nonce, code_verifier=code_verifier)

    def get_user(self, user_id):
        user = super().get_user(user_id)
        return user if user is not None and self.user_can_authenticate(user) else None  # deactivated: logged out

    def retrieve_matching_jwk(self, token):
        """The provider's key that signed `token`: the one its `kid` names, or, when the token names
        none (a kid is optional), the provider's only signing key for that algorithm. (The library's
        fails with a KeyError on a token without a kid.)"""
        header = jwt.get_unverified_header(token)
        answer = requests.get(self.OIDC_OP_JWKS_ENDPOINT, timeout=settings.RYSH_OIDC_TIMEOUT)
        answer.raise_for_status()
        keys = [
            key
            for key in answer.json().get("keys", [])
            if key.get("use", "sig") == "sig"
            and key.get("alg", header.get("alg")) == header.get("alg")
            and ("kid" not in header or key.get("kid") == header["kid"])
        ]
        if len(keys) != 1:
            raise LoginRefused("the provider's keys (jwks_uri) do not say which one signed the ID token")
        return jwt.PyJWK(keys[0])

    def _verify_jws(self, payload, key):
        """The signature (with the provider's key and algorithm), and what the library leaves
        unchecked: the token is for this client (aud, azp) from this issuer, and not expired."""
        client_id = settings.RYSH_OIDC_CLIENT_ID
        try:
            claims = jwt.decode(
                payload,
                key,
                algorithms=[self.OIDC_RP_SIGN_ALGO],
                audience=client_id,
                issuer=provider().issuer,
                leeway=LEEWAY_SECONDS,
                options={"require": REQUIRED_CLAIMS},
            )
        except jwt.ExpiredSignatureError:
            raise LoginRefused("the provider's ID token has expired") from None
        except jwt.InvalidAudienceError:
            raise LoginRefused(f"the provider's ID token is for another client, not {client_id}") from None
        except jwt.InvalidIssuerError:
            raise LoginRefused(f"the provider's ID token is from another issuer, not {provider().issuer}") from None
        except jwt.PyJWTError as exc:
            raise LoginRefused(f"the provider's ID token is not valid ({exc})") from None
        if claims.get("azp", client_id) != client_id:
            raise LoginRefused(f"the provider's ID token was issued to {claims['azp']}, not {client_id}")
        return claims

    def get_or_create_user(self, access_token, id_token, payload):
        """The person is the ID token's issuer and subject; their claims are the ID token's and the
        userinfo endpoint's (the groups may be in either, depending on the provider)."""
        userinfo = self.get_userinfo(access_token, id_token, payload)
        if userinfo.get("sub") != payload["sub"]:
            raise LoginRefused("the provider's userinfo is about somebody else than its ID token")
        claims = {**payload, **userinfo}
        with transaction.atomic():
            user = self._user_for(claims)
            if not self.user_can_authenticate(user):
                raise LoginRefused("this account is deactivated", username=user.get_username())
            groups = groups_from(claims)
            request = getattr(self, "request", None)  # the library keeps the callback's request
            roles_sync(
                user=user, groups=groups, keep_session=getattr(getattr(request, "session", None), "session_key", None)
            )
            OIDCIdentity.objects.filter(user=user).update(last_groups=groups, last_login_at=timezone.now())
        user.login_via = "oidc"  # said in the audit log's auth.login row
        return user

    def _user_for(self, claims: dict):
        issuer, subject = provider().issuer, str(claims["sub"])
        identity = OIDCIdentity.objects.select_related("user").filter(issuer=issuer, subject=subject).first()
        if identity is not None:
            self._update_profile(identity.user, claims)
            return identity.user
        username = claims.get(settings.RYSH_OIDC_USERNAME_CLAIM)
        if not isinstance(username, str) or not username:
            raise LoginRefused(
                f"the provider sent no {settings.RYSH_OIDC_USERNAME_CLAIM} claim to name the account by "
                "(RYSH_OIDC_USERNAME_CLAIM)",
                subject=subject,
            )
        try:
            UnicodeUsernameValidator()(username)
        except ValidationError:
            raise LoginRefused(f"{username!r} cannot be a username here", subject=subject) from None
        if User._default_manager.filter(**{User.USERNAME_FIELD: username}).exists():
            raise LoginRefused(
                f"an account named {username} exists and is not linked to this provider: an admin links it "
                "(Admin → OIDC identities) or renames it",
                username=username,
                subject=subject,
            )
        user = User._default_manager.create_user(username, email=self._email(claims))  # no usable password
        OIDCIdentity.objects.create(user=user, issuer=issuer, subject=subject)
        return user

    def _update_profile(self, user, claims: dict) -> None:
        email = self._email(claims)
        if email and email != user.email:
            user.email = email
            user.save(update_fields=["email"])

    @staticmethod
    def _email(claims: dict) -> str:
        email = claims.get("email")
        return email if isinstance(email, str) and claims.get("email_verified", True) is not False else ""

    def verify_claims(self, claims):
        return True  # what a login needs is checked in _user_for, with a reason to say


class BreakGlassBackend(ModelBackend):
    """RYSH_LOCAL_LOGIN=false: the password check for the users named in RYSH_BREAK_GLASS_USERS
    only (at /login/ and /admin/login/ alike); anyone else's password is refused unchecked, and
    their sessions from before (another backend's, or this one's before they left the list) end."""

    def authenticate(self, request, username=None, password=None, **kwargs):
        if username is None:
            username = kwargs.get(User.USERNAME_FIELD)
        if username not in settings.RYSH_BREAK_GLASS_USERS:
            return None
        return super().authenticate(request, username=username, password=password, **kwargs)

    def get_user(self, user_id):
        user = super().get_user(user_id)
        return user if user is not None and user.get_username() in settings.RYSH_BREAK_GLASS_USERS else None
