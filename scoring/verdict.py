"""The verdict of one episode: outcome and three metrics that are never merged."""
from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

Outcome = Literal["PASS", "PARTIAL", "FAIL", "UNDETERMINED", "INVALID"]
Termination = Literal["done", "budget", "fault"]


class OracleResult(BaseModel):
    """What an oracle returns: a pure function of (state dump, oracle bundle, task card)."""

    model_config = ConfigDict(extra="forbid")
    outcome: Outcome
    sr: float = Field(..., ge=0, le=1, description="1 if the full success criterion holds, else 0")
    pr: float = Field(..., ge=0, le=1, description="fraction of workflow stages completed")
    aq: float = Field(..., ge=0, le=100, description="acquisition quality 0-100 from hidden ground truth")
    stages: dict[str, bool] = Field(default_factory=dict)
    details: dict[str, Any] = Field(default_factory=dict, description="measured numbers behind sr/pr/aq")
    reason: str = ""


class Verdict(BaseModel):
    """verdict.json of one episode."""

    model_config = ConfigDict(extra="forbid")
    task: str
    task_version: str
    modality: str
    level: int
    subject: str
    seed: int
    agent: str
    outcome: Outcome
    sr: float
    pr: float
    aq: float
    steps: int
    rejected_steps: int = 0
    termination: Termination
    reason: str = ""
    stages: dict[str, bool] = Field(default_factory=dict)
    details: dict[str, Any] = Field(default_factory=dict)
    wall_seconds: float = 0.0
    sim_seconds: float = 0.0
