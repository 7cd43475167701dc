"""The runs app's websockets: the live dashboard, one run's page, the approvals inbox, and the
nav's count of approvals waiting."""

from django.urls import path

from runs.live.consumers import LiveConsumer

websocket_urlpatterns = [
    path("ws/live/", LiveConsumer.as_asgi()),
    path("ws/runs/<int:run_id>/", LiveConsumer.as_asgi()),
    path("ws/approvals/", LiveConsumer.as_asgi(), {"view": "approvals"}),  # the inbox
    path("ws/nav/", LiveConsumer.as_asgi(), {"view": "nav"}),  # the nav's count on pages without a socket
]
