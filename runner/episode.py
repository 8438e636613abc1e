"""One episode: screenshot -> agent -> parse -> X input -> settle -> ... -> state dump -> verdict."""
from __future__ import annotations

import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner import results
from runner.agents.base import AgentFault, Observation, StepRecord
from runner.capture import encode_png
from runner.console_process import ConsoleKeeper, ConsoleProcess, ConsoleStartupError
from runner.control_client import ConsoleFault
from runner.display import VirtualDisplay
from runner.fingerprint import runner_fingerprint
from runner.step import StepEngine, make_receipt, screenshot_name
from scoring.score import score_episode
from scoring.verdict import Verdict
from tasks.card import TaskCard

__all__ = ["CARD_FILE", "ConsoleControlView", "EpisodeSpec", "make_verdict", "run_episode"]

CARD_FILE = "card.json"  # the exact card an episode ran, in its folder; the console reads this file


@dataclass
class EpisodeSpec:
    card: TaskCard
    subject: str
    seed: int


class ConsoleControlView:
    """The privileged read-only view reference solvers get (state + geometry), never agents."""

    def __init__(self, console: ConsoleProcess) -> None:
        self._console = console

    def state(self) -> dict[str, Any]:
        return self._console.state()

    def geometry(self) -> dict[str, Any]:
        return self._console.geometry()


def run_episode(spec: EpisodeSpec, agent, out_root: Path, display: VirtualDisplay, *,
                coord_scale: str = "pixels", console_env: dict[str, str] | None = None,
                png_compress_level: int | None = None, control_timeout_s: float | None = None,
                keeper: ConsoleKeeper | None = None) -> Verdict:
    """Run (or skip, if already finished) one episode and return its verdict.

    With a `keeper` (one per worker and display) the console of the worker's previous clean
    episode is reset in place instead of launching a new one; an episode that faults or ends
    INVALID stops it. `state.json` records which happened (provenance.console_start)."""
    card = spec.card
    final_dir = results.episode_dir(out_root, agent.name, card.id, spec.subject, spec.seed)
    if results.is_finished(final_dir, card.version):
        return Verdict.model_validate_json((final_dir / "verdict.json").read_text())
    work = results.fresh_work_dir(final_dir)
    wall0 = time.monotonic()
    history: list[StepRecord] = []
    steps = rejected = 0
    termination, fault = "budget", ""
    state: dict[str, Any] | None = None
    receipts = results.ReceiptWriter(work / "receipts.jsonl")
    engine: StepEngine | None = None
    startup_retry = ""  # the first start's fault when the retry on a fresh display succeeded
    try:
        # the console runs the card this runner holds, written into the episode folder
        def new_engine() -> StepEngine:
            return StepEngine(card, spec.subject, spec.seed, display, work / CARD_FILE, coord_scale=coord_scale,
                              log_path=work / "console.log", console_env=console_env,
                              control_timeout_s=control_timeout_s, keeper=keeper)

        engine = new_engine()
        card = engine.card
        w, h = engine.screen
        try:
            engine.start()
        except ConsoleStartupError as exc:
            # Once more on a fresh display (the server may be what is wedged); a second miss
            # propagates and the episode is INVALID with both reasons.
            startup_retry = str(exc)
            if keeper is not None:
                keeper.discard()
            display.restart()
            engine = new_engine()
            try:
                engine.start()
            except ConsoleStartupError as exc2:
                raise ConsoleStartupError(f"startup failed twice; first: {startup_retry}\n"
                                          f"retry on a fresh display {display.name}: {exc2}") from exc2
        agent.reset(card, spec.subject, spec.seed)
        if hasattr(agent, "bind_control"):
            agent.bind_control(ConsoleControlView(engine.console))
        for step in range(card.budgets.max_steps):
            png = encode_png(engine.observe(), png_compress_level)
            results.write_bytes_atomic(work / screenshot_name(step), png)
            obs = Observation(step, png, w, h, card.goal, card.budgets.max_steps - step, list(history))
            try:
                raw = agent.act(obs)
            except AgentFault as exc:
                termination, fault = "fault", f"agent fault: {exc}"
                receipts.write(make_receipt(step, engine.sim_time, None, None, [], "rejected", fault,
                                            _model_call(agent)))
                break
            steps += 1
            res = engine.step(step, raw, _model_call(agent), getattr(agent, "parse_reply", None))
            receipts.write(res.receipt)
            rejected += not res.executed
            r = res.receipt
            history.append(StepRecord(step, raw if isinstance(raw, str) else repr(raw), r["action"], r["status"],
                                      r["feedback"]))
            if res.done:
                termination = "done"
                break
        if termination != "fault":
            results.write_bytes_atomic(work / "final.png", encode_png(engine.observe(), png_compress_level))
            state = engine.state()
            # The console reported its half of the fingerprint; the runner's half sits beside it.
            state.setdefault("provenance", {}).setdefault("environment", {}).update(
                runner_fingerprint(display.name))
            if startup_retry:
                state["provenance"]["startup_retry"] = startup_retry
            results.write_json_atomic(work / "state.json", state)
    except ConsoleFault as exc:
        termination, fault = "fault", f"console fault: {exc}"
    except Exception as exc:  # noqa: BLE001 - any runner-side failure is an environment fault
        termination, fault = "fault", f"runner fault: {exc!r}\n{traceback.format_exc(limit=8)}"
    finally:
        receipts.close()
        if engine is not None:
            # kept for the next episode only when this one ended without a fault and dumped its state
            engine.close(clean=termination != "fault" and state is not None)
    sim_time = engine.sim_time if engine is not None else 0.0
    verdict = make_verdict(card, spec, agent.name, state, steps, rejected, termination, fault,
                           time.monotonic() - wall0, sim_time)
    if keeper is not None and verdict.outcome == "INVALID":
        keeper.discard()  # whatever made it INVALID, the next episode gets a fresh console
    results.write_json_atomic(work / "verdict.json", verdict.model_dump())
    results.publish(work, final_dir)
    return verdict


def _model_call(agent) -> dict[str, Any] | None:
    """The agent's last model call (api agents), recorded in the receipt."""
    return getattr(agent, "last_call_info", None) or None


def make_verdict(card: TaskCard, spec: EpisodeSpec, agent_name: str, state, steps: int, rejected: int,
                 termination: str, fault: str, wall: float, sim_time: float) -> Verdict:
    """The episode's verdict: INVALID on any fault or missing state dump, else the oracle's judgement."""
    common = dict(task=card.id, task_version=card.version, modality=card.modality, level=card.level,
                  subject=spec.subject, seed=spec.seed, agent=agent_name, steps=steps,
                  rejected_steps=rejected, termination=termination, wall_seconds=round(wall, 3),
                  sim_seconds=sim_time)
    if termination == "fault" or state is None:
        return Verdict(outcome="INVALID", sr=0.0, pr=0.0, aq=0.0, reason=fault or "no state dump", **common)
    result = score_episode(state, card, spec.subject, termination)
    return Verdict(outcome=result.outcome, sr=result.sr, pr=result.pr, aq=result.aq, reason=result.reason,
                   stages=result.stages, details=result.details, **common)
