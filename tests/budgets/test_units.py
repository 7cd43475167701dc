import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from budgets.units import (
    BOOK,
    MAX_TOKENS,
    PAGE,
    SHELF,
    UnitError,
    format_duration,
    format_duration_go,
    format_tokens,
    parse_duration,
    parse_tokens,
)


@pytest.mark.parametrize(
    "text, tokens",
    [
        ("20p", 20_000),
        ("4b", 800_000),
        ("3b", 600_000),
        ("1s", 4_000_000),
        ("20b", 4_000_000),
        ("15b", 3_000_000),
        ("4B", 800_000),
        ("1S", 4_000_000),
        ("20P", 20_000),
        ("300", 300_000),
        (20, 20_000),
        ("1.5b", 300_000),
        ("0.5s", 2_000_000),
        (" 2b ", 400_000),
        (1.5 * 2, 3_000),
    ],
)
def test_it_parses_sizes(text, tokens):
    assert parse_tokens(text) == tokens


def test_it_defines_the_library_units():
    assert (PAGE, BOOK, SHELF) == (1_000, 200_000, 4_000_000)


@pytest.mark.parametrize(
    "bad, fragment",
    [
        ("0", "greater than zero"),
        ("0b", "greater than zero"),
        (0, "greater than zero"),
        ("-3b", "greater than zero"),
        (-2, "greater than zero"),
        ("abc", "expected a budget size"),
        ("", "expected a budget size"),
        ("4x", "expected a budget size"),
        ("b", "expected a budget size"),
        (True, "expected a budget size"),
        (None, "expected a budget size"),
        ([4], "expected a budget size"),
        (float("inf"), "expected a budget size"),
        (float("nan"), "expected a budget size"),
        ("99999999999999999999999999999b", "at most 1000s"),
        ("1001s", "at most 1000s"),
        ("1.5p", "whole pages"),
        ("0.0001b", "whole pages"),
        (2.5, "whole pages"),
        ("4 books", "expected"),
    ],
)
def test_it_refuses_bad_sizes_with_what_was_expected(bad, fragment):
    with pytest.raises(UnitError, match=fragment):
        parse_tokens(bad)


@pytest.mark.parametrize(
    "tokens, shown",
    [
        (800_000, "4b"),
        (20_000, "20p"),
        (4_000_000, "1s"),
        (300_000, "1.5b"),
        (6_000_000, "1.5s"),
        (270_000, "270p"),
        (0, "0p"),
        (45_500, "45.5p"),
        (123, "~0.1p"),
        (1_234_567, "~6.2b"),
        (8_000_000, "2s"),
        (200_000, "1b"),
        (3_258_200, "~16.3b"),  # not 3258.2p: no fraction on a number of 100 or more
        (3_258_000, "3258p"),  # whole pages stay exact (they round-trip)
        (150_500, "~151p"),
        (1_000_100, "~5b"),  # a whole unit reads better than ~5.0b
    ],
)
def test_it_formats_in_the_largest_natural_unit(tokens, shown):
    assert format_tokens(tokens) == shown


_SHOWN = re.compile(r"(~?)([0-9]+)(?:\.([0-9]))?([pbs])")


@given(st.integers(min_value=0, max_value=MAX_TOKENS))
def test_it_never_shows_more_than_one_decimal_and_reads_back_within_what_it_shows(tokens):
    shown = format_tokens(tokens)
    approx, whole, tenth, suffix = _SHOWN.fullmatch(shown).groups()
    unit = {"p": PAGE, "b": BOOK, "s": SHELF}[suffix]
    assert tenth is None or int(whole) < 100  # a fraction only on a small number
    read = (int(whole) * 10 + int(tenth or 0)) * unit // 10
    if approx:  # within half of the precision shown: a tenth under 100 (~5b is ~5.0b), else one
        precision = unit // 10 if int(whole) < 100 else unit
        assert abs(read - tokens) * 2 <= precision + 2  # (+2: the float's last bit at a .05 edge)
    else:
        assert read == tokens and tokens * 10 % unit == 0
    assert tokens < PAGE or read >= unit // 2  # the largest unit: never 0.3b for 60p


@given(st.integers(min_value=1, max_value=MAX_TOKENS // PAGE).map(lambda pages: pages * PAGE))
def test_it_round_trips_whole_pages(tokens):
    assert parse_tokens(format_tokens(tokens)) == tokens


@given(st.integers(min_value=1, max_value=1000), st.sampled_from("pbsPBS"))
def test_it_round_trips_written_sizes(number, unit):
    tokens = parse_tokens(f"{number}{unit}")
    assert parse_tokens(format_tokens(tokens)) == tokens


@pytest.mark.parametrize(
    "text, seconds",
    [
        ("90s", 90),
        ("7m", 420),
        ("1h30m", 5400),
        ("15m", 900),
        ("2h", 7200),
        ("1h0m5s", 3605),
        ("40M", 2400),
    ],
)
def test_it_parses_durations(text, seconds):
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("bad", ["", "0s", "0m", "5", 5, "1.5h", "m", "7 minutes", "-5m", True, None, "5m1h"])
def test_it_refuses_bad_durations(bad):
    with pytest.raises(UnitError, match="expected a duration"):
        parse_duration(bad)


@pytest.mark.parametrize(
    "seconds, go",
    [
        (0, "0s"),
        (42, "42s"),
        (900, "15m0s"),
        (300, "5m0s"),
        (5400, "1h30m0s"),
        (3600, "1h0m0s"),
        (810, "13m30s"),
    ],
)
def test_it_prints_go_style_durations(seconds, go):
    assert format_duration_go(seconds) == go


@given(st.integers(min_value=1, max_value=10**7))
def test_it_round_trips_durations(seconds):
    assert parse_duration(format_duration(seconds)) == seconds
