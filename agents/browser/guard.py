"""The request guard of a web recipe's browser: what it may reach, and what the model hears
about what it may not.

Two rules hold every request. `allowed_domains` (the recipe's list) is enforced three times:
Playwright's routing refuses what it sees, the browser's own DNS knows no other host (a redirect's
later hops, which routing never sees), and listeners leave a page that got out anyway. Private
and internal addresses are refused by the egress proxy (agents/egress.py) every connection goes
through, unless an admin named the host (RYSH_BROWSER_ALLOW_PRIVATE_HOSTS).
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit

from agents.browser.errors import BrowserError
from agents.domains import canonical_host, host_allowed, split_host_port
from agents.egress import ALLOW_SETTING, PROXY_HOST, Egress, literal_refusal
from agents.ports import ToolResult

RESOLVER_HOST_RE = re.compile(r"(\*\.)?[a-z0-9._\[\]:-]+\Z")
ALWAYS_ALLOWED_SCHEMES = ("about", "data", "blob")
ONLY_PUBLIC = f"only public addresses may be reached (an admin may name private hosts in {ALLOW_SETTING})"


def url_allowed(url: str, allowed: tuple[str, ...]) -> bool:
    parts = urlsplit(url)
    if parts.scheme in ALWAYS_ALLOWED_SCHEMES:
        return True
    if parts.scheme not in ("http", "https", "ws", "wss"):
        return False
    return not allowed or host_allowed(canonical_host(parts.hostname or ""), allowed)


def resolver_rules(allowed: tuple[str, ...]) -> str | None:
    """allowed_domains again, in the browser's own DNS: no other host resolves, so neither a
    redirect (which Playwright's routing never sees) nor any other request can reach one.
    (A browser behind the egress proxy resolves nothing itself: see proxy_args.)"""
    if not allowed:
        return None
    hosts = [h for h in allowed if RESOLVER_HOST_RE.match(h)]  # nothing that could end a rule
    return ", ".join(["MAP * ~NOTFOUND", *(f"EXCLUDE {h}" for h in hosts)])


def proxy_args(port: int) -> list[str]:
    """Every connection through the egress proxy on loopback: loopback itself too (Chromium
    would otherwise go there directly), and no name resolved by the browser (the proxy resolves
    each one, checks its addresses and connects to them)."""
    return [
        f"--proxy-server=socks5://{PROXY_HOST}:{port}",
        "--proxy-bypass-list=<-loopback>",
        f"--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE {PROXY_HOST}",
    ]


class RequestGuard:
    """One browser's guard: its egress proxy, its routing and listeners, and what they refused.

    The listeners run on the browser's thread; what they gather is reported after each tool
    call (`report`), and a page that got out is left by the tab (`take_escaped`)."""

    def __init__(self, *, allowed_domains: tuple[str, ...] = (), private_hosts: tuple[str, ...] = ()):
        self.allowed = tuple(d.lower() for d in allowed_domains)
        # private hosts the egress proxy lets through (RYSH_BROWSER_ALLOW_PRIVATE_HOSTS and the
        # dashboard's own host:port); every other private or internal address is refused
        self.private_hosts = tuple(h.strip().lower() for h in private_hosts if h.strip())
        for entry in self.private_hosts:
            try:
                split_host_port(entry)
            except ValueError as exc:
                raise BrowserError(f"{ALLOW_SETTING}: {exc}") from None
        self.egress: Egress | None = None
        self.blocked: list[str] = []  # requests refused by allowed_domains since the last tool result
        self.escaped: list[str] = []  # navigations outside allowed_domains during this tool call

    # -- the egress proxy -----------------------------------------------------------------

    def start(self) -> int:
        """The proxy, before Chromium: it is the browser's only way out. Returns its port."""
        self.egress = Egress(allowed_domains=self.allowed, private_hosts=self.private_hosts)
        return self.egress.start()

    def stop(self) -> None:
        if self.egress is not None:
            self.egress.stop()
            self.egress = None

    def navigation_refusal(self, target: str) -> str | None:
        """Why a navigate call may not open `target` (None: it may), as the model hears it."""
        if not url_allowed(target, self.allowed):
            return (
                f"refused: {urlsplit(target).hostname} is outside this recipe's allowed_domains "
                f"({', '.join(self.allowed)})"
            )
        why = literal_refusal(target, self.private_hosts)  # names: the egress proxy resolves them
        return f"refused: {why}; {ONLY_PUBLIC}" if why else None

    # -- allowed_domains in the browser ------------------------------------------------------

    def watch(self, context) -> None:
        """Route and listen on a new browser context (on the browser's thread)."""
        if not self.allowed:
            return
        # Only what is outside the list is routed (and refused); allowed traffic is untouched.
        outside = lambda url: not url_allowed(url, self.allowed)  # noqa: E731
        context.route(outside, self._refuse)
        context.route_web_socket(outside, self._refuse_socket)
        # Routing never sees a redirect's later hops: the browser's DNS refuses them
        # (resolver_rules), and these listeners say so and leave a page that got out.
        context.on("request", self._watch_request)
        context.on("page", lambda page: page.on("framenavigated", self._watch_frame))

    def watch_pages(self, pages) -> None:
        """The pages a context opened with, which its "page" listener never saw."""
        if self.allowed:
            for page in pages:
                page.on("framenavigated", self._watch_frame)

    def _refuse(self, route) -> None:
        self.blocked.append(route.request.url)
        route.abort("blockedbyclient")

    def _refuse_socket(self, socket_route) -> None:
        self.blocked.append(socket_route.url)
        socket_route.close(code=1008, reason="outside allowed_domains")

    def _watch_request(self, request) -> None:
        """A redirect hop outside the list: the DNS rules have refused it; say so, and leave
        a page whose own navigation was sent there (a frame's is only reported)."""
        if request.redirected_from is None or url_allowed(request.url, self.allowed):
            return
        self.blocked.append(request.url)
        try:
            main = request.is_navigation_request() and request.frame.parent_frame is None
        except Exception:  # noqa: BLE001 - a service worker's request has no frame
            main = False
        if main:
            self.escaped.append(request.url)

    def _watch_frame(self, frame) -> None:
        """A frame that shows a page outside the list, however it got there (the last line)."""
        url = frame.url
        if not url.startswith("chrome-error:") and not url_allowed(url, self.allowed):
            self.escaped.append(url)

    def take_escaped(self) -> list[str]:
        """Where pages went outside the list since the last call (the tab leaves them)."""
        escaped, self.escaped = self.escaped, []
        return escaped

    # -- after every tool ----------------------------------------------------------------------

    def report(self, result: ToolResult) -> ToolResult:
        """The result, with what was refused since the last one."""
        refused = self.egress.take_refused() if self.egress is not None else []
        if refused:
            result.content += (
                f"\n[refused {len(refused)} connection(s) to private or internal addresses: "
                f"{_first_few(refused)}; {ONLY_PUBLIC}]"
            )
        if not self.blocked:
            return result
        blocked, self.blocked = self.blocked, []
        result.content += (
            f"\n[allowed_domains refused {len(blocked)} request(s) outside {', '.join(self.allowed)}: "
            f"{_first_few(blocked)}]"
        )
        return result


def short_error(exc: Exception, allowed: tuple[str, ...]) -> str:
    text = str(exc).strip()
    first = text.splitlines()[0] if text else type(exc).__name__
    if "ERR_BLOCKED_BY_CLIENT" in text and allowed:
        return f"{first} (refused: outside this recipe's allowed_domains {', '.join(allowed)})"
    return first


def _first_few(items: list[str]) -> str:
    return ", ".join(items[:5]) + (f" and {len(items) - 5} more" if len(items) > 5 else "")
