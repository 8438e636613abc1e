"""One episode: screenshot -> agent -> parse -> X input -> settle -> ... -> state dump -> verdict."""
from __future__ import annotations

import time
import traceback
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from runner import results
from runner.actions import ParserState, nominal_duration, parse_action
from runner.agents.base import AgentFault, Observation, StepRecord
from runner.capture import ScreenCapture, encode_png
from runner.console_process import ConsoleProcess
from runner.control_client import ConsoleFault
from runner.display import VirtualDisplay
from runner.fingerprint import runner_fingerprint
from runner.taskcard import TaskCard
from runner.xinput import open_input
from scoring.score import score_episode
from scoring.verdict import Verdict

POINTER_HOME = (4, 4)  # where the pointer starts every episode (top-left corner, over no control)


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
                png_compress_level: int = 3, control_timeout_s: float | None = None) -> Verdict:
    """Run (or skip, if already finished) one episode and return its verdict."""
    card = spec.card
    final_dir = results.episode_dir(out_root, agent.name, card.id, spec.subject, spec.seed)
    if results.is_finished(final_dir, card.version):
        return Verdict.model_validate_json((final_dir / "verdict.json").read_text())
    work = results.fresh_work_dir(final_dir)
    wall0 = time.monotonic()
    w, h = card.observation.width, card.observation.height
    receipts = results.ReceiptWriter(work / "receipts.jsonl")
    console = ConsoleProcess(display, card.modality, str(card.path), spec.subject, spec.seed,
                             log_path=work / "console.log", extra_env=console_env,
                             timeout_s=control_timeout_s)
    history: list[StepRecord] = []
    steps = rejected = 0
    termination, fault = "budget", ""
    state: dict[str, Any] | None = None
    sim_time = 0.0
    inp = cap = None
    try:
        console.start()
        inp = open_input(display.name)
        cap = ScreenCapture(display.name)
        inp.home(console.hello["window_id"], POINTER_HOME)
        sim_time = console.settle(0.0)
        agent.reset(card, spec.subject, spec.seed)
        if hasattr(agent, "bind_control"):
            agent.bind_control(ConsoleControlView(console))
        parser_state = ParserState(pointer=POINTER_HOME)
        for step in range(card.budgets.max_steps):
            png = encode_png(cap.grab_rgb(), png_compress_level)
            shot = f"step_{step:03d}.png"
            results.write_bytes_atomic(work / shot, png)
            obs = Observation(step, png, w, h, card.goal, card.budgets.max_steps - step, list(history))
            try:
                raw = agent.act(obs)
            except AgentFault as exc:
                termination, fault = "fault", f"agent fault: {exc}"
                receipts.write(_receipt(step, sim_time, None, None, [], "rejected", fault, shot, agent))
                break
            steps += 1
            res = parse_action(raw, card.action_profile, (w, h), coord_scale=coord_scale, state=parser_state)
            if res.ok:
                a = res.action
                if a.type != "done":
                    inp.perform(a)
                    parser_state.observe(a)
                sim_time = console.settle(nominal_duration(a))
                status, feedback = "executed", "done: episode ends" if a.type == "done" else "executed"
            else:
                rejected += 1
                status, feedback = "rejected", res.error or "rejected"
            action_dict = res.action.to_dict() if res.ok else None
            receipts.write(_receipt(step, sim_time, raw, action_dict, res.repairs, status, feedback, shot, agent))
            history.append(StepRecord(step, raw if isinstance(raw, str) else repr(raw), action_dict, status, feedback))
            if res.ok and res.action.type == "done":
                termination = "done"
                break
        if termination != "fault":
            results.write_bytes_atomic(work / "final.png", encode_png(cap.grab_rgb(), png_compress_level))
            state = console.state()
            # The console reported its half of the fingerprint; the runner's half sits beside it.
            state.setdefault("provenance", {}).setdefault("environment", {}).update(
                runner_fingerprint(display.name))
            results.write_json_atomic(work / "state.json", state)
    except ConsoleFault as exc:
        termination, fault = "fault", f"console fault: {exc}"
    except Exception as exc:  # noqa: BLE001 - any runner-side failure is an environment fault
        termination, fault = "fault", f"runner fault: {exc!r}\n{traceback.format_exc(limit=8)}"
    finally:
        receipts.close()
        for closer in (cap, inp):
            try:
                if closer is not None:
                    closer.close()
            except Exception:  # noqa: BLE001
                pass
        console.stop()
    verdict = make_verdict(card, spec, agent.name, state, steps, rejected, termination, fault,
                           time.monotonic() - wall0, sim_time)
    results.write_json_atomic(work / "verdict.json", verdict.model_dump())
    results.publish(work, final_dir)
    return verdict


def _receipt(step, sim_time, raw, action, repairs, status, feedback, shot, agent) -> dict[str, Any]:
    r = {"step": step, "sim_time": sim_time, "raw": raw, "action": action, "repairs": list(repairs),
         "status": status, "feedback": feedback, "screenshot": shot}
    info = getattr(agent, "last_call_info", None)
    if info:
        r["model_call"] = dict(info)
    return r


def make_verdict(card: TaskCard, spec: EpisodeSpec, agent_name: str, state, steps: int, rejected: int,
                 termination: str, fault: str, wall: float, sim_time: float) -> Verdict:
    """The episode's verdict: INVALID on any fault or missing state dump, else the oracle's judgement."""
    common = dict(task=card.id, task_version=card.version, modality=card.modality, level=card.level,
                  subject=spec.subject, seed=spec.seed, agent=agent_name, steps=steps,
                  rejected_steps=rejected, termination=termination, wall_seconds=round(wall, 3),
                  sim_seconds=sim_time)
    if termination == "fault" or state is None:
        return Verdict(outcome="INVALID", sr=0.0, pr=0.0, aq=0.0, reason=fault or "no state dump", **common)
    result = score_episode(state, card, spec.subject)
    return Verdict(outcome=result.outcome, sr=result.sr, pr=result.pr, aq=result.aq, reason=result.reason,
                   stages=result.stages, details=result.details, **common)
