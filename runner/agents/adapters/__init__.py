"""Agent adapters: the published prompt, history, image size and action format of each model family.

`--agent api --adapter NAME` picks one; `medimageos agents list` prints them. See base.Adapter for
the interface and each module for the published facts it follows.
"""
from __future__ import annotations

from typing import Any

from runner.agents.adapters.base import Adapter, AdapterReject, Turn
from runner.agents.adapters.claude_computer import (
    Claude20250124Adapter, Claude20251124Adapter, ClaudeComputerAdapter,
)
from runner.agents.adapters.generic import GenericAdapter
from runner.agents.adapters.guiowl import GUIOwl15Adapter
from runner.agents.adapters.openai_computer import OpenAIComputerAdapter, OpenAIComputerPreviewAdapter
from runner.agents.adapters.opencua import OpenCUAAdapter
from runner.agents.adapters.qwen import Qwen3VLAdapter, Qwen25VLAdapter
from runner.agents.adapters.uitars import UITarsAdapter
from runner.agents.adapters.vendor_tool import VendorToolAdapter

__all__ = ["ADAPTERS", "Adapter", "AdapterReject", "Turn", "VendorToolAdapter", "adapter_names", "get_adapter",
           "list_adapters"]

# chat-completions adapters (--agent api through the openai client), then the vendors' own computer-use tools
ADAPTERS: dict[str, type[Adapter]] = {
    a.name: a for a in (GenericAdapter, UITarsAdapter, Qwen25VLAdapter, Qwen3VLAdapter, OpenCUAAdapter,
                        GUIOwl15Adapter, ClaudeComputerAdapter, Claude20251124Adapter, Claude20250124Adapter,
                        OpenAIComputerAdapter, OpenAIComputerPreviewAdapter)
}


def adapter_names() -> list[str]:
    return list(ADAPTERS)


def get_adapter(name: str, **opts: Any) -> Adapter:
    """A new adapter by name; `history_k` applies to the generic one only."""
    if name not in ADAPTERS:
        raise ValueError(f"unknown adapter {name!r}; choose one of: {', '.join(ADAPTERS)}")
    if name == "generic":
        return GenericAdapter(history_k=int(opts.get("history_k", 3)))
    return ADAPTERS[name]()


def list_adapters() -> list[dict[str, str]]:
    """Rows for `medimageos agents list`."""
    return [get_adapter(n).listing() for n in ADAPTERS]
