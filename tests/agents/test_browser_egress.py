"""The browser reaches only public addresses (docs/security.md): every connection goes through its egress
proxy, which judges each host as http_get does (private, loopback, link-local… refused, in any
spelling) whatever allowed_domains says, unless an admin named the host.

Nothing here connects anywhere but loopback: the pages and the listener that must never be
reached are on 127.0.0.1 and 127.0.0.2; other addresses are only judged, never dialled."""

from __future__ import annotations

import ipaddress
import json
import os
import socket
import struct
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from agents import egress
from agents.browser.errors import BrowserError
from agents.browser.launch import launch_options
from agents.domains import canonical_host, private_host_allowed, split_host_port
from agents.egress import Egress, judge, literal_refusal
from runs.wiring import browser_private_hosts
from tests.agents.test_browser_hardening import Site

ROOT = Path(__file__).resolve().parents[2]


def fake_resolver(table: dict[str, list[str]]):
    """getaddrinfo from a table: no DNS is asked."""

    def resolve(host, port, type=socket.SOCK_STREAM, **_):
        if host not in table:
            raise socket.gaierror(socket.EAI_NONAME, "Name or service not known")
        found = []
        for address in table[host]:
            if ":" in address:
                found.append((socket.AF_INET6, socket.SOCK_STREAM, 6, "", (address, port, 0, 0)))
            else:
                found.append((socket.AF_INET, socket.SOCK_STREAM, 6, "", (address, port)))
        return found

    return resolve


@pytest.fixture
def loopback_only(monkeypatch):
    """Every address the proxy dials; anything but loopback is refused by the test itself."""
    dialled = []
    real = egress._connect

    def connect(infos):
        for *_ignored, sockaddr in infos:
            dialled.append(sockaddr[0])
            assert ipaddress.ip_address(sockaddr[0]).is_loopback, f"the proxy dialled {sockaddr[0]}"
        return real(infos)

    monkeypatch.setattr(egress, "_connect", connect)
    return dialled


# -- hosts, in every spelling --------------------------------------------------------------------


@pytest.mark.parametrize(
    "host, canonical",
    [
        ("2130706433", "127.0.0.1"),  # decimal
        ("0x7f000001", "127.0.0.1"),  # hex
        ("0177.0.0.1", "127.0.0.1"),  # octal
        ("127.1", "127.0.0.1"),  # short
        ("0x7f.1", "127.0.0.1"),
        ("127.0.0.1.", "127.0.0.1"),
        ("2852039166", "169.254.169.254"),
        ("0xa9.0xfe.0xa9.0xfe", "169.254.169.254"),
        ("[::FFFF:169.254.169.254]", "::ffff:a9fe:a9fe"),
        ("[0:0::1]", "::1"),
        ("Intranet.Example.", "intranet.example"),
        ("10.example", "10.example"),
    ],
)
def test_canonical_host(host, canonical):
    assert canonical_host(host) == canonical


def test_allowed_private_hosts_name_a_host_and_maybe_a_port():
    allowed = ("wiki.corp.example", "*.lab.example", "127.0.0.1:8000", "[::1]:9000", "10.0.0.7")
    assert private_host_allowed("wiki.corp.example", 443, allowed)
    assert private_host_allowed("WIKI.corp.example.", 80, allowed)
    assert private_host_allowed("ci.lab.example", 8080, allowed)
    assert private_host_allowed("127.0.0.1", 8000, allowed) and not private_host_allowed("127.0.0.1", 8001, allowed)
    assert private_host_allowed("2130706433", 8000, allowed)  # any spelling of the address
    assert private_host_allowed("::1", 9000, allowed) and not private_host_allowed("::1", 80, allowed)
    assert private_host_allowed("10.0.0.7", 22, allowed)
    assert not private_host_allowed("other.corp.example", 443, allowed)
    assert not private_host_allowed("lab.example", 443, allowed)
    assert not private_host_allowed("169.254.169.254", 80, allowed)
    for bad in ("host:", "host:0", "host:70000", "[::1]x", ""):
        with pytest.raises(ValueError):
            split_host_port(bad)


# -- what the proxy decides ------------------------------------------------------------------------

RESOLVER = fake_resolver(
    {
        "metadata.internal": ["169.254.169.254"],
        "mixed.example": ["93.184.216.34", "10.1.2.3"],
        "nat64.example": ["64:ff9b::a9fe:a9fe"],
        "public.example": ["93.184.216.34"],
        "wiki.corp.example": ["10.1.2.3"],
        "169.254.169.254": ["169.254.169.254"],
        "10.1.2.3": ["10.1.2.3"],
        "::ffff:a9fe:a9fe": ["::ffff:a9fe:a9fe"],
    }
)


@pytest.mark.parametrize(
    "host, why",
    [
        ("169.254.169.254", "169.254.169.254:80 is a link-local address (cloud metadata lives here)"),
        ("2852039166", "169.254.169.254:80 is a link-local address"),
        ("::ffff:a9fe:a9fe", "[::ffff:a9fe:a9fe]:80 is a link-local address"),
        ("metadata.internal", "metadata.internal:80 (it resolves to 169.254.169.254) is a link-local address"),
        ("mixed.example", "(it resolves to 10.1.2.3) is a private address"),  # any address refused
        ("nat64.example", "is a link-local address"),
        ("10.1.2.3", "10.1.2.3:80 is a private address"),
        ("wiki.corp.example", "(it resolves to 10.1.2.3) is a private address"),
    ],
)
def test_the_proxy_refuses_private_and_internal_addresses_whatever_the_spelling(host, why):
    verdict = judge(host, 80, resolve=RESOLVER)
    assert verdict.rule == "private" and why in verdict.why and verdict.infos == []


def test_the_proxy_lets_public_and_named_private_hosts_through_and_holds_allowed_domains():
    assert judge("public.example", 443, resolve=RESOLVER).why is None
    named = judge("wiki.corp.example", 443, private_hosts=("*.corp.example",), resolve=RESOLVER)
    assert named.why is None and named.infos[0][4][0] == "10.1.2.3"
    # the name is allowed, not its address; a port given is the only one allowed
    assert judge("10.1.2.3", 443, private_hosts=("*.corp.example",), resolve=RESOLVER).rule == "private"
    assert judge("wiki.corp.example", 22, private_hosts=("wiki.corp.example:443",), resolve=RESOLVER).rule == "private"
    # allowed_domains first: a private host an admin allows is still outside a recipe's list
    outside = judge("wiki.corp.example", 443, allowed_domains=("public.example",), private_hosts=("wiki.corp.example",))
    assert outside.rule == "domains" and "outside this recipe's allowed_domains (public.example)" in outside.why
    assert judge("nowhere.example", 443, resolve=RESOLVER).rule == "unresolved"


@pytest.mark.parametrize(
    "url",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://2852039166/latest/meta-data/",
        "http://0xa9fea9fe/",
        "http://0251.0376.0251.0376/",
        "http://169.254.43518/",
        "http://[::ffff:169.254.169.254]/",
        "http://[64:ff9b::a9fe:a9fe]/",
        "https://127.0.0.1:8000/",
        "http://0x7f.1:8000/",
    ],
)
def test_navigate_refuses_an_ip_literal_in_any_spelling_before_the_browser_is_asked(url):
    assert literal_refusal(url, ()) is not None
    assert literal_refusal("http://127.0.0.1:8000/x", ("127.0.0.1:8000",)) is None
    assert literal_refusal("http://public.example/", ()) is None  # names: the proxy resolves them


# -- the proxy itself, over loopback -----------------------------------------------------------------


class Listener:
    """A TCP server on 127.0.0.2 that counts who connected and echoes what it hears."""

    def __init__(self):
        self.sock = socket.create_server(("127.0.0.2", 0))
        self.port = self.sock.getsockname()[1]
        self.connections = 0
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            self.connections += 1
            with conn:
                data = conn.recv(100)
                conn.sendall(b"echo:" + data)

    def close(self):
        self.sock.close()


@pytest.fixture
def listener():
    found = Listener()
    yield found
    found.close()


def socks_connect(proxy_port: int, host: str, port: int, command: int = 1) -> tuple[socket.socket, int]:
    client = socket.create_connection(("127.0.0.1", proxy_port), timeout=5)
    client.sendall(b"\x05\x01\x00")
    assert client.recv(2) == b"\x05\x00"
    name = host.encode()
    client.sendall(bytes([5, command, 0, 3, len(name)]) + name + struct.pack("!H", port))
    reply = client.recv(10)
    return client, reply[1]


def test_the_proxy_refuses_before_connecting_and_relays_what_it_allows(listener, loopback_only):
    guard = Egress(resolve=fake_resolver({"127.0.0.2": ["127.0.0.2"], "rebound.example": ["127.0.0.2"]}))
    guard.start()
    try:
        for host in ("127.0.0.2", "rebound.example"):
            client, code = socks_connect(guard.port, host, listener.port)
            client.close()
            assert code == egress.NOT_ALLOWED, host
        assert listener.connections == 0 and loopback_only == []
        refused = guard.take_refused()
        assert refused[0] == f"127.0.0.2:{listener.port} is a loopback address (127.0.0.0/8)"
        assert "rebound.example" in refused[1] and guard.take_refused() == []
        client, code = socks_connect(guard.port, "127.0.0.2", listener.port, command=3)  # UDP ASSOCIATE
        client.close()
        assert code == egress.COMMAND_NOT_SUPPORTED
    finally:
        guard.stop()

    allowing = Egress(private_hosts=(f"127.0.0.2:{listener.port}",))
    allowing.start()
    try:
        client, code = socks_connect(allowing.port, "127.0.0.2", listener.port)
        assert code == egress.SUCCEEDED
        client.sendall(b"hello")
        assert client.recv(100) == b"echo:hello" and listener.connections == 1
        client.close()
    finally:
        allowing.stop()


def test_the_proxy_carries_a_large_upload_and_download_at_once(loopback_only):
    """Both directions at once, each larger than the sockets' buffers: neither waits on the other."""
    size = 8 * 1024 * 1024
    server = socket.create_server(("127.0.0.2", 0))
    got = []

    def serve():
        conn, _ = server.accept()
        with conn:
            sender = threading.Thread(target=conn.sendall, args=(b"d" * size,))
            sender.start()
            received = 0
            while chunk := conn.recv(65536):
                received += len(chunk)
            got.append(received)
            sender.join()

    threading.Thread(target=serve, daemon=True).start()
    guard = Egress(private_hosts=("127.0.0.2",))
    guard.start()
    try:
        client, code = socks_connect(guard.port, "127.0.0.2", server.getsockname()[1])
        assert code == egress.SUCCEEDED
        client.settimeout(20)
        uploader = threading.Thread(target=lambda: (client.sendall(b"u" * size), client.shutdown(socket.SHUT_WR)))
        uploader.start()
        downloaded = 0
        while chunk := client.recv(65536):
            downloaded += len(chunk)
        uploader.join()
        client.close()
        assert downloaded == size and got == [size]
    finally:
        guard.stop()
        server.close()


# -- in the browser: every request, whatever allowed_domains says ----------------------------------


def test_chromium_goes_out_only_through_the_proxy_loopback_included():
    args = launch_options(headless=True, executable=None, sandbox=True, allowed=("example.com",), proxy_port=4321)[
        "args"
    ]
    assert "--proxy-server=socks5://127.0.0.1:4321" in args
    assert "--proxy-bypass-list=<-loopback>" in args  # Chromium would go to loopback directly
    # the browser resolves nothing itself (the proxy does, and checks); one set of rules only
    assert [a for a in args if a.startswith("--host-resolver-rules")] == [
        "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE 127.0.0.1"
    ]
    assert "--webrtc-ip-handling-policy=disable_non_proxied_udp" in args  # no UDP around the proxy


C_SPELLINGS = ["127.0.0.2", "2130706434", "0x7f000002", "0177.0.0.2", "127.2", "[::ffff:127.0.0.2]"]


@pytest.fixture
def a_site():
    """A: the pages the browser opens, on 127.0.0.1 (allowed for the browser tests)."""
    site = Site()
    yield site
    site.close()


@pytest.fixture
def c_site():
    """C: where the browser must never go, on 127.0.0.2, recording every connection."""
    site = Site(host="127.0.0.2")
    site.connections = 0
    accept = site.httpd.get_request

    def counted():
        found = accept()
        site.connections += 1
        return found

    site.httpd.get_request = counted
    site.pages["/secret"] = "<title>C</title><p>C CONTENT: the intranet</p>"
    yield site
    site.close()


def hostile_page(c: Site) -> str:
    """What an injected page would do: a frame, an image, a script's fetch and a websocket,
    each to the intranet in another spelling, and links there."""
    return f"""<title>Hostile</title><p>own text</p>
<iframe src="http://0x7f000002:{c.port}/secret"></iframe>
<img src="http://2130706434:{c.port}/pixel.png">
<a id="link" href="http://127.2:{c.port}/secret">the intranet</a>
<script>
fetch("http://0177.0.0.2:{c.port}/api").catch(() => {{}});
try {{ new WebSocket("ws://127.0.0.2:{c.port}/socket"); }} catch (e) {{}}
</script>"""


@pytest.mark.parametrize("allowed_domains", [(), ("127.0.0.1", "127.0.0.2", "::ffff:7f00:2")])
def test_the_browser_never_reaches_a_private_address(make_tools, a_site, c_site, allowed_domains):
    a, c = a_site, c_site
    a.pages["/hostile"] = hostile_page(c)
    a.pages["/go"] = ("redirect", f"http://2130706434:{c.port}/secret")
    tools = make_tools(allowed_domains=allowed_domains)  # allowed_domains naming it changes nothing
    tools.open(a.url("/"))

    for spelling in C_SPELLINGS:
        result = tools.call("navigate", {"url": f"http://{spelling}:{c.port}/secret"})
        assert result.is_error and "is a loopback address" in result.content, (spelling, result.content)
        assert "RYSH_BROWSER_ALLOW_PRIVATE_HOSTS" in result.content

    redirected = tools.call("navigate", {"url": a.url("/go")})  # a hop the pre-check cannot see
    assert redirected.is_error and f"[refused 1 connection(s) to private or internal addresses: 127.0.0.2:{c.port}" in (
        redirected.content
    )

    said = tools.call("navigate", {"url": a.url("/hostile")}).content
    for _ in range(20):  # the page's own requests are refused a moment after it loads
        said += tools.call("wait_for_text", {"text": "own text"}).content
        if "refused" in said:
            break
    assert f"127.0.0.2:{c.port} is a loopback address" in said and "own text" in said
    said += tools.call("click", {"selector": "#link"}).content
    assert "C CONTENT" not in said + tools.call("read_page", {}).content
    assert c.connections == 0 and c.log == []


def test_localhost_is_refused_unless_named(make_tools, a_site):
    a = a_site
    a.pages["/page"] = "<title>A</title><p>A CONTENT</p>"
    tools = make_tools(private_hosts=("127.0.0.1",))
    tools.open(a.url("/page"))
    result = tools.call("navigate", {"url": a.url("/page", host="localhost")})
    assert result.is_error and "localhost" in result.content and "is a loopback address" in result.content
    assert a.log.count("/page") == 1  # only the visit through 127.0.0.1


def test_a_named_private_host_is_reached_and_only_on_its_port(make_tools, a_site, c_site, loopback_pages_allowed):
    """The same hostile page with 127.0.0.2 allowed: C is reached (so the tests above could fail)."""
    a, c = a_site, c_site
    a.pages["/hostile"] = hostile_page(c)
    elsewhere = make_tools(profile="elsewhere", private_hosts=(*loopback_pages_allowed, "127.0.0.2:1"))
    elsewhere.open(a.url("/"))
    assert elsewhere.call("navigate", {"url": c.url("/secret")}).is_error and c.connections == 0
    elsewhere.close()

    tools = make_tools(private_hosts=(*loopback_pages_allowed, f"127.0.0.2:{c.port}"))
    tools.open(a.url("/hostile"))
    for _ in range(50):
        if {"/secret", "/pixel.png", "/api", "/socket"} <= set(c.log):
            break
        tools.call("read_page", {})
    assert {"/secret", "/pixel.png", "/api", "/socket"} <= set(c.log), c.log
    assert "C CONTENT" in tools.call("navigate", {"url": f"http://2130706434:{c.port}/secret"}).content + (
        tools.call("read_page", {}).content
    )


def test_a_malformed_allowed_host_is_refused(make_tools):
    with pytest.raises(BrowserError, match="RYSH_BROWSER_ALLOW_PRIVATE_HOSTS"):
        make_tools(private_hosts=("wiki:0",))


# -- the setting and the dashboard's own site --------------------------------------------------------


def test_the_dashboards_own_site_is_allowed_with_the_setting(settings):
    settings.RYSH_BROWSER_ALLOW_PRIVATE_HOSTS = ["wiki.corp.example"]
    settings.RYSH_SITE_URL = "http://127.0.0.1:8000"
    assert browser_private_hosts() == ("wiki.corp.example", "127.0.0.1:8000")
    settings.RYSH_SITE_URL = "https://rysh.example"
    assert browser_private_hosts()[-1] == "rysh.example:443"
    settings.RYSH_SITE_URL = "http://[::1]:8000"
    assert browser_private_hosts()[-1] == "[::1]:8000"
    assert private_host_allowed("::1", 8000, browser_private_hosts())


PROBE = "import django, json\ndjango.setup()\nfrom django.conf import settings\nprint(json.dumps(settings.RYSH_BROWSER_ALLOW_PRIVATE_HOSTS))"


def settings_with(tmp_path, value: str) -> subprocess.CompletedProcess:
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "rysh_site.settings", "RYSH_DATA_DIR": str(tmp_path)}
    env["RYSH_BROWSER_ALLOW_PRIVATE_HOSTS"] = value
    return subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True)


def test_the_setting_is_read_strictly(tmp_path):
    fine = settings_with(tmp_path, " Wiki.Corp.Example, *.lab.example,10.0.0.7:8080 ,[fd00::7]:80,")
    assert fine.returncode == 0, fine.stderr
    assert json.loads(fine.stdout.splitlines()[-1]) == [
        "wiki.corp.example",
        "*.lab.example",
        "10.0.0.7:8080",
        "[fd00::7]:80",
    ]
    for bad in ("*", "wiki corp", "http://wiki.corp/", "wiki:port"):
        refused = settings_with(tmp_path, bad)
        assert refused.returncode != 0 and "RYSH_BROWSER_ALLOW_PRIVATE_HOSTS" in refused.stderr, bad
