"""What the browser of a web recipe raises (agents/browser/__init__.py and its parts)."""


class BrowserError(Exception):
    """The browser could not be started: the profile is busy, Chromium is missing…"""


class ToolError(Exception):
    """A tool call that failed in a way the model should hear about."""
