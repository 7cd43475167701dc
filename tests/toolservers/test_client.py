"""The MCP client (agents/mcp_client.py) against real servers built with the SDK: tools named
`<server>__<tool>`, only the admin's environment, timeouts, cut results, images, a crash
restarted once then reported, an injection that stays data, nothing left running."""

import os
import subprocess
import sys
import time
from pathlib import Path

import pytest

from agents.mcp_client import McpTools, ServerConfig, list_server_tools, schema_problem
from agents.ports import ToolResult, Tools
from tests.toolservers.conftest import SCRIPT
from tests.toolservers.servers import INJECTION


class Inner(Tools):
    notes: list = []

    def specs(self):
        return [{"name": "save_result", "description": "", "input_schema": {"type": "object"}}]

    def call(self, name, arguments):
        return ToolResult(f"inner {name}")


def stdio(name, env=None):
    return ServerConfig(name, "stdio", command=(sys.executable, SCRIPT, "stdio", name), env=env or {})


def running(marker: str) -> bool:
    out = subprocess.run(["pgrep", "-f", marker], capture_output=True, text=True).stdout
    return bool(out.strip())


def test_it_lists_a_stdio_server_and_an_http_server(http_server):
    tools, problems = list_server_tools(stdio("tracker"))
    assert [t.name for t in tools] == ["search_issues", "add_comment", "environment"] and problems == []
    assert tools[1].input_schema["required"] == ["issue", "text"]
    url = http_server("tracker")
    tools, _ = list_server_tools(ServerConfig("web", "http", url=url, headers={"Authorization": "Bearer t"}))
    assert "search_issues" in [t.name for t in tools]


def test_a_server_that_does_not_answer_is_a_clear_error():
    from agents.mcp_client import McpError

    with pytest.raises(McpError):
        list_server_tools(ServerConfig("gone", "stdio", command=("/bin/false",)), timeout=5)
    with pytest.raises(McpError):
        list_server_tools(ServerConfig("gone", "http", url="http://127.0.0.1:9/mcp"), timeout=5)


def test_a_schema_that_is_not_json_schema_is_refused():
    assert schema_problem([1]) == "its input schema is not a JSON object"
    assert "not an object" in schema_problem({"type": "string"})
    assert schema_problem({"type": "object", "properties": 3}) is not None


def test_the_tools_port_names_calls_and_survives_a_misbehaving_server(http_server):
    url = http_server("flaky")
    tools = McpTools(
        Inner(),
        [stdio("tracker", env={"TRACKER_TOKEN": "s3cret"}), ServerConfig("flaky", "http", url=url)],
        allowed={"tracker": ("search_issues", "environment"), "flaky": None},
        call_timeout=2,
    )
    try:
        names = [s["name"] for s in tools.specs()]
        assert names[0] == "save_result" and "tracker__search_issues" in names and "flaky__slow" in names
        assert "tracker__add_comment" not in names  # narrowed by `tools:`
        described = {s["name"]: s for s in tools.specs()}["tracker__search_issues"]
        assert "[MCP server tracker]" in described["description"] and described["input_schema"]["type"] == "object"
        env = tools.call("tracker__environment", {}).content
        assert "TRACKER_TOKEN=s3cret" in env and "ANTHROPIC" not in env and "DJANGO" not in env and "HOME" not in env
        assert tools.call("tracker__search_issues", {"query": "x"}).content.startswith("#12 x")
        assert tools.call("save_result", {}).content == "inner save_result"
        assert tools.call("tracker__add_comment", {}).is_error  # not offered
        began = time.monotonic()
        slow = tools.call("flaky__slow", {"seconds": 20})
        assert slow.is_error and "no answer within 2s" in slow.content and time.monotonic() - began < 5
        tools.room_chars = 500
        huge = tools.call("flaky__huge", {"chars": 200_000})
        assert len(huge.content) < 700 and "[cut: 200,000 → 500" in huge.content
        assert tools.call("flaky__huge", {"chars": 2_000_000}).is_error  # past the SDK's 1 MB event limit
        picture = tools.call("flaky__picture", {})
        assert picture.images[0]["media_type"] == "image/png"
        assert tools.call("flaky__broken", {}).is_error
        injected = tools.call("flaky__read_issue", {})
        assert injected.content == INJECTION and not injected.is_error  # data for the model, nothing more
    finally:
        tools.close()


def test_a_dead_stdio_server_is_restarted_once_then_reported_and_stopped_with_the_pass():
    tools = McpTools(Inner(), [stdio("flaky")], allowed={"flaky": None}, call_timeout=5)
    tools.specs()
    first = tools.call("flaky__crash", {})
    assert first.is_error and "restarted" in first.content
    assert tools.call("flaky__read_issue", {}).content == INJECTION
    second = tools.call("flaky__crash", {})
    assert second.is_error and "died again" in second.content
    assert "not available" in tools.call("flaky__read_issue", {}).content
    assert any("restarted once" in note for note in tools.notes)
    tools.pass_ended(1)
    tools.specs()  # a new pass: a fresh server
    assert tools.call("flaky__read_issue", {}).content == INJECTION
    assert running(f"{SCRIPT} stdio flaky")
    tools.close()
    time.sleep(0.3)
    assert not running(f"{SCRIPT} stdio flaky")


def test_a_cancel_stops_a_call_in_flight():
    why = {}
    tools = McpTools(
        Inner(), [stdio("flaky")], allowed={"flaky": None}, call_timeout=30, cancelled=lambda: why.get("now")
    )
    try:
        tools.specs()
        began = time.monotonic()
        import threading

        threading.Timer(0.5, lambda: why.update(now="the run was cancelled")).start()
        result = tools.call("flaky__slow", {"seconds": 20})
        assert result.is_error and "cancelled" in result.content and time.monotonic() - began < 3
    finally:
        tools.close()
    assert os.environ.get("RYSH_TEST_NEVER") is None


def test_a_sandboxed_stdio_server_runs_without_network_and_without_the_hidden_folders(tmp_path):
    """The admin's default: the server in bubblewrap (agents.sandbox.server_wrap). It starts even
    when its Python lives under a hidden folder (a pyenv under HOME: the interpreter comes back
    read-only, nothing else there), sees no hidden folder's files and opens no connection."""
    import socket

    from agents.sandbox import SandboxConfig, sandbox_problem, server_wrap

    secret = tmp_path / "data"
    secret.mkdir()
    (secret / "db.sqlite3").write_text("secret")
    config = SandboxConfig(enabled=True, hidden=(str(secret), str(Path.home().resolve())))
    if problem := sandbox_problem(config):
        pytest.fail(f"bubblewrap must work here (make test installs it): {problem}")
    listener = socket.create_server(("127.0.0.1", 0))
    port = listener.getsockname()[1]
    probe = ServerConfig("probe", "stdio", command=(sys.executable, SCRIPT, "stdio", "probe"), wrap=server_wrap(config))
    tools = McpTools(Inner(), [probe], allowed={"probe": None}, call_timeout=20)
    try:
        assert {"probe__listing", "probe__connect"} <= {s["name"] for s in tools.specs()}
        assert tools.call("probe__listing", {"path": str(secret)}).content == "(empty)"
        assert tools.call("probe__listing", {"path": str(tmp_path)}).content == "data"  # the rest: read-only
        assert tools.call("probe__connect", {"port": port}).content.startswith("refused")
    finally:
        tools.close()
        listener.close()


def sandboxed(tmp_path) -> tuple:
    """The admin's default sandbox, with a data folder and the worker's HOME hidden."""
    from agents.sandbox import SandboxConfig, sandbox_problem, server_wrap

    secret = tmp_path / "data"
    secret.mkdir(exist_ok=True)
    (secret / "db.sqlite3").write_text("secret")
    config = SandboxConfig(enabled=True, hidden=(str(secret), str(Path.home().resolve())))
    if problem := sandbox_problem(config):
        pytest.fail(f"bubblewrap must work here (make test installs it): {problem}")
    return server_wrap(config), secret


def test_a_sandboxed_server_and_its_virtualenv_under_tmp_start_and_nothing_else_there_shows(tmp_path):
    """The sandbox gives a server a private /tmp: a server installed under /tmp (a clone of the
    project there, its virtualenv beside it) comes back read-only — its program, its
    interpreter and the folders they load from — and nothing else of /tmp does."""
    import shutil

    assert str(tmp_path).startswith("/tmp/")
    wrap, _secret = sandboxed(tmp_path)
    venv = tmp_path / "venv"
    venv.symlink_to(sys.prefix)  # the clone's `.venv` link, as `make test` in a clone under /tmp has it
    code = tmp_path / "server"
    code.mkdir()
    shutil.copy(SCRIPT, code / "servers.py")
    (tmp_path / "notes.txt").write_text("not the server's")
    command = (str(venv / "bin" / "python"), str(code / "servers.py"), "stdio", "probe")
    tools = McpTools(Inner(), [ServerConfig("probe", "stdio", command=command, wrap=wrap)], allowed={"probe": None})
    try:
        assert "probe__listing" in {s["name"] for s in tools.specs()}, tools.notes
        # the hidden data folder shows empty; notes.txt does not show at all
        assert tools.call("probe__listing", {"path": str(tmp_path)}).content == "data,server,venv"
        assert tools.call("probe__listing", {"path": str(tmp_path / "data")}).content == "(empty)"
        assert tools.call("probe__listing", {"path": str(code)}).content == "servers.py"
    finally:
        tools.close()


SECRET = "s3cret-value-8d1f"


def command_lines() -> dict[int, str]:
    found = {}
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                found[int(entry.name)] = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace")
            except OSError:
                continue
    return found


def parent_of(pid: int) -> int:
    status = Path(f"/proc/{pid}/status").read_text()
    return int(next(line.split()[1] for line in status.splitlines() if line.startswith("PPid:")))


@pytest.mark.parametrize("in_sandbox", [True, False])
def test_no_command_line_ever_holds_a_server_s_secret(tmp_path, in_sandbox):
    """A stdio server gets its environment through a file only it reads (then removed), never
    on a command line that `ps` shows any local user: neither the server's nor bwrap's."""
    import tempfile

    wrap = sandboxed(tmp_path)[0] if in_sandbox else ()
    config = ServerConfig(
        "tracker", "stdio", command=(sys.executable, SCRIPT, "stdio", "tracker"), env={"TOKEN": SECRET}, wrap=wrap
    )
    before = set(Path(tempfile.gettempdir()).glob("rysh-mcp-*"))
    tools = McpTools(Inner(), [config], allowed={"tracker": None})
    try:
        assert f"TOKEN={SECRET}" in tools.call("tracker__environment", {}).content  # it has it
        lines = command_lines()
        server = next(pid for pid, line in lines.items() if line.startswith(f"{sys.executable} {SCRIPT} stdio tracker"))
        chain = [server, parent_of(server)]
        if in_sandbox:
            assert any("bwrap" in lines.get(pid, "") for pid in (chain[1], parent_of(chain[1]))), lines[chain[1]]
            chain.append(parent_of(chain[1]))
        assert all(SECRET not in lines.get(pid, "") for pid in chain)
        assert [pid for pid, line in lines.items() if SECRET in line] == []
        assert set(Path(tempfile.gettempdir()).glob("rysh-mcp-*")) == before  # the file is gone once it started
    finally:
        tools.close()


def test_a_start_failure_says_the_last_lines_of_the_server_s_stderr_its_secrets_masked():
    from agents.mcp_client import McpError

    crash = "import os, sys; sys.stderr.write('loading config\\nbad token ' + os.environ['TOKEN'] + '\\n'); sys.exit(2)"
    config = ServerConfig("broken", "stdio", command=(sys.executable, "-c", crash), env={"TOKEN": SECRET})
    with pytest.raises(McpError) as raised:
        list_server_tools(config, timeout=10)
    said = str(raised.value)
    assert "its stderr ended: loading config | bad token ••••" in said and SECRET not in said


def test_an_http_result_past_1_mb_is_read_up_to_the_cap_and_a_larger_one_is_a_tool_error_not_a_death(http_server):
    """The SDK's limit on one SSE event (1 MB) follows RYSH_MCP_RESULT_CHARS: a result it allows
    is read and cut to the cap; one past even that is a tool error on a healthy server — no
    restart spent, no "outcome unknown", the server's tools stay."""
    url = http_server("flaky")
    tools = McpTools(Inner(), [ServerConfig("flaky", "http", url=url)], allowed={"flaky": None}, result_chars=300_000)
    try:
        tools.specs()
        read = tools.call("flaky__huge", {"chars": 1_500_000})
        assert not read.is_error and read.content.startswith("x" * 300_000)
        assert "[cut: 1,500,000 → 300,000 characters" in read.content
        refused = tools.call("flaky__huge", {"chars": 8_000_000})
        assert refused.is_error and "larger than" in refused.content and "restarted" not in refused.content
        assert tools.call("flaky__read_issue", {}).content == INJECTION
        assert tools.hub.servers["flaky"].starts == 1 and not any("died" in note for note in tools.notes)
    finally:
        tools.close()


def test_the_cut_marker_says_which_limit_cut_and_a_second_cut_keeps_the_original_size():
    from runs.engine.fitting import cut_results

    tools = McpTools(Inner(), [stdio("flaky")], allowed={"flaky": None}, result_chars=1000)
    try:
        tools.specs()
        capped = tools.call("flaky__huge", {"chars": 50_000}).content
        assert capped.endswith(
            "[cut: 50,000 → 1,000 characters: a result is capped at RYSH_MCP_RESULT_CHARS; ask for less]"
        )
        tools.room_chars = 500
        budget = tools.call("flaky__huge", {"chars": 50_000}).content
        assert "[cut: 50,000 → 500 characters to fit the budget left;" in budget
    finally:
        tools.close()
    # the engine cuts it again to make room: the marker still says what the server sent
    [again] = cut_results([{"type": "tool_result", "tool_use_id": "t", "content": capped}], 800)
    assert again["content"].startswith("x" * 100) and "[cut: 50,000 → " in again["content"]
    assert again["content"].count("[cut:") == 1


def test_images_count_against_the_cap_and_the_room_and_keep_their_place_among_the_texts():
    from runs.conversation import tool_result

    tools = McpTools(Inner(), [stdio("flaky")], allowed={"flaky": None}, result_chars=12_000)
    try:
        tools.specs()
        shown = tools.call("flaky__pictures", {"count": 3, "kb": 4})  # ~5,500 base64 characters each
        assert len(shown.images) == 2
        assert "picture 2" in shown.content and "left out" in shown.content and "RYSH_MCP_RESULT_CHARS" in shown.content
        blocks = tool_result("t", shown.content, shown.is_error, shown.images)["content"]
        kinds = [b["type"] if b["type"] == "image" else b["text"].splitlines()[0] for b in blocks]
        assert kinds == ["picture 0", "image", "picture 1", "image", "picture 2"], kinds
        assert blocks[-1]["text"].endswith("that is all")
        tools.room_chars = 6_000
        assert len(tools.call("flaky__pictures", {"count": 3, "kb": 4}).images) == 1
        tools.room_chars = 100
        tight = tools.call("flaky__pictures", {"count": 20, "kb": 1024})  # 20 × 1 MB: none go through
        assert tight.images == [] and "the budget left" in tight.content
    finally:
        tools.close()


def test_a_tool_that_needs_task_augmentation_is_left_out_and_said():
    tools = McpTools(Inner(), [stdio("flaky")], allowed={"flaky": None})
    try:
        names = {s["name"] for s in tools.specs()}
        assert "flaky__pictures" in names and "flaky__later" not in names
        assert any("later" in note and "task" in note for note in tools.notes), tools.notes
    finally:
        tools.close()


def test_an_http_server_that_cannot_be_restarted_is_not_said_restarted(http_server):
    url = http_server("flaky")
    tools = McpTools(
        Inner(), [ServerConfig("flaky", "http", url=url)], allowed={"flaky": None}, call_timeout=10, connect_timeout=5
    )
    try:
        tools.specs()
        crashed = tools.call("flaky__crash", {})  # the whole HTTP server exits
        assert crashed.is_error and "unavailable for the rest" in crashed.content
        assert not any("restarted once" in note for note in tools.notes), tools.notes
        assert any("could not be restarted" in note for note in tools.notes), tools.notes
    finally:
        tools.close()


def test_a_key_in_a_server_url_never_reaches_a_log_line_or_an_error(http_server, caplog):
    """The URL's query may hold the server's key (`…/mcp?key=…`): the HTTP client's request
    lines, the SDK's and an error that quotes the URL show it masked."""
    import logging

    from agents.mcp_client import McpError

    key = "k3y-3f9a1c"
    url = http_server("tracker") + f"?key={key}"
    with caplog.at_level(logging.DEBUG):
        tools, _ = list_server_tools(ServerConfig("web", "http", url=url))
        with pytest.raises(McpError) as refused:
            list_server_tools(ServerConfig("web", "http", url=url.replace("/mcp?", "/nope?")), timeout=5)
    assert "search_issues" in [t.name for t in tools]
    lines = [record.getMessage() for record in caplog.records]
    assert any("HTTP Request: POST" in line and "?••••" in line for line in lines), lines
    assert not [line for line in lines if key in line]
    assert key not in str(refused.value)
