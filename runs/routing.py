"""The runs app's websockets: the live dashboard and one run's page."""

from django.urls import path

from runs.consumers import LiveConsumer

websocket_urlpatterns = [
    path("ws/live/", LiveConsumer.as_asgi()),
    path("ws/runs/<int:run_id>/", LiveConsumer.as_asgi()),
]
