"""Hand-written replies in the documented shapes of the vendors' computer-use APIs, for the fake server.

`claude(...)` is a Messages API response (POST /v1/messages) whose content holds text and tool_use blocks;
`openai(...)` a Responses API response (POST /v1/responses) whose output holds computer_call items.
"""
from __future__ import annotations

import itertools
from typing import Any

try:
    from tests.runner.fake_openai_server import Reply
except ImportError:
    from fake_openai_server import Reply

CLAUDE_ROUTES = ("/v1/messages",)
OPENAI_ROUTES = ("/v1/responses", "/responses")
_ids = itertools.count(1)


def tool_use(action: str, toolset: bool = True, **inp: Any) -> dict[str, Any]:
    """One tool_use block: a toolset member (name = the action) or the single `computer` tool."""
    n = next(_ids)
    if toolset:
        return {"type": "tool_use", "id": f"toolu_{n:04d}", "name": action, "input": inp, "toolset_name": "computer"}
    return {"type": "tool_use", "id": f"toolu_{n:04d}", "name": "computer", "input": {"action": action, **inp}}


def claude(*blocks: dict[str, Any], text: str = "I will act on the console.") -> Reply:
    content = ([{"type": "text", "text": text}] if text else []) + list(blocks)
    n = next(_ids)
    return Reply(body={"id": f"msg_{n:04d}", "type": "message", "role": "assistant", "model": "claude-test",
                       "content": content, "stop_reason": "tool_use" if blocks else "end_turn",
                       "stop_sequence": None, "usage": {"input_tokens": 1000, "output_tokens": 50}})


def computer_call(*actions: dict[str, Any], batched: bool = True, checks: list[dict] | None = None) -> dict[str, Any]:
    n = next(_ids)
    item: dict[str, Any] = {"type": "computer_call", "id": f"cu_{n:04d}", "call_id": f"call_{n:04d}",
                            "pending_safety_checks": checks or [], "status": "completed"}
    if batched:
        item["actions"] = list(actions)
    else:
        (item["action"],) = actions
    return item


def openai(*items: dict[str, Any], text: str | None = None) -> Reply:
    output = list(items)
    if text is not None or not items:
        output.append({"type": "message", "id": f"msg_{next(_ids):04d}", "role": "assistant", "status": "completed",
                       "content": [{"type": "output_text", "text": text or "Done.", "annotations": []}]})
    n = next(_ids)
    return Reply(body={"id": f"resp_{n:04d}", "object": "response", "created_at": 0, "model": "gpt-test",
                       "status": "completed", "output": output, "parallel_tool_calls": False, "tool_choice": "auto",
                       "tools": [], "usage": {"input_tokens": 1000, "output_tokens": 50, "total_tokens": 1050}})
