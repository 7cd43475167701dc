"""rysh dashboard: the Django project (settings, URLs, ASGI routing, shared helpers)."""

# The dashboard's version, as it names itself to others (the MCP endpoint's serverInfo).
__version__ = "1.1.0"
