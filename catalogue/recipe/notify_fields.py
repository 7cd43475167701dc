"""The recipe's `notify:` (docs/notifications.md), in both forms:

- ours, a list: `notify: [{channel: ops, events: [run.ended, budget.80]}]`;
- rysh's mapping: `notify: {channel: ops, to: someone@example.com, humanoid: assistant}`, which
  sends the run's outcome when it ends (the event `run.ended`) through the channel, to `to`
  instead of the channel's own recipients where the channel's kind takes one.

The shape is read here; whether the channel exists and takes `to` needs the database
(notify.selectors, registered with catalogue.checks). Pure: stdlib + PyYAML.
"""

from __future__ import annotations

import re

import yaml

from catalogue.recipe.reader import BAD, Reader, RecipeIssue
from catalogue.spec import NOTIFY_EVENTS, NotifyRule

NAME_RE = re.compile(r"[a-z0-9][a-z0-9._-]*\Z")
NAME_EXPECTED = "lowercase letters, digits, '.', '_' or '-', starting with a letter or digit"
NOTIFY_KEYS = ("channel", "events")  # one entry of the list form
NOTIFY_MAPPING_KEYS = ("channel", "to", "humanoid")  # rysh's mapping form
MAPPING_EVENTS = ("run.ended",)  # what rysh sends: the run's outcome when it ends
TO_MAX = 500
HUMANOID_ADVICE = (
    "humanoids are rysh's; this dashboard sends through channels an admin registers on the "
    "Notifications page: register one there and name it with channel:"
)
_EXPECTED = "a list of {channel: NAME, events: [...]} entries, or rysh's {channel: NAME, to: ADDRESS}"


def read_notify(r: Reader, node, field) -> tuple[NotifyRule, ...] | None:
    """Either form -> the rules; issues go to `r`."""
    if isinstance(node, yaml.MappingNode):
        rule = _read_mapping(r, node, field)
        return None if rule is None else (rule,)
    if not isinstance(node, yaml.SequenceNode):
        r.expected(node, field, _EXPECTED)
        return None
    rules = []
    for item in node.value:
        keys = r.mapping(item, field, NOTIFY_KEYS)
        if keys is None:
            continue
        channel = events = None
        if "channel" not in keys or "events" not in keys:
            missing = " and ".join(k for k in ("channel", "events") if k not in keys)
            r.add(item, field, f"expected an entry with channel and events, got one without {missing}")
        if "channel" in keys:
            channel = _channel(r, keys["channel"], f"{field}.channel")
        if "events" in keys:
            events = _read_events(r, keys["events"], f"{field}.events")
        if channel is not None and events is not None:
            rules.append(_rule(r, keys, channel, events, None))
    return tuple(rules)


def _read_mapping(r: Reader, node, field) -> NotifyRule | None:
    keys = r.mapping(node, field, NOTIFY_MAPPING_KEYS)
    if keys is None:
        return None
    if "channel" not in keys:
        if "humanoid" in keys:
            r.add(keys["humanoid"], f"{field}.humanoid", f"a humanoid cannot be notified here: {HUMANOID_ADVICE}")
        else:
            r.add(node, field, "expected channel: NAME (a channel registered on the Notifications page)")
        return None
    channel = _channel(r, keys["channel"], f"{field}.channel")
    to = _to(r, keys["to"], f"{field}.to") if "to" in keys else None
    if channel is None or ("to" in keys and to is None):
        return None
    return _rule(r, keys, channel, MAPPING_EVENTS, to)


def notify_warnings(r: Reader, node) -> list[str]:
    """rysh's `humanoid:` beside a channel: not used here, said at its line."""
    if not isinstance(node, yaml.MappingNode):
        return []
    keys = {key.value: key for key, _ in node.value if isinstance(key, yaml.ScalarNode)}
    if "humanoid" not in keys or "channel" not in keys:
        return []
    message = f"is ignored: the run's outcome goes through the channel alone ({HUMANOID_ADVICE})"
    return [str(RecipeIssue(r.label, r.line(keys["humanoid"]), "notify.humanoid", message))]


def _rule(r: Reader, keys: dict, channel: str, events: tuple[str, ...], to: str | None) -> NotifyRule:
    to_line = r.line(keys["to"]) if to is not None else None
    return NotifyRule(channel=channel, events=events, line=r.line(keys["channel"]), to=to, to_line=to_line)


def _channel(r: Reader, node, field) -> str | None:
    return r.matching(node, field, pattern=NAME_RE, what=f"a channel name ({NAME_EXPECTED})")


def _to(r: Reader, node, field) -> str | None:
    """The recipients as written (email: addresses, comma-separated); whether the channel's kind
    takes them, and their form for that kind, is the database's check."""
    value = r.value(node, field)
    if isinstance(value, str) and value.strip() and len(value) <= TO_MAX and "\n" not in value.strip():
        return ", ".join(part.strip() for part in value.split(",") if part.strip())
    if value is not BAD:
        r.expected(node, field, f"the recipients on one line (email: addresses, comma-separated; at most {TO_MAX})")
    return None


def _read_events(r: Reader, node, field) -> tuple[str, ...] | None:
    items = r.items(node, field, "event names")
    if items is None:
        return None
    events: list[str] = []
    for item, value in items:
        if isinstance(value, str) and value in NOTIFY_EVENTS:
            if value not in events:
                events.append(value)
        elif value is not BAD:
            r.expected(item, field, "one of " + ", ".join(NOTIFY_EVENTS))
    if not events and items:
        return None
    if not items:
        r.expected(node, field, "at least one event")
        return None
    return tuple(events)
