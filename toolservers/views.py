"""The MCP servers page (admins): the registered servers, add, test (lists the tools), remove.
Secrets (environment values, header values) are written once and never shown back."""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from runs.wiring import mcp_sandbox_wrap
from rysh_site.roles import require
from toolservers.models import ToolServer, Transport
from toolservers.services import ServerError, parse_pairs, server_add, server_remove, server_test


@login_required
def server_list(request: HttpRequest) -> HttpResponse:
    """The servers and the add form; POST adds one."""
    require(request.user, "admin")
    errors, data = {}, request.POST if request.method == "POST" else {}
    if request.method == "POST":
        try:
            server = server_add(
                user=request.user,
                name=data.get("name", ""),
                transport=data.get("transport", ""),
                command=data.get("command", ""),
                env=parse_pairs(data.get("env", ""), "=", "environment variables", "env"),
                sandboxed=data.get("outside_sandbox") != "on",
                url=data.get("url", ""),
                headers=parse_pairs(data.get("headers", ""), ":", "headers", "headers"),
            )
        except ServerError as exc:
            errors[exc.field or "name"] = str(exc)
        else:
            messages.success(request, f"MCP server {server.name} added: test it to list its tools")
            return redirect("toolserver_detail", server.pk)
    form = {key: data.get(key, "") for key in ("name", "transport", "command", "url")}  # never env or headers back
    return render(
        request,
        "toolservers/server_list.html",
        {"servers": ToolServer.objects.all(), "errors": errors, "form": form, "transports": Transport.choices},
    )


@login_required
def server_detail(request: HttpRequest, pk: int) -> HttpResponse:
    require(request.user, "admin")
    return render(request, "toolservers/server_detail.html", {"server": get_object_or_404(ToolServer, pk=pk)})


@login_required
@require_POST
def server_test_view(request: HttpRequest, pk: int) -> HttpResponse:
    require(request.user, "admin")
    server = get_object_or_404(ToolServer, pk=pk)
    try:
        tools, problems = server_test(server=server, wrap=mcp_sandbox_wrap())
    except ServerError as exc:
        messages.error(request, f"test failed: {exc}")
    else:
        messages.success(
            request,
            f"{server.name} answered: {len(tools)} tool(s)" + (f"; {len(problems)} problem(s)" if problems else ""),
        )
    return redirect("toolserver_detail", server.pk)


@login_required
@require_POST
def server_delete(request: HttpRequest, pk: int) -> HttpResponse:
    require(request.user, "admin")
    server = get_object_or_404(ToolServer, pk=pk)
    messages.success(request, server_remove(server=server, user=request.user))
    return redirect("toolserver_list")
