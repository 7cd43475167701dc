"""The company login's two pages: the start (off to the provider, with a fresh state, nonce and
PKCE verifier in the session) and the callback (back with a code). A callback that cannot log
the person in shows the login page again with why, and writes `auth.login_failed` — a wrong
state, a token for another client, an expired token or a provider that does not answer is a
refused login, never a 500."""

from __future__ import annotations

import re

import requests
from django.contrib.auth import get_user_model
from django.core.exceptions import SuspiciousOperation
from django.http import Http404
from django.shortcuts import render
from django.views import View
from mozilla_django_oidc.views import OIDCAuthenticationCallbackView, OIDCAuthenticationRequestView

from accounts.backends import LoginRefused
from accounts.oidc import as_provider, enabled, rp_setting
from audit.services import audit_record
from rysh_site.throttle import LoginForm

User = get_user_model()
STATE_UNKNOWN = "the login's state is not one this browser started (an old tab, or a link made elsewhere)"


class CompanyLoginOn:
    """Both pages are there only while RYSH_OIDC_ISSUER is set."""

    get_settings = staticmethod(rp_setting)

    def setup(self, request, *args, **kwargs):
        if not enabled():
            raise Http404("company login is off")
        super().setup(request, *args, **kwargs)


class OIDCStart(CompanyLoginOn, OIDCAuthenticationRequestView):
    def __init__(self, **kwargs):
        View.__init__(self, **kwargs)  # the library's reads the endpoint here: we read it when a login starts

    @property
    def OIDC_OP_AUTH_ENDPOINT(self) -> str:  # noqa: N802 (the library's name)
        return rp_setting("OIDC_OP_AUTHORIZATION_ENDPOINT")

    @property
    def OIDC_RP_CLIENT_ID(self) -> str:  # noqa: N802
        return rp_setting("OIDC_RP_CLIENT_ID")


class OIDCCallback(CompanyLoginOn, OIDCAuthenticationCallbackView):
    def get(self, request):
        self.refused = None
        try:
            return super().get(request)
        except LoginRefused as exc:
            self.refused = exc
        except SuspiciousOperation as exc:
            self.refused = LoginRefused(STATE_UNKNOWN if "state" in str(exc) else f"the provider's answer: {exc}")
        except requests.RequestException as exc:
            self.refused = LoginRefused(f"the provider did not answer ({type(exc).__name__})")
        return self.login_failure()

    def login_failure(self):
        refused = self.refused or LoginRefused(self._why())
        user = (
            User._default_manager.filter(**{User.USERNAME_FIELD: refused.username}).first()
            if refused.username
            else None
        )
        target = ("user", user.pk, f"user #{user.pk} {user.get_username()}") if user else None
        detail = {"via": "oidc", "reason": refused.reason, "username": refused.username}
        if refused.subject:
            detail["subject"] = refused.subject  # to link an existing account by hand (Admin → OIDC identities)
        with as_provider():
            audit_record(action="auth.login_failed", target=target, detail=detail)
        context = {"form": LoginForm(self.request), "oidc_refused": refused.reason, "next": ""}
        return render(self.request, "registration/login.html", context, status=403)

    def _why(self) -> str:
        query = self.request.GET
        if query.get("error"):
            # the code only (RFC 6749 error codes are a-z and _); a description in a link anyone can
            # make would put their words on our login page and in the audit log
            code = query["error"] if re.fullmatch(r"[a-z_]{1,60}", query["error"]) else "an error"
            return f"the provider said {code}"
        if "code" not in query or "state" not in query:
            return "the provider sent no code"
        if getattr(self.request, "axes_locked_out", False):  # the login throttle's lock holds for every backend
            return "too many failed logins from this address; try again later"
        if "oidc_states" not in self.request.session:
            return "no login was started in this browser (or its session ended)"
        return "the account is deactivated or the provider's answer named nobody"
