"""The lineup beside the prices: each model's family and generation, which are legacy, and the
note a change of generation across the tokenizer change earns."""

from hypothesis import given
from hypothesis import strategies as st

from budgets.lineup import LINEUP, generation_note, model_info, newest, tokenizer_note
from budgets.prices import PRICES


def test_every_priced_model_is_in_the_lineup_and_the_newest_of_each_family_is_current():
    assert set(PRICES) <= {m.id for m in LINEUP}
    assert {f: newest(f).id for f in ("Opus", "Sonnet", "Haiku", "Fable")} == {
        "Opus": "claude-opus-5-5",
        "Sonnet": "claude-sonnet-5-5",
        "Haiku": "claude-haiku-5-5",
        "Fable": "claude-fable-5-2",
    }
    assert all(not newest(m.family).legacy for m in LINEUP)


def test_what_check_says_about_a_pinned_model():
    assert generation_note("claude-sonnet-4-6") == (
        "claude-sonnet-4-6 is of the legacy 4.x generation; the current Sonnet is claude-sonnet-5-5"
    )
    assert generation_note("claude-3-5-haiku-20241022") == (
        "claude-3-5-haiku-20241022 is of the legacy 3.x generation; the current Haiku is claude-haiku-5-5"
    )
    assert generation_note("claude-opus-5") == (
        "claude-opus-5 is of the current 5.x generation; the newest Opus is claude-opus-5-5"
    )
    assert generation_note("claude-haiku-5-5") == "claude-haiku-5-5 is the current Haiku (5.x generation)"
    assert generation_note("gpt-4") is None and generation_note(None) is None
    assert model_info("claude-sonnet-5-5-latest").name == "Sonnet 5.5"


def test_a_change_across_the_tokenizer_says_how_the_count_moves():
    up = tokenizer_note("claude-sonnet-4-6", "claude-sonnet-5-5")
    assert "claude-sonnet-4-6 (4.x) to claude-sonnet-5-5 (5.x)" in up
    assert "the same work now counts about 30% more tokens" in up
    assert "fewer" in tokenizer_note("claude-opus-5", "claude-opus-4-8")
    assert tokenizer_note("claude-3-7-sonnet", "claude-sonnet-4-6") is None  # the same tokenizer
    assert tokenizer_note("claude-sonnet-5", "claude-opus-5-5") is None
    assert tokenizer_note("claude-sonnet-4-6", "gpt-4") is None


@given(a=st.sampled_from(LINEUP), b=st.sampled_from(LINEUP))
def test_a_note_exactly_when_one_side_is_of_the_5_x_generation(a, b):
    assert (tokenizer_note(a.id, b.id) is not None) == ((a.generation >= 5) != (b.generation >= 5))
    assert (generation_note(a.id) or "").startswith(a.id)
    assert ("legacy" in generation_note(a.id)) == a.legacy
