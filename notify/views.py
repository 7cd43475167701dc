"""The Notifications pages: channels (admins only) and the delivery log (operators and admins).

Function views, one small POST endpoint per action; every page needs a login and every POST
Django's CSRF token (the middleware); roles are checked here on the server.
"""

from __future__ import annotations

from django.contrib import messages
from django.contrib.auth.decorators import login_required
from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, redirect, render
from django.views.decorators.http import require_POST

from audit.services import audit_record
from notify import selectors, services
from notify.forms import ChannelForm
from notify.models import Channel, DeliveryState
from rysh_site.roles import require, user_can

SHOW_ONCE = "notify_secret_once"  # session key: a generated secret, shown on the next page only


@login_required
def channel_list(request: HttpRequest) -> HttpResponse:
    """The channels and the add form; POST adds one."""
    require(request.user, "admin")
    form = ChannelForm(request.POST or None, initial={"enabled": True})
    if request.method == "POST" and form.is_valid():
        saved = _save(request, form, None)
        if saved is not None:
            return redirect("channel_edit", saved.pk)
    return render(request, "notify/channel_list.html", {"channels": Channel.objects.all(), "form": form})


@login_required
def channel_edit(request: HttpRequest, pk: int) -> HttpResponse:
    require(request.user, "admin")
    channel = get_object_or_404(Channel, pk=pk)
    initial = {
        "name": channel.name,
        "kind": channel.kind,
        "recipients": channel.recipients,
        "events": channel.events,
        "enabled": channel.enabled,
    }
    form = ChannelForm(request.POST or None, initial=initial)
    if request.method == "POST" and form.is_valid():
        if _save(request, form, channel) is not None:
            messages.success(request, f"channel {channel.name} saved")
            return redirect("channel_edit", channel.pk)
    return render(
        request,
        "notify/channel_edit.html",
        {
            "channel": channel,
            "form": form,
            "new_secret": request.session.pop(SHOW_ONCE, None) if request.method == "GET" else None,
            "deliveries": channel.deliveries.all()[:20],
        },
    )


def _save(request: HttpRequest, form: ChannelForm, channel: Channel | None) -> Channel | None:
    data = form.cleaned_data
    try:
        saved, new_secret = services.channel_save(
            user=request.user,
            channel=channel,
            name=data["name"],
            kind=data["kind"],
            url=data["url"],
            secret=data["secret"],
            recipients=data["recipients"],
            events_wanted=data["events"],
            enabled=data["enabled"],
        )
    except services.ChannelError as exc:
        form.add_error(exc.field, str(exc))
        return None
    if new_secret:
        request.session[SHOW_ONCE] = new_secret
    return saved


@login_required
@require_POST
def channel_delete(request: HttpRequest, pk: int) -> HttpResponse:
    require(request.user, "admin")
    channel = get_object_or_404(Channel, pk=pk)
    messages.success(request, services.channel_delete(channel=channel, user=request.user))
    return redirect("channel_list")


@login_required
@require_POST
def channel_test(request: HttpRequest, pk: int) -> HttpResponse:
    require(request.user, "admin")
    channel = get_object_or_404(Channel, pk=pk)
    delivery = services.channel_test(channel=channel)
    audit_record(
        actor=request.user,
        action="channel.test",
        target=("channel", channel.pk, f"channel {channel.name}"),
        detail={"delivery": delivery.pk},
    )
    messages.success(request, f"test delivery #{delivery.pk} queued for {channel.name}; its attempts show below")
    return redirect("delivery_list")


@login_required
def delivery_list(request: HttpRequest) -> HttpResponse:
    """The log: each delivery's attempts, status, error and next retry. Operators see it too
    (they act on what it reports); only admins see the channels' settings."""
    require(request.user, "operate")
    state = request.GET.get("state", "")
    state = state if state in DeliveryState.values else ""
    return render(
        request,
        "notify/delivery_list.html",
        {
            "deliveries": selectors.deliveries_page(state=state),
            "state": state,
            "states": DeliveryState.values,
            "is_admin": user_can(request.user, "admin"),
        },
    )
