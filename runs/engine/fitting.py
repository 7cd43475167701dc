"""Near the edge of a budget: what an exact count allows, and tool results cut to fit.

The byte bound (budgets/guard.py) is safe because a token never covers less than a byte, but a
page of English text is ~4 bytes a token: counted by bytes alone, one 20 KB page read makes the
next call look like 20,000 tokens and ends a 12,000-token leg after one step. So where the byte
bound would stop a leg (or clamp its output), the engine asks the provider for the exact input
count, and where even the exact count leaves the next call no room, it cuts the tool results to
what fits instead of ending the leg. Pure functions; the engine does the asking.
"""

from __future__ import annotations

import math
from typing import Any

from budgets.guard import cut_marker, without_marker

# The token-counting endpoint is exact for the request it is given; a small margin keeps the
# ceiling hard should a call ever be billed a few tokens more than its count said.
COUNT_MARGIN_MIN = 16
COUNT_MARGIN_DIVISOR = 100  # 1 %
CUT_HEADROOM = 1.05  # aim 5 % under the room an estimate gives, so one re-count usually settles it


def with_margin(count: int) -> int:
    """An exact count as a bound: the count plus a small margin."""
    return count + max(COUNT_MARGIN_MIN, count // COUNT_MARGIN_DIVISOR)


def worth_counting(max_tokens: int | None, ceiling: int) -> bool:
    """The byte bound ends the leg or clamps the reply: an exact count may give room back."""
    return max_tokens is None or max_tokens < ceiling


def cut_text(text: str, keep: int) -> str:
    """The head of `text` (`keep` characters) and a marker that says it was cut and why; a text
    a tool had cut already keeps its first size in the one marker."""
    head, before = without_marker(text)
    keep = max(0, min(keep, len(head)))
    return head[:keep] + "\n" + cut_marker(before, keep)


def texts_of(results: list[dict[str, Any]]) -> list[tuple[int, int | None, int]]:
    """(result index, block index or None, characters) of every text in tool results."""
    found = []
    for i, result in enumerate(results):
        content = result.get("content")
        if isinstance(content, str):
            found.append((i, None, len(content)))
        elif isinstance(content, list):
            found += [
                (i, b, len(block.get("text", ""))) for b, block in enumerate(content) if block.get("type") == "text"
            ]
    return found


def text_at(results: list[dict[str, Any]], i: int, b: int | None) -> str:
    content = results[i]["content"]
    return content if b is None else content[b].get("text", "")


def cut_results(results: list[dict[str, Any]], chars: int) -> list[dict[str, Any]]:
    """Results with `chars` characters (at least) taken off their texts, longest first, each
    cut text keeping its head and saying it was cut. Results too short to give that much are
    cut to their marker. New dicts: the caller's results are not changed."""
    out = [
        dict(r, content=list(r["content"]) if isinstance(r.get("content"), list) else r.get("content")) for r in results
    ]
    for i, b, length in sorted(texts_of(out), key=lambda t: -t[2]):
        if chars <= 0:
            break
        marker = len(cut_marker(max(length, without_marker(text_at(out, i, b))[1]), length)) + 1
        take = min(length, chars + marker)  # the marker itself takes room back
        if b is None:
            out[i]["content"] = cut_text(out[i]["content"], length - take)
        else:
            block = dict(out[i]["content"][b])
            block["text"] = cut_text(block["text"], length - take)
            out[i]["content"][b] = block
        chars -= take - marker
    return out


def chars_for_tokens(tokens: int, *, bytes_total: int, counted: int | None) -> int:
    """About how many characters `tokens` tokens hold, from a request's bytes per counted token
    (one byte a token when nothing was counted: never more than the byte bound allows)."""
    per_token = bytes_total / counted if counted else 1.0
    return max(0, math.ceil(tokens * max(per_token, 1.0) * CUT_HEADROOM))
