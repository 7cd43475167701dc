"""What every API call shares: the Bearer-token authentication (expiry, revocation, the rate
limit, last use), the check of the token's scope and of its owner's roles, the audit context
(`<owner> via API token <name>`, source API), and errors as JSON `{"field", "message"}`."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

from django.conf import settings
from django.http import Http404, HttpRequest, HttpResponse
from ninja import NinjaAPI
from ninja.errors import AuthenticationError, HttpError, ValidationError
from ninja.security import HttpBearer

from api.models import ApiToken
from api.services import TokenRefused, rate_take, token_for_secret
from audit.context import API, audit_context
from catalogue.recipe import RecipeError
from runs.services import RunRefused
from rysh_site.proxies import client_address
from rysh_site.roles import NEEDS, roles_of, user_can

# what a scope lets a token do, as the owner's role must allow it too (rysh_site.roles.NEEDS)
SCOPE_ACTION = {"read": "view", "operate": "operate", "admin": "admin"}


class ApiError(Exception):
    """An answer other than 2xx: its status, and one or more (field, message) pairs."""

    def __init__(self, status: int, message: str, *, field: str | None = None, errors=None, headers=None):
        super().__init__(message)
        self.status = status
        self.errors = errors or [{"field": field, "message": message}]
        self.headers = headers or {}


def body(errors: list[dict]) -> dict:
    """The first error at the top (`field`, `message`) and all of them in `errors`."""
    return {**errors[0], "errors": errors}


def recipe_error(exc: RecipeError, status: int = 400) -> ApiError:
    """A recipe's issues, each message the `file:line field: expected …, got …` the CLI prints."""
    issues = [{"field": issue.field, "message": str(issue), "line": issue.line} for issue in exc.issues]
    return ApiError(status, issues[0]["message"], errors=issues)


def refused(exc: RunRefused) -> ApiError:
    """A control or a start that cannot be carried out now (a finished run, an active one…)."""
    return ApiError(409, str(exc), field="state")


class TokenAuth(HttpBearer):
    """`Authorization: Bearer <token>`, nothing else (no session, no cookie: no CSRF either)."""

    def __call__(self, request: HttpRequest) -> ApiToken:
        scheme, _, secret = request.headers.get("Authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not secret.strip():
            raise ApiError(401, "send an API token: `Authorization: Bearer <token>`", field="Authorization")
        return self.authenticate(request, secret.strip())

    def authenticate(self, request: HttpRequest, token: str) -> ApiToken:
        return token_check(token)


def token_check(secret: str) -> ApiToken:
    """The active token a secret opens, its last use noted and the call counted against its rate
    limit; else ApiError 401 (unknown, revoked, expired, owner deactivated) or 429. The REST API
    and the MCP server (api/views/mcp_server.py) both let a caller in through here."""
    try:
        found = token_for_secret(secret)
    except TokenRefused as exc:
        raise ApiError(401, str(exc), field="Authorization") from None
    wait = rate_take(token=found)
    if wait is not None:
        limit = settings.RYSH_API_RATE_PER_MINUTE
        raise ApiError(
            429,
            f"rate limit: {limit} calls a minute per token; try again in {wait}s",
            field="Authorization",
            headers={"Retry-After": str(wait)},
        )
    return found


@contextmanager
def acting(request: HttpRequest, scope: str, *, action: str | None = None) -> Iterator[object]:
    """The token's owner, when the token has `scope` and the owner's roles allow what it grants
    (a token never does more than its owner); while inside, audit rows name the owner `via API
    token <name>` with the source API. `action`: a role check other than the scope's own (a
    suite spends money: `edit`, editors and admins)."""
    with acting_as(request.auth, scope, address=client_address(request), action=action) as owner:
        yield owner


@contextmanager
def acting_as(token: ApiToken, scope: str, *, address: str | None, action: str | None = None) -> Iterator[object]:
    """`acting` for a token found some other way than a Django request (the MCP server)."""
    if not token.grants(scope):
        raise ApiError(
            403,
            f'this token lacks the "{scope}" scope (it has: {", ".join(token.scopes)})',
            field="scope",
        )
    action = action or SCOPE_ACTION[scope]
    owner = token.owner
    if not user_can(owner, action):
        mine = ", ".join(sorted(roles_of(owner))) or "none"
        needs = " or ".join(sorted(NEEDS[action]))
        raise ApiError(
            403,
            f"{owner.get_username()}'s role ({mine}) cannot {action}: it needs the {needs} role",
            field="role",
        )
    via = f"API token {token.name}"
    with audit_context(source=API, address=address, user=owner, via=via):
        yield owner


def install_error_handlers(api: NinjaAPI) -> None:
    """Every error the API answers is JSON with a field and a message."""

    def answer(request: HttpRequest, status: int, errors: list[dict], headers: dict | None = None) -> HttpResponse:
        response = api.create_response(request, body(errors), status=status)
        for name, value in (headers or {}).items():
            response[name] = value
        if status == 401:
            response["WWW-Authenticate"] = 'Bearer realm="rysh"'
        return response

    api.add_exception_handler(ApiError, lambda request, exc: answer(request, exc.status, exc.errors, exc.headers))
    api.add_exception_handler(
        AuthenticationError,
        lambda request, exc: answer(request, 401, [{"field": "Authorization", "message": "send an API token"}]),
    )
    api.add_exception_handler(
        ValidationError, lambda request, exc: answer(request, 422, [_validation(e) for e in exc.errors])
    )
    api.add_exception_handler(
        Http404, lambda request, exc: answer(request, 404, [{"field": None, "message": str(exc) or "not found"}])
    )
    api.add_exception_handler(
        HttpError, lambda request, exc: answer(request, exc.status_code, [{"field": None, "message": str(exc)}])
    )


def _validation(error: dict) -> dict:
    """pydantic's error as ours: the field is the dotted path past `body`/`query`/`path` and
    the parameter's own name."""
    loc = [str(part) for part in error.get("loc", ())]
    field = ".".join(loc[2:] if loc[:1] == ["body"] and len(loc) > 2 else loc[1:]) or None
    return {"field": field, "message": error.get("msg", "invalid")}
