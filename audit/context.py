"""Where an action comes from: the web (a request's logged-in user and address), the CLI, or
the REST API (a token's owner, `via API token <name>`).

The middleware sets it for each request, the `auto` command for its run and the API for each
authenticated call; `audit_record` reads it, so the services record one row whoever calls them.
Outside them all (a worker, a signal fired from a shell) there is no context and the row says
`system`.
"""

from __future__ import annotations

import os
import pwd
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

WEB, CLI, API, SYSTEM = "web", "cli", "api", "system"


@dataclass(frozen=True)
class AuditContext:
    source: str
    address: str | None = None
    user: Any = None  # the request's user (lazy: read only when a row is written)
    actor_name: str = ""  # who, when there is no user: the CLI's `cli:<os user>`
    via: str = ""  # how the user acted, when not in person: `API token <name>`


_current: ContextVar[AuditContext | None] = ContextVar("audit_context", default=None)


def current() -> AuditContext | None:
    return _current.get()


@contextmanager
def audit_context(
    *, source: str, address: str | None = None, user: Any = None, actor_name: str = "", via: str = ""
) -> Iterator[None]:
    token = _current.set(AuditContext(source=source, address=address, user=user, actor_name=actor_name, via=via))
    try:
        yield
    finally:
        _current.reset(token)


@contextmanager
def system_action() -> Iterator[None]:
    """What the app does by itself — a run woken when its quota has room — is the system's,
    even when a person's request or command set it off (an admin raising a quota): rows
    written inside say `system`, with no actor and no address."""
    with audit_context(source=SYSTEM):
        yield


def cli_actor_name() -> str:
    """The CLI has no login: the operating-system account that runs it, marked as such."""
    return f"cli:{os_user()}"


def os_user() -> str:
    """The account of the process's real user id. Never $USER or $LOGNAME (getpass.getuser reads
    them first): anyone can set those, and `USER=alice auto task stop …` would sign alice's name."""
    uid = os.getuid()
    try:
        return pwd.getpwuid(uid).pw_name
    except KeyError:  # no passwd entry (some containers): the number, which still says who
        return f"uid{uid}"
