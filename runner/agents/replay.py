"""Replay agent: re-runs the actions recorded in an earlier episode's receipts.jsonl, step by step.

Executed steps are replayed as ``json.dumps(receipt["action"])`` (the canonical action, which
parses back with no repairs); rejected steps send the original raw text again, so rejections and
their step cost reproduce too. A step recorded as an agent fault (raw is null) raises AgentFault
again. When the receipts run out the agent says ``done``.

`from_dir` may be a results root (``DIR/<agent>/<task>/<subject>/seed<k>/receipts.jsonl``), one
agent's folder (``DIR/<task>/<subject>/seed<k>``), a single episode folder, or a receipts file
(possibly hand-edited: a line needs only ``action`` or ``raw``).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from runner.agents.base import AgentFault, Observation
from tasks.card import TaskCard

DONE = json.dumps({"action": "done"})


def load_receipts(path: Path) -> list[dict[str, Any]]:
    """Receipts in step order; unparseable lines (a torn tail of a killed run) are skipped."""
    out: list[dict[str, Any]] = []
    for line in Path(path).read_text().splitlines():
        if not line.strip():
            continue
        try:
            rec = json.loads(line)
        except ValueError:
            continue
        if isinstance(rec, dict):
            out.append(rec)
    if all("step" in r for r in out):
        out.sort(key=lambda r: r["step"])
    return out


def find_receipts(from_dir: str | Path, task: str, subject: str, seed: int) -> Path:
    """The receipts.jsonl to replay for (task, subject, seed) under `from_dir`."""
    root = Path(from_dir)
    if root.is_file():
        return root
    if (root / "receipts.jsonl").is_file():
        return root / "receipts.jsonl"
    tail = Path(task) / subject / f"seed{seed}" / "receipts.jsonl"
    if (root / tail).is_file():  # one agent's folder
        return root / tail
    found = sorted(p for p in root.glob(f"*/{tail}") if p.parent.parts[-4] != "replay")
    if len(found) == 1:
        return found[0]
    if not found:
        raise FileNotFoundError(f"replay: no receipts for {task}/{subject}/seed{seed} under {root} "
                                f"(looked for {root}/<agent>/{tail})")
    agents = ", ".join(p.parts[-5] for p in found)
    raise ValueError(f"replay: several runs of {task}/{subject}/seed{seed} under {root} "
                     f"(agents: {agents}); pass {root}/<agent> instead")


def replay_text(receipt: dict[str, Any]) -> str | None:
    """What to send for one recorded step (None means: the agent faulted at this step)."""
    status = receipt.get("status")
    action = receipt.get("action")
    if action is not None and status in (None, "executed"):
        return json.dumps(action) if not isinstance(action, str) else action
    raw = receipt.get("raw")
    if raw is None:
        return None
    return raw if isinstance(raw, str) else json.dumps(raw)


class ReplayAgent:
    """Replays the receipts of an earlier run of the same task, subject and seed."""

    name = "replay"

    def __init__(self, from_dir: str | Path) -> None:
        self.from_dir = Path(from_dir)
        self.receipts: list[dict[str, Any]] = []
        self.source: Path | None = None

    def reset(self, card: TaskCard, subject: str, seed: int) -> None:
        self.source = find_receipts(self.from_dir, card.id, subject, seed)
        self.receipts = load_receipts(self.source)

    def act(self, obs: Observation) -> str:
        if obs.step >= len(self.receipts):
            return DONE
        rec = self.receipts[obs.step]
        text = replay_text(rec)
        if text is None:
            raise AgentFault(f"replayed fault at step {obs.step}: {rec.get('feedback', '')}")
        return text
