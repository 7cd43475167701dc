"""HTTP through Django, but /mcp/ (the dashboard's MCP server, api/views/mcp_server.py, behind an
API token); websockets through Channels, behind login and an origin check."""

import os

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "rysh_site.settings")

from django.core.asgi import get_asgi_application  # noqa: E402

django_asgi_app = get_asgi_application()

from channels.auth import AuthMiddlewareStack  # noqa: E402
from channels.routing import ProtocolTypeRouter, URLRouter  # noqa: E402
from channels.security.websocket import OriginValidator  # noqa: E402
from django.conf import settings  # noqa: E402

from accounts.oidc import provider_check  # noqa: E402
from api.views import mcp_server  # noqa: E402
from runs.live.routing import websocket_urlpatterns  # noqa: E402

# With company login on, the provider's discovery document is read now: a wrong or unreachable
# issuer stops the web server at start with what to set, not the first login with a 500.
provider_check()


class SiteOriginValidator(OriginValidator):
    """Exact origins (scheme://host:port, settings.RYSH_WS_ORIGINS), read per connection, so another
    port on an allowed host is refused (AllowedHostsOriginValidator matches the host alone)."""

    def __init__(self, application):
        super().__init__(application, allowed_origins=())

    @property
    def allowed_origins(self):
        return settings.RYSH_WS_ORIGINS

    @allowed_origins.setter
    def allowed_origins(self, value):
        pass  # always the settings' list


async def http_app(scope, receive, send):
    """/mcp and /mcp/… to the MCP server (its own Bearer-token check), all else to Django."""
    if mcp_server.is_mcp_path(scope["path"]):
        return await mcp_server.application(scope, receive, send)
    return await django_asgi_app(scope, receive, send)


websocket_app = AuthMiddlewareStack(URLRouter(websocket_urlpatterns))
application = ProtocolTypeRouter(
    {
        "http": http_app,
        "websocket": SiteOriginValidator(websocket_app),
    }
)
