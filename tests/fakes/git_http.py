"""A git smart-HTTP server on 127.0.0.1 that wants a Basic login: `git http-backend` (CGI)
behind a small threaded HTTP server. It proves that clone, fetch and push authenticate with a
token that never appears in a URL git is given.

    with GitHTTP(root, username="alice", password="s3cret") as server:
        server.url("recipes.git")   # http://127.0.0.1:PORT/recipes.git
        server.logins               # [(method, path, "ok" | "none" | "wrong"), …]
"""

from __future__ import annotations

import base64
import os
import subprocess
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import urlsplit


class GitHTTP:
    def __init__(self, root: Path, *, username: str, password: str):
        self.root = Path(root)
        self.expected = "Basic " + base64.b64encode(f"{username}:{password}".encode()).decode()
        self.username = username
        self.logins: list[tuple[str, str, str]] = []
        self.server = ThreadingHTTPServer(("127.0.0.1", 0), self._handler())
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.server.server_port}/{name}"

    def __enter__(self) -> GitHTTP:
        self.thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self.server.shutdown()
        self.server.server_close()

    def _handler(self):
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args) -> None:  # quiet
                pass

            def do_GET(self) -> None:
                self._serve()

            def do_POST(self) -> None:
                self._serve()

            def _serve(self) -> None:
                given = self.headers.get("Authorization")
                path = urlsplit(self.path)
                verdict = "none" if given is None else ("ok" if given == server.expected else "wrong")
                server.logins.append((self.command, path.path, verdict))
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                if verdict != "ok":
                    self.send_response(401)
                    self.send_header("WWW-Authenticate", 'Basic realm="git"')
                    self.send_header("Content-Length", "0")
                    self.end_headers()
                    return
                self._backend(path, body)

            def _backend(self, path, body: bytes) -> None:
                env = {
                    "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
                    "GIT_PROJECT_ROOT": str(server.root),
                    "GIT_HTTP_EXPORT_ALL": "1",
                    "REQUEST_METHOD": self.command,
                    "PATH_INFO": path.path,
                    "QUERY_STRING": path.query,
                    "CONTENT_TYPE": self.headers.get("Content-Type", ""),
                    "CONTENT_LENGTH": str(len(body)),
                    "REMOTE_USER": server.username,  # a logged-in user may push (receive-pack)
                    "REMOTE_ADDR": "127.0.0.1",
                }
                if self.headers.get("Content-Encoding"):
                    env["HTTP_CONTENT_ENCODING"] = self.headers["Content-Encoding"]
                if self.headers.get("Git-Protocol"):
                    env["GIT_PROTOCOL"] = self.headers["Git-Protocol"]
                done = subprocess.run(["git", "http-backend"], input=body, env=env, capture_output=True, check=False)
                head, _, payload = done.stdout.partition(b"\r\n\r\n")
                status, headers = 200, []
                for line in head.decode("latin-1").split("\r\n"):
                    name, _, value = line.partition(":")
                    if name.lower() == "status":
                        status = int(value.strip().split()[0])
                    elif name:
                        headers.append((name, value.strip()))
                self.send_response(status)
                for name, value in headers:
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                self.wfile.write(payload)

        return Handler
