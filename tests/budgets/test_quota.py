"""Quotas, pure (docs/spend.md): the windows they count over and what they leave a call."""

from datetime import UTC, datetime, timedelta
from decimal import Decimal

import pytest
from hypothesis import given
from hypothesis import strategies as st

from budgets.quota import (
    DAY,
    MONTH,
    ROLLING,
    WINDOWS,
    Standing,
    from_micros,
    reservation_micros,
    to_micros,
    window_end,
    window_start,
)

ZONES = ["UTC", "Europe/Berlin", "America/New_York", "Australia/Lord_Howe", "Pacific/Kiritimati"]
moments = st.datetimes(min_value=datetime(2020, 1, 1), max_value=datetime(2035, 12, 31), timezones=st.just(UTC))


@given(moments, st.sampled_from(WINDOWS), st.sampled_from(ZONES))
def test_every_moment_falls_in_the_window_that_starts_before_it_and_ends_after_it(now, window, zone):
    start = window_start(window, now, zone)
    assert start <= now < window_end(window, start, zone)


@given(moments, st.sampled_from([DAY, MONTH]), st.sampled_from(ZONES))
def test_calendar_windows_follow_one_another_with_no_gap(now, window, zone):
    start = window_start(window, now, zone)
    end = window_end(window, start, zone)
    assert window_start(window, end, zone) == end  # the next window starts where this one ends
    assert window_start(window, end - timedelta(microseconds=1), zone) == start


def test_a_day_is_the_team_s_local_day_and_a_month_its_local_month():
    now = datetime(2026, 12, 1, 3, 30, tzinfo=UTC)  # still 30 November in New York
    assert window_start(DAY, now, "America/New_York") == datetime(2026, 11, 30, 5, 0, tzinfo=UTC)
    assert window_start(MONTH, now, "America/New_York") == datetime(2026, 11, 1, 4, 0, tzinfo=UTC)
    assert window_start(DAY, now, "UTC") == datetime(2026, 12, 1, tzinfo=UTC)


def test_rolling_24h_counts_this_hour_and_the_23_before_it():
    now = datetime(2026, 12, 1, 3, 30, tzinfo=UTC)
    assert window_start(ROLLING, now, "UTC") == datetime(2026, 11, 30, 4, 0, tzinfo=UTC)
    # its oldest hour drops out when the next hour begins
    assert window_end(ROLLING, window_start(ROLLING, now, "UTC"), "UTC") == datetime(2026, 12, 1, 4, 0, tzinfo=UTC)


def test_an_unknown_window_is_refused_by_name():
    with pytest.raises(ValueError, match="unknown quota window 'week'"):
        window_start("week", datetime.now(UTC), "UTC")


@given(st.decimals(min_value=0, max_value=10**6, places=9, allow_nan=False))
def test_micro_dollars_never_count_a_cost_short(dollars):
    micros = to_micros(dollars)
    assert from_micros(micros) >= dollars > from_micros(micros) - Decimal("0.000001")


limits = st.one_of(st.none(), st.integers(0, 10**9))
standings = st.builds(
    Standing,
    tokens=limits,
    micros=limits,
    used_tokens=st.integers(0, 10**9),
    used_micros=st.integers(0, 10**9),
    reserved_tokens=st.integers(0, 10**8),
    reserved_micros=st.integers(0, 10**8),
)
rates = st.one_of(st.none(), st.decimals(min_value=Decimal("0.01"), max_value=75, places=2))


@given(standings, st.integers(0, 10**9), rates)
def test_a_reservation_that_fits_keeps_every_limit(standing, tokens, rate):
    micros = reservation_micros(tokens, rate)
    if not standing.fits(tokens, micros):
        return
    if standing.tokens is not None:
        assert standing.used_tokens + standing.reserved_tokens + tokens <= standing.tokens
    if standing.micros is not None:
        assert micros is not None and standing.used_micros + standing.reserved_micros + micros <= standing.micros


@given(standings, rates)
def test_the_room_a_quota_leaves_is_a_reservation_that_fits(standing, rate):
    room = standing.room(rate)
    if room is None:
        assert standing.tokens is None and standing.micros is None
        return
    if room > 0:
        assert standing.fits(room, reservation_micros(room, rate))
    assert not standing.fits(room + 1, reservation_micros(room + 1, rate))


def test_a_dollar_quota_refuses_a_model_with_no_price_and_a_token_quota_does_not_care():
    assert not Standing(tokens=None, micros=10**6).fits(10, None)
    assert Standing(tokens=100, micros=None).fits(10, None)
    assert Standing(tokens=None, micros=10**6).room(None) == 0
