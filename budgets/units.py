"""Budget units: pages, books and shelves of tokens, and wall-clock durations.

1 page = 1,000 tokens; 1 book = 200 pages; 1 shelf = 20 books (docs/recipes.md).
Pure: no Django, no I/O. Every refusal is a UnitError whose message says what
was expected, so callers can prefix it with the file, line and field.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation, localcontext

PAGE = 1_000
BOOK = 200 * PAGE
SHELF = 20 * BOOK

_UNITS = {"p": PAGE, "b": BOOK, "s": SHELF}
_SIZE_RE = re.compile(r"^\s*(?P<num>[0-9]+(?:\.[0-9]+)?)\s*(?P<unit>[pbsPBS]?)\s*$")
_SIZE_EXPECTED = "a budget size such as 20p, 4b or 1s (a bare number means pages)"

_DURATION_RE = re.compile(r"^(?:(?P<h>[0-9]+)h)?(?:(?P<m>[0-9]+)m)?(?:(?P<s>[0-9]+)s)?$")
_DURATION_EXPECTED = "a duration such as 90s, 7m or 1h30m"
MAX_TOKENS = 1_000 * SHELF  # far past any real budget; keeps arithmetic exact and bounded


class UnitError(ValueError):
    """A value that is not a budget size or a duration; the message says what was expected."""


def _got(value: object) -> str:
    return repr(value) if isinstance(value, str) else str(value)


def parse_tokens(value: object) -> int:
    """A budget size (`4b`, `20p`, `1s`, `1.5b`, `300`, or a YAML number of pages) -> tokens.

    Decimals are accepted only when they come to whole pages; zero, negatives,
    booleans and garbage are refused rather than falling through to a default.
    """
    if isinstance(value, bool) or value is None:
        raise UnitError(f"expected {_SIZE_EXPECTED}, got {_got(value)}")
    if isinstance(value, (int, float)):
        text = repr(value) if isinstance(value, float) else str(value)
        if value <= 0:
            raise UnitError(f"expected {_SIZE_EXPECTED} greater than zero, got {text}")
        return _pages_to_tokens(text, PAGE, value)
    if not isinstance(value, str):
        raise UnitError(f"expected {_SIZE_EXPECTED}, got {type(value).__name__}")
    stripped = value.strip()
    if stripped.startswith("-"):
        raise UnitError(f"expected {_SIZE_EXPECTED} greater than zero, got {value!r}")
    match = _SIZE_RE.match(value)
    if not match:
        raise UnitError(f"expected {_SIZE_EXPECTED}, got {value!r}")
    unit = _UNITS[(match["unit"] or "p").lower()]
    tokens = _pages_to_tokens(match["num"], unit, value)
    return tokens


def _pages_to_tokens(number: str, unit: int, original: object) -> int:
    try:
        with localcontext() as ctx:
            ctx.prec = len(number) + 20  # exact for any digits the regex admits
            exact = Decimal(number) * unit
    except InvalidOperation:
        raise UnitError(f"expected {_SIZE_EXPECTED}, got {_got(original)}") from None
    if not exact.is_finite():
        raise UnitError(f"expected {_SIZE_EXPECTED}, got {_got(original)}")
    if exact > MAX_TOKENS:
        raise UnitError(f"expected a budget size of at most 1000s, got {_got(original)}")
    if exact <= 0:
        raise UnitError(f"expected {_SIZE_EXPECTED} greater than zero, got {_got(original)}")
    if exact % PAGE != 0:
        raise UnitError(
            f"expected a size that comes to whole pages (1p = 1,000 tokens), "
            f"got {_got(original)} = {exact.normalize():f} tokens"
        )
    return int(exact)


def _exact_in(tokens: int, unit: int) -> str | None:
    """`tokens` in `unit` with at most one decimal, if that is exact; else None."""
    tenths, rest = divmod(tokens * 10, unit)
    if rest:
        return None
    whole, tenth = divmod(tenths, 10)
    return f"{whole}" if tenth == 0 else f"{whole}.{tenth}"


def format_tokens(tokens: int) -> str:
    """The largest unit that reads naturally, at most one decimal: 4b, 20p, 1s, 1.5b, 270p.

    Exact amounts are shown as they are (and whole pages round-trip through parse_tokens), but
    a fraction only on a number under 100: 3258.2p reads as ~16.3b. Amounts that are not whole
    tenths of any unit (live spend, say) are shown approximately with '~', to one decimal under
    100 and whole past it; the exact count belongs in a tooltip beside it.
    """
    if tokens < 0:
        raise UnitError(f"expected a token count of zero or more, got {tokens}")
    if tokens == 0:
        return "0p"
    for suffix, unit in _LARGEST_FIRST:
        if tokens >= unit:
            shown = _exact_in(tokens, unit)
            if shown is not None and ("." not in shown or tokens < _FRACTION_BELOW * unit):
                return f"{shown}{suffix}"
    suffix, unit = next(((s, u) for s, u in _LARGEST_FIRST if tokens >= u), ("p", PAGE))
    value = tokens / unit
    shown = str(int(value + 0.5)) if value >= _FRACTION_BELOW else f"{value:.1f}".removesuffix(".0")
    return f"~{shown}{suffix}"


_LARGEST_FIRST = (("s", SHELF), ("b", BOOK), ("p", PAGE))
_FRACTION_BELOW = 100  # 45.5p reads well, 3258.2p does not


def parse_duration(value: object) -> int:
    """A duration (`90s`, `7m`, `1h30m`) -> whole seconds, greater than zero."""
    if isinstance(value, bool) or not isinstance(value, str):
        raise UnitError(f"expected {_DURATION_EXPECTED}, got {_got(value)}")
    text = value.strip().lower()
    match = _DURATION_RE.match(text)
    if not text or not match or not any(match.groupdict().values()):
        raise UnitError(f"expected {_DURATION_EXPECTED}, got {value!r}")
    seconds = int(match["h"] or 0) * 3600 + int(match["m"] or 0) * 60 + int(match["s"] or 0)
    if seconds <= 0:
        raise UnitError(f"expected {_DURATION_EXPECTED} greater than zero, got {value!r}")
    return seconds


def format_duration_go(seconds: int) -> str:
    """Go's time.Duration style, as rysh prints plans: 0s, 42s, 15m0s, 1h30m0s."""
    if seconds < 0:
        raise UnitError(f"expected a duration of zero or more seconds, got {seconds}")
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    if hours:
        return f"{hours}h{minutes}m{secs}s"
    if minutes:
        return f"{minutes}m{secs}s"
    return f"{secs}s"


def format_duration(seconds: int) -> str:
    """Short human form that parse_duration reads back: 90s -> 1m30s, 7m, 1h30m."""
    if seconds <= 0:
        return "0s"
    hours, rest = divmod(seconds, 3600)
    minutes, secs = divmod(rest, 60)
    parts = [f"{n}{u}" for n, u in ((hours, "h"), (minutes, "m"), (secs, "s")) if n]
    return "".join(parts)
