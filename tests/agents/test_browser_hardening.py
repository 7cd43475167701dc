"""The browser's security review (docs/web-recipes.md): Chromium's sandbox and environment, allowed_domains
on redirects and frames, WebRTC, and what a key press amounts to for approval gates."""

import logging
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest

from agents.browser import launch as browser_launch
from agents.browser.guard import resolver_rules
from agents.browser.launch import browser_env, launch_options, sandbox_refusal
from runs.approvals import gate_call

SECRETS = {
    "ANTHROPIC_API_KEY": "sk-ant-test-secret",
    "DATABASE_URL": "postgres://u:pw@db/rysh",
    "REDIS_URL": "redis://:pw@cache:6379/0",
    "RYSH_SECRET_KEY": "django-secret",
    "GITHUB_TOKEN": "ghp_x",
    "LC_SECRET_PASSWORD": "hidden even with an allowed prefix",
}


class Site:
    """A loopback site whose pages are set per test: a path maps to HTML or to ("redirect", URL)."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0):
        self.pages: dict[str, object] = {}
        self.log: list[str] = []
        self.host = host
        site = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_GET(self):
                site.log.append(self.path)
                page = site.pages.get(self.path, "<title>Not found</title>nothing here")
                if isinstance(page, tuple):
                    self.send_response(302)
                    self.send_header("Location", page[1])
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                body = page.encode()
                self.send_response(200 if self.path in site.pages else 404)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

        self.httpd = ThreadingHTTPServer((host, port), Handler)
        self.port = self.httpd.server_address[1]
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def url(self, path: str, host: str | None = None) -> str:
        return f"http://{host or self.host}:{self.port}{path}"

    def close(self):
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def sites():
    """Server A, reached as 127.0.0.1 (allowed), and server B, reached as localhost (not)."""
    a, b = Site(), Site()
    b.pages["/secret"] = "<title>B</title><p>B CONTENT from outside</p>"
    yield a, b
    a.close()
    b.close()


def chromium_processes(profile_dir: Path) -> list[int]:
    """The browser process started on this profile and every process under it (renderers,
    zygotes, utilities), found in /proc without psutil."""
    parents, commands = {}, {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text()
            commands[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
        except OSError:
            continue
        parents[int(entry.name)] = int(stat.rsplit(")", 1)[1].split()[1])
    found = {pid for pid, command in commands.items() if f"--user-data-dir={profile_dir}" in command}
    grew = True
    while grew:
        more = {pid for pid, parent in parents.items() if parent in found} - found
        found |= more
        grew = bool(more)
    return sorted(found)


def environ_of(pid: int) -> dict[str, str]:
    raw = Path(f"/proc/{pid}/environ").read_bytes()
    return dict(item.decode(errors="replace").partition("=")[::2] for item in raw.split(b"\0") if item)


# -- 1. the sandbox and the environment ----------------------------------------------------------


def test_sandbox_refusal_rules():
    ok = {"euid": 1000, "userns_clone": "1\n", "max_user_namespaces": "63000\n"}
    assert sandbox_refusal(**ok) is None
    assert sandbox_refusal(**{**ok, "userns_clone": None}) is None  # kernels without the Debian knob
    assert "as root" in sandbox_refusal(**{**ok, "euid": 0})
    assert "unprivileged_userns_clone = 0" in sandbox_refusal(**{**ok, "userns_clone": "0\n"})
    assert "max_user_namespaces = 0" in sandbox_refusal(**{**ok, "max_user_namespaces": "0"})


def test_browser_env_keeps_what_a_browser_needs_and_no_secret():
    environ = {
        "PATH": "/usr/bin",
        "HOME": "/home/w",
        "LANG": "en_GB.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TZ": "Europe/Paris",
        "DISPLAY": ":0",
        "XDG_RUNTIME_DIR": "/run/user/1000",
        "FONTCONFIG_PATH": "/etc/fonts",
        "TMPDIR": "/tmp",
        "DJANGO_SETTINGS_MODULE": "rysh_site.settings",
        "RYSH_DATA_DIR": "/data",
        **SECRETS,
    }
    assert browser_env(environ) == {
        "PATH": "/usr/bin",
        "HOME": "/home/w",
        "LANG": "en_GB.UTF-8",
        "LC_ALL": "C.UTF-8",
        "TZ": "Europe/Paris",
        "DISPLAY": ":0",
        "XDG_RUNTIME_DIR": "/run/user/1000",
        "FONTCONFIG_PATH": "/etc/fonts",
        "TMPDIR": "/tmp",
    }


def test_launch_options_sandbox_webrtc_dns_rules_and_environment(monkeypatch):
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-test-secret")
    sandboxed = launch_options(headless=True, executable=None, sandbox=True)
    assert "--no-sandbox" not in sandboxed["args"] and sandboxed["chromium_sandbox"] is True
    assert "--force-webrtc-ip-handling-policy=disable_non_proxied_udp" in sandboxed["args"]
    assert "--webrtc-ip-handling-policy=disable_non_proxied_udp" in sandboxed["args"]
    assert "ANTHROPIC_API_KEY" not in sandboxed["env"] and sandboxed["env"]["PATH"] == os.environ["PATH"]
    assert not any(a.startswith("--host-resolver-rules") for a in sandboxed["args"])  # no list: no rules
    unsandboxed = launch_options(headless=True, executable=None, sandbox=False, allowed=("example.com",))
    assert unsandboxed["args"][0] == "--no-sandbox" and unsandboxed["chromium_sandbox"] is False
    assert "--host-resolver-rules=MAP * ~NOTFOUND, EXCLUDE example.com" in unsandboxed["args"]
    assert (
        resolver_rules(("a.test", "*.b.test", "bad, MAP * 1.2.3.4"))
        == "MAP * ~NOTFOUND, EXCLUDE a.test, EXCLUDE *.b.test"
    )


def test_it_warns_and_tells_the_run_when_chromium_runs_without_its_sandbox(make_tools, sites, monkeypatch, caplog):
    monkeypatch.setattr(browser_launch, "sandbox_problem", lambda: "a test says so")
    tools = make_tools()
    with caplog.at_level(logging.WARNING, logger="agents.browser.launch"):
        tools.open(sites[0].url("/"))
    assert "Chromium runs WITHOUT its sandbox: a test says so" in caplog.text
    assert "security: Chromium runs WITHOUT its sandbox: a test says so" in tools.notes
    commands = [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in chromium_processes(tools.profile_dir)]
    assert any(b"--no-sandbox" in c for c in commands)


def test_it_tries_the_sandbox_first_and_falls_back_only_when_chromium_refuses_it(
    make_tools, sites, monkeypatch, caplog
):
    monkeypatch.setattr(browser_launch, "probe_sandbox", lambda: None)  # the kernel seems to allow it
    monkeypatch.setattr(browser_launch, "_sandbox_failed", [])
    tools = make_tools()
    with caplog.at_level(logging.WARNING, logger="agents.browser.launch"):
        tools.open(sites[0].url("/"))
    assert not tools.call("read_page", {}).is_error
    commands = [Path(f"/proc/{pid}/cmdline").read_bytes() for pid in chromium_processes(tools.profile_dir)]
    if os.geteuid() != 0 and not browser_launch._sandbox_failed:
        assert commands and not any(b"--no-sandbox" in c for c in commands)  # sandboxed
        return
    # as root (CI, containers) Chromium refuses to start sandboxed: the fallback is said, once
    assert "Chromium runs WITHOUT its sandbox: it did not start with its sandbox" in caplog.text
    assert any(n.startswith("security: Chromium runs WITHOUT its sandbox") for n in tools.notes)
    assert any(b"--no-sandbox" in c for c in commands)
    assert browser_launch.sandbox_problem().startswith("it did not start with its sandbox")


def test_chromium_never_sees_the_workers_secrets(make_tools, sites, monkeypatch):
    for name, value in SECRETS.items():
        monkeypatch.setenv(name, value)
    tools = make_tools()
    tools.open(sites[0].url("/"))
    pids = chromium_processes(tools.profile_dir)
    assert pids, "no Chromium process found for the profile"
    for pid in pids:
        try:
            environ = environ_of(pid)
        except OSError:  # a helper that ended meanwhile
            continue
        assert not set(SECRETS) & set(environ), (pid, sorted(environ))
        assert not any(value in "\n".join(environ.values()) for value in SECRETS.values())
    assert "PATH" in environ_of(pids[0])


# -- 2. allowed_domains on redirects and frames -----------------------------------------------------


def test_a_redirect_to_a_host_outside_the_list_is_refused_and_reported(make_tools, sites):
    a, b = sites
    a.pages["/go"] = ("redirect", b.url("/secret", host="localhost"))
    a.pages["/links"] = f"<title>Links</title><a href='{a.url('/go')}'>onwards</a>"
    tools = make_tools(allowed_domains=("127.0.0.1",))
    tools.open(a.url("/links"))

    result = tools.call("navigate", {"url": a.url("/go")})
    assert result.is_error
    assert "[refused: the page was sent to localhost, outside this recipe's allowed_domains (127.0.0.1)" in (
        result.content
    )
    assert "allowed_domains refused 1 request(s)" in result.content and "/secret" in result.content
    page = tools.call("read_page", {}).content
    assert "B CONTENT" not in page and "URL: about:blank" in page
    assert b.log == []  # the browser never even reached B

    tools.call("navigate", {"url": a.url("/links")})
    clicked = tools.call("click", {"text": "onwards"})  # the same redirect, from a link
    assert "refused: the page was sent to localhost" in clicked.content
    assert "B CONTENT" not in tools.call("read_page", {}).content and b.log == []


def test_frames_outside_the_list_are_refused_directly_or_through_a_redirect(make_tools, sites):
    a, b = sites
    b.pages["/frame"] = "<title>B frame</title><p>B CONTENT in a frame</p>"
    a.pages["/hop"] = ("redirect", b.url("/frame", host="localhost"))
    a.pages["/framed"] = (
        f"<title>Framed</title><p>own text</p><iframe src='{b.url('/frame', host='localhost')}'></iframe>"
    )
    a.pages["/hopped"] = f"<title>Hopped</title><p>own text</p><iframe src='{a.url('/hop')}'></iframe>"
    tools = make_tools(allowed_domains=("127.0.0.1",))
    tools.open(a.url("/"))
    for path in ("/framed", "/hopped"):
        said = tools.call("navigate", {"url": a.url(path)}).content
        said += tools.call("wait_for_text", {"text": "own text"}).content
        for _ in range(20):  # the frame's request may be refused a moment after the page loads
            said += tools.call("read_page", {}).content
            if "allowed_domains refused" in said:
                break
        assert "[allowed_domains refused 1 request(s)" in said and f"localhost:{b.port}/frame" in said, path
        assert "own text" in said and "B CONTENT" not in said  # the page itself stays
        frames = tools._run(lambda: [f.url for f in tools.tab.page.frames])
        assert not any("localhost" in url for url in frames), frames
    assert b.log == []


def test_the_way_out_refuses_what_routing_cannot_see(make_tools, sites, loopback_pages_allowed):
    """Without the listeners too, a redirect hop outside the list never connects: the browser
    resolves no name itself, and its egress proxy refuses a host outside allowed_domains. C
    listens on 127.0.0.2, allowed as a private host here, so only allowed_domains holds it."""
    a = sites[0]
    c = Site(host="127.0.0.2")
    private_hosts = (*loopback_pages_allowed, "127.0.0.2")
    try:
        c.pages["/secret"] = "<title>C</title><p>C CONTENT from outside</p>"
        a.pages["/go"] = ("redirect", c.url("/secret"))
        reach = make_tools(profile="reach", private_hosts=private_hosts)  # no list: the redirect reaches C
        reach.open(a.url("/go"))
        assert "C CONTENT" in reach.call("read_page", {}).content and "/secret" in c.log
        reach.close()
        c.log.clear()

        tools = make_tools(allowed_domains=("127.0.0.1",), private_hosts=private_hosts)
        tools.open(a.url("/"))
        tools._run(lambda: tools.tab.context.remove_listener("request", tools.guard._watch_request))
        tools.call("navigate", {"url": a.url("/go")})
        assert "C CONTENT" not in tools.call("read_page", {}).content and c.log == []
    finally:
        c.close()


# -- 3. what a key press amounts to -------------------------------------------------------------------


FORM = """<!doctype html><title>Form</title>
<form method="get" action="/done">
  <label>Title <input name="title" id="title"></label>
  <button type="button" id="preview">Preview</button>
  <button type="submit" id="go">Publish now</button>
</form>
<button id="loose" aria-label="Publish everywhere">P</button>
<a href="/admin/users" id="admin">Users</a>
<script>/* a page that would hide what a key press does, were it asked in its own world */
Element.prototype.closest = () => null;
Object.defineProperty(HTMLInputElement.prototype, "form", {get: () => null});
Object.defineProperty(Document.prototype, "activeElement", {get: () => null});
</script>"""


@pytest.fixture
def form_page(make_tools, sites):
    a = sites[0]
    a.pages["/form"] = FORM
    tools = make_tools()
    tools.open(a.url("/form"))
    return tools, a


def test_enter_in_a_field_is_a_click_on_its_forms_submit_button(form_page):
    tools, _ = form_page
    pairs = tools.approval_equivalents("press", {"key": "Enter", "selector": "#title"})
    assert pairs[0][0] == "press" and pairs[1][0] == "click"
    assert "Publish now" in pairs[1][1] and "Preview" not in pairs[1][1]
    assert gate_call(["click:Publish*"], pairs) == ("click:Publish*", "Publish now")
    # typed as a newline, or pressed on the focused field, it is the same
    assert gate_call(["click:Publish*"], tools.approval_equivalents("type", {"text": "x\n", "selector": "#title"}))
    tools.call("click", {"selector": "#title"})
    assert gate_call(["click:Publish*"], tools.approval_equivalents("press", {"key": "Enter"}))
    assert gate_call(["click:Publish*"], tools.approval_equivalents("press", {"key": "Shift+Enter"}))
    # keys that neither click nor submit stay what they are
    assert tools.approval_equivalents("press", {"key": "Tab"}) == [("press", ["Tab"])]
    assert (
        gate_call(["click:Publish*"], tools.approval_equivalents("type", {"text": "abc", "selector": "#title"})) is None
    )


def test_enter_or_space_on_a_button_is_a_click_on_it(form_page):
    tools, _ = form_page
    for key in ("Enter", "Space", " "):
        pairs = tools.approval_equivalents("press", {"key": key, "selector": "#loose"})
        assert gate_call(["click:Publish*"], pairs) == ("click:Publish*", "Publish everywhere"), key
    tools.call("click", {"selector": "#preview"})  # focus on a harmless button
    assert gate_call(["click:Publish*"], tools.approval_equivalents("press", {"key": "Space"})) is None
    # Enter anywhere in a form is gated as its submit, to be safe
    assert gate_call(["click:Publish*"], tools.approval_equivalents("press", {"key": "Enter"}))


def test_a_click_or_an_enter_on_a_link_or_a_submit_opens_its_url(form_page):
    tools, a = form_page
    admin = a.url("/admin/users")
    assert ("navigate", [admin]) in tools.approval_equivalents("click", {"text": "Users"})
    assert ("navigate", [admin]) in tools.approval_equivalents("press", {"key": "Enter", "selector": "#admin"})
    assert gate_call([f"navigate:{a.url('/admin/*')}"], tools.approval_equivalents("click", {"selector": "#admin"}))
    # a submit opens the form's action
    assert ("navigate", [a.url("/done")]) in tools.approval_equivalents("click", {"text": "Publish now"})
    assert ("navigate", [a.url("/done")]) in tools.approval_equivalents("press", {"key": "Enter", "selector": "#title"})
    assert not any(tool == "navigate" for tool, _ in tools.approval_equivalents("click", {"selector": "#preview"}))


def test_navigate_subjects_are_the_url_the_tool_opens(form_page):
    tools, a = form_page
    assert tools.approval_subjects("navigate", {"url": "  /admin/x "}) == [a.url("/admin/x")]
