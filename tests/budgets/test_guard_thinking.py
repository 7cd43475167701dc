"""The input bound counts the thinking sent back: its blocks are part of the assistant turns
the next call repeats, at their full length (signature and redacted data included)."""

from budgets.guard import LastCall, input_bound, size

THINKING = {"type": "thinking", "thinking": "step by step " * 200, "signature": "c2lnbmF0dXJl" * 20}
REDACTED = {"type": "redacted_thinking", "data": "RW5jcnlwdGVk" * 50}
CALL = {"type": "tool_use", "id": "toolu_1", "name": "list_results", "input": {}}
RESULT = {"type": "tool_result", "tool_use_id": "toolu_1", "content": "[]", "is_error": False}


def test_it_bounds_the_thinking_sent_back_by_its_bytes():
    first = [{"role": "user", "content": [{"type": "text", "text": "go"}]}]
    plain = [*first, {"role": "assistant", "content": [CALL]}, {"role": "user", "content": [RESULT]}]
    thought = [
        *first,
        {"role": "assistant", "content": [THINKING, REDACTED, CALL]},
        {"role": "user", "content": [RESULT]},
    ]
    last = LastCall(context=100, message_count=1)
    grown = input_bound(system="", tools=[], messages=thought, last=last) - input_bound(
        system="", tools=[], messages=plain, last=last
    )
    assert grown == size(thought) - size(plain) >= len(THINKING["thinking"]) + len(REDACTED["data"])
    # from scratch too (no previous call): every byte of it
    assert input_bound(system="", tools=[], messages=thought, last=None) > size(thought)
