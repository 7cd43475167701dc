"""A pass's conversation: Messages API turns (role + content blocks), held in memory while the
pass runs and stored one row per turn (runs.Message), so a step writes what it appended and
never the whole conversation again.

Two edits reach back into turns already stored, each bounded by the turns it touches: the
wrap-up prompt joins the last user turn (the API wants turns to alternate), and a screenshot
older than the newest IMAGES_KEPT becomes a note. The stored rows are always exactly what the
model was last sent, so continue, resume and a lost worker's re-run rebuild it by reading them.
"""

from __future__ import annotations

import json
from typing import Any

from runs.models import Message, Pass

IMAGES_KEPT = 3  # screenshots kept in the conversation; older ones become a note
DROPPED_IMAGE = {"type": "text", "text": "[an earlier screenshot, dropped to save tokens]"}


class Conversation:
    def __init__(self, run_pass: Pass, messages: list[dict[str, Any]]):
        self.run_pass = run_pass
        self.messages = messages
        self._stored = len(messages)  # turns [0, _stored) have their row
        self._edited: set[int] = set()  # stored turns changed since their row was written
        self._calls: list[str] | None = None  # tool call identities, oldest first (lazy)
        self._images: int | None = None  # images in the conversation (lazy)

    @classmethod
    def start(cls, run_pass: Pass, text: str) -> Conversation:
        """A fresh pass's conversation: its first user turn, stored at once."""
        conversation = cls(run_pass, [])
        conversation.append("user", [{"type": "text", "text": text}])
        conversation.save()
        return conversation

    @classmethod
    def load(cls, run_pass: Pass) -> Conversation:
        """The conversation as the model was last sent it (a continue, a lost worker's re-run)."""
        rows = Message.objects.filter(run_pass=run_pass).order_by("index").values_list("role", "content")
        return cls(run_pass, [{"role": role, "content": content} for role, content in rows])

    def __len__(self) -> int:
        return len(self.messages)

    def append(self, role: str, content: list[dict[str, Any]]) -> None:
        self.messages.append({"role": role, "content": content})
        if role == "assistant" and self._calls is not None:
            self._calls += [call_identity(b) for b in content if b.get("type") == "tool_use"]
        if self._images is not None:
            self._images += count_images(self.messages[-1:])

    def append_user_text(self, text: str) -> None:
        """Add a user text; the API wants turns to alternate, so join the last user turn."""
        index = append_user_text(self.messages, text)
        if index < self._stored:
            self._edited.add(index)

    def drop_old_images(self, keep: int = IMAGES_KEPT) -> None:
        if self._images is None:
            self._images = count_images(self.messages)
        if self._images <= keep:
            return  # nothing to drop: no need to walk the whole conversation
        self._edited.update(i for i in drop_old_images(self.messages, keep) if i < self._stored)
        self._images = keep

    def clear_old_results(self, chars: int) -> int:
        """Clear the text of earlier tool results, oldest first, until about `chars` characters
        are gone (each says what it was and why); returns the characters cleared. Like dropping
        old screenshots it only shrinks earlier turns, so every bound still holds; it is how a
        reading agent keeps working when its context outgrows what the leg has left."""
        cleared, changed = clear_old_results(self.messages, chars)
        self._edited.update(i for i in changed if i < self._stored)
        return cleared

    def call_history(self) -> list[str]:
        """Every tool call of the conversation so far, oldest first (survives a continue)."""
        if self._calls is None:
            self._calls = tool_history(self.messages)
        return list(self._calls)

    def save(self) -> None:
        """Write what changed since the last save: new turns as new rows, edited turns over
        their own row. Call it inside the transaction that saves the step's checkpoint."""
        for index in sorted(self._edited):
            Message.objects.filter(run_pass=self.run_pass, index=index).update(content=self.messages[index]["content"])
        if self._stored < len(self.messages):
            Message.objects.bulk_create(
                [
                    Message(run_pass=self.run_pass, index=index, role=message["role"], content=message["content"])
                    for index, message in enumerate(self.messages[self._stored :], start=self._stored)
                ]
            )
        self._stored, self._edited = len(self.messages), set()


def append_user_text(messages: list, text: str) -> int:
    """Add a user text, joining the last turn when it is the user's; returns the turn's index."""
    block = {"type": "text", "text": text}
    if messages and messages[-1]["role"] == "user":
        messages[-1]["content"].append(block)
    else:
        messages.append({"role": "user", "content": [block]})
    return len(messages) - 1


def tool_result(tool_use_id: str, content: str, is_error: bool, images: list | None = None) -> dict:
    """A tool_result block. Images follow the text, or sit where their `at` says (a character
    offset into `content`: a tool that gave texts and images in an order keeps it)."""
    if images:
        # the Messages API takes text and image blocks in a tool result
        blocks, start = [], 0
        for image in sorted(images, key=lambda i: i.get("at", len(content))):
            at = max(start, min(image.get("at", len(content)), len(content)))
            if text := content[start:at].strip("\n"):
                blocks.append({"type": "text", "text": text})
            source = {"type": "base64", "media_type": image["media_type"], "data": image["data"]}
            blocks.append({"type": "image", "source": source})
            start = at
        if text := content[start:].strip("\n"):
            blocks.append({"type": "text", "text": text})
        return {"type": "tool_result", "tool_use_id": tool_use_id, "content": blocks, "is_error": is_error}
    return {"type": "tool_result", "tool_use_id": tool_use_id, "content": content, "is_error": is_error}


def without_images(result: dict) -> dict:
    """What a Step row keeps of a tool result: its text, and a note for each image."""
    if not isinstance(result.get("content"), list):
        return result
    parts = []
    for block in result["content"]:
        if block.get("type") == "text":
            parts.append(block["text"])
        elif block.get("type") == "image":
            parts.append(f"[an image was shown to the model: {len(block['source']['data']) * 3 // 4 // 1024} KB]")
    return {**result, "content": "\n".join(parts)}


def drop_old_images(messages: list, keep: int) -> set[int]:
    """Keep only the newest `keep` screenshots in the conversation; returns the indexes of the
    turns that lost one. Shrinking earlier turns only lowers what a call really sends, so the
    incremental input bound still holds."""
    seen, changed = 0, set()
    for position in range(len(messages) - 1, -1, -1):
        content = messages[position].get("content")
        for block in content if isinstance(content, list) else []:
            inner = block.get("content") if block.get("type") == "tool_result" else None
            if not isinstance(inner, list):
                continue
            for index in range(len(inner) - 1, -1, -1):
                if inner[index].get("type") != "image":
                    continue
                seen += 1
                if seen > keep:
                    inner[index] = dict(DROPPED_IMAGE)
                    changed.add(position)
    return changed


CLEARED_MIN = 400  # results shorter than this are not worth clearing


def cleared_note(length: int) -> str:
    return (
        f"[an earlier tool result ({length:,} characters) was cleared to fit the budget left; "
        "what you saved is in the results folder]"
    )


def clear_old_results(messages: list, chars: int) -> tuple[int, set[int]]:
    """clear_old_results on a plain list: (characters cleared, indexes of the turns changed)."""
    cleared, changed = 0, set()
    for position, message in enumerate(messages):
        if cleared >= chars:
            break
        content = message.get("content")
        for block in content if message.get("role") == "user" and isinstance(content, list) else []:
            if cleared >= chars or block.get("type") != "tool_result":
                continue
            text = block.get("content")
            if isinstance(text, str) and len(text) >= CLEARED_MIN:
                block["content"] = cleared_note(len(text))
                cleared += len(text) - len(block["content"])
                changed.add(position)
    return cleared, changed


def count_images(messages: list) -> int:
    """Images in tool results: the ones drop_old_images counts."""
    return sum(
        1
        for message in messages
        if isinstance(message.get("content"), list)
        for block in message["content"]
        if block.get("type") == "tool_result" and isinstance(block.get("content"), list)
        for inner in block["content"]
        if inner.get("type") == "image"
    )


def call_identity(call: dict) -> str:
    return call.get("name", "") + " " + json.dumps(call.get("input") or {}, sort_keys=True, ensure_ascii=False)


def tool_history(messages: list) -> list[str]:
    """Every tool call of the conversation so far, oldest first."""
    return [
        call_identity(block)
        for message in messages
        if message.get("role") == "assistant"
        for block in message.get("content") or []
        if block.get("type") == "tool_use"
    ]
