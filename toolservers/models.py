"""MCP servers a team registers once (admins): a name recipes use in `mcp:`, and either a stdio
command or a streamable-HTTP URL.

Secrets (a stdio server's environment variables, an HTTP server's headers) are stored to be
used and never shown back: pages and the CLI read `env_masked` and `headers_masked`, which
name the variables and headers, never their values. The tools a server listed at its last
test (or at the start of a run that used it) are kept, for the page and for the recipe check
of `tools: [...]`.
"""

from __future__ import annotations

import json
import re

from django.core.validators import RegexValidator
from django.db import models

from rysh_site.models import Stamped

MASK = "••••"
# a server's name starts its tools' names (`tracker__add_comment`), which the Messages API
# allows only letters, digits, '_' and '-' in: no '.' here, unlike other names
SERVER_NAME_RE = re.compile(r"[a-z0-9][a-z0-9-]*\Z")
SERVER_NAME_EXPECTED = "lowercase letters, digits or '-', starting with a letter or digit"


class Transport(models.TextChoices):
    STDIO = "stdio", "stdio (a command the worker starts)"
    HTTP = "http", "streamable HTTP (a URL)"


class ToolServer(Stamped):
    name = models.CharField(
        max_length=30, unique=True, validators=[RegexValidator(SERVER_NAME_RE, SERVER_NAME_EXPECTED)]
    )
    transport = models.CharField(max_length=10, choices=Transport.choices)
    command = models.JSONField(default=list, blank=True)  # stdio: the program and its arguments
    env = models.JSONField(default=dict, blank=True)  # stdio: its only environment (secrets)
    sandboxed = models.BooleanField(default=True)  # stdio: in the coding loops' sandbox, without network
    url = models.CharField(max_length=2000, blank=True)  # http
    headers = models.JSONField(default=dict, blank=True)  # http: e.g. Authorization (secrets)
    tools = models.JSONField(default=list, blank=True)  # [{name, description, input_schema}] as last listed
    problems = models.TextField(blank=True)  # tools left out at the last listing, and why
    listed_at = models.DateTimeField(null=True, blank=True)
    last_error = models.CharField(max_length=500, blank=True)
    # created_by, created_at, updated_at: Stamped (rysh_site/models.py)

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return f"{self.name} ({self.transport})"

    @property
    def where(self) -> str:
        """The command or the URL, as shown: a URL without its query (it may hold a key)."""
        if self.transport == Transport.STDIO:
            return " ".join(self.command)
        return self.url.split("?", 1)[0] + (f"?{MASK}" if "?" in self.url else "")

    @property
    def env_masked(self) -> list[str]:
        return [f"{key}={MASK}" for key in sorted(self.env)]

    @property
    def headers_masked(self) -> list[str]:
        return [f"{key}: {MASK}" for key in sorted(self.headers)]

    @property
    def tool_names(self) -> list[str]:
        return [tool.get("name", "") for tool in self.tools]

    @property
    def tools_shown(self) -> list[dict]:
        """The tools for the page: each with its input schema as JSON, the way the server sent it."""
        return [
            {**tool, "schema_json": json.dumps(tool.get("input_schema"), indent=2, ensure_ascii=False)}
            for tool in self.tools
        ]
