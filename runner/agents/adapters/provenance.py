"""Which adapter produced a results folder's model calls, for scores.json's `adapters` section.

Every receipt of a model-backed step carries the adapter's name, version, prompt hash and the
image size sent (in `model_call`). This reads the first such receipt of each episode and groups
them per agent: the distinct (adapter, version, prompt hash) and image sizes, with episode counts,
so two result sets scored with different prompts cannot be mistaken for each other.
"""
from __future__ import annotations

import json
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

from scoring.aggregate import atomic_write_text


def _first_model_call(receipts: Path) -> dict[str, Any] | None:
    try:
        with open(receipts, encoding="utf-8") as f:
            for line in f:
                try:
                    rec = json.loads(line)
                except ValueError:
                    continue
                call = rec.get("model_call") if isinstance(rec, dict) else None
                if isinstance(call, dict) and call.get("adapter"):
                    return call
    except OSError:
        return None
    return None


def adapters_section(root: Path) -> dict[str, Any]:
    """{agent: {"adapters": [{adapter, adapter_version, prompt_hash, episodes}], "image_sizes": {WxH: n}}}."""
    per_agent: dict[str, Counter] = defaultdict(Counter)
    sizes: dict[str, Counter] = defaultdict(Counter)
    for verdict_path in sorted(Path(root).glob("*/*/*/seed*/verdict.json")):
        ep = verdict_path.parent
        call = _first_model_call(ep / "receipts.jsonl")
        if call is None:
            continue
        try:
            agent = json.loads(verdict_path.read_text(encoding="utf-8")).get("agent") or ep.parts[-4]
        except (OSError, ValueError):
            agent = ep.relative_to(root).parts[0]
        per_agent[agent][(call.get("adapter"), call.get("adapter_version"), call.get("prompt_hash"))] += 1
        size = call.get("image_size")
        if isinstance(size, list) and len(size) == 2:
            sizes[agent][f"{size[0]}x{size[1]}"] += 1
    return {agent: {"adapters": [{"adapter": a, "adapter_version": v, "prompt_hash": h, "episodes": n}
                                 for (a, v, h), n in sorted(c.items(), key=lambda kv: str(kv[0]))],
                    "image_sizes": dict(sorted(sizes[agent].items()))}
            for agent, c in sorted(per_agent.items())}


def add_adapters_section(root: Path, scores_path: Path, scores: dict[str, Any]) -> dict[str, Any]:
    """Add the `adapters` section to a scores dict and rewrite its scores.json atomically."""
    scores["adapters"] = adapters_section(root)
    atomic_write_text(Path(scores_path), json.dumps(scores, indent=2) + "\n")
    return scores
