"""A console reset in place for the next episode shows exactly what a freshly launched one shows.

One worker runs a sequence of episodes (several CT tasks, dev and two cohort subjects, several seeds,
an episode that leaves the console on another page with another window/level and a half-typed field,
one whose console crashes and one that ends INVALID) with a ConsoleKeeper; every episode is also run
on its own fresh console. Every screenshot, the state dump (but its console_start flag) and the
verdict (but its wall time) must be byte-identical, and episodes after a crash or an INVALID one must
have been launched afresh.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from runner.agents.base import AgentFault
from runner.agents.reference import ReferenceAgent
from runner.console_process import ConsoleKeeper, ConsoleProcess
from runner.control_client import ConsoleFault
from runner.episode import EpisodeSpec, run_episode
from runner.results import episode_dir
from tasks.card import load_card
from tests.conftest import require_console

pytestmark = pytest.mark.display


class MessyAgent:
    """Leaves the console as unlike a fresh one as it can: protocol loaded, scouts taken, Review page
    with the Lung window, text half-typed into a focused field; then done."""

    name = "messy"

    def reset(self, card, subject, seed) -> None:
        self.plan = ["protocol_item:chest_routine", "load_protocol", "acquire_scout", 5.0, "tab_review",
                     "wl_lung", "start_field", "type:12"]

    def bind_control(self, view) -> None:
        self.view = view

    def act(self, obs) -> str:
        if not self.plan:
            return json.dumps({"action": "done"})
        what = self.plan.pop(0)
        if isinstance(what, float):
            return json.dumps({"action": "wait", "seconds": what})
        if what.startswith("type:"):
            return json.dumps({"action": "type", "text": what[5:]})
        x, y, w, h = self.view.geometry()["geometry"][what]
        return json.dumps({"action": "click", "x": x + w // 2, "y": y + h // 2})


class CrashingAgent:
    """Crashes the console (the fault-injection `_crash` command) at its second step."""

    name = "crashing"

    def reset(self, card, subject, seed) -> None:
        self.step = 0

    def bind_control(self, view) -> None:
        self.console = view._console

    def act(self, obs) -> str:
        self.step += 1
        if self.step == 2:
            try:
                self.console.request("_crash")
            except ConsoleFault:
                pass
        return json.dumps({"action": "wait", "seconds": 1})


class FaultingAgent:
    """An agent fault at its second step: the episode is INVALID though the console is healthy."""

    name = "faulting"

    def reset(self, card, subject, seed) -> None:
        self.step = 0

    def act(self, obs) -> str:
        self.step += 1
        if self.step == 2:
            raise AgentFault("injected agent fault")
        return json.dumps({"action": "wait", "seconds": 1})


# (task, subject, seed, agent, console start expected with reuse), in segments of one keeper each (one test
# each, so no test plays more than 6 episodes): each segment starts with a launch; a reset follows a reference,
# a messy and a crashing episode's predecessor, and a launch follows the crash and the INVALID episode.
SEGMENTS = {
    "reference-messy": [
        ("ct_lung_coverage_isocenter", "dev", 0, ReferenceAgent, "launch"),
        ("ct_kub_low_dose_constraint", "s01", 1, MessyAgent, "reset")],
    "messy-bolus": [  # the CCTA bolus episode after a messy one
        ("ct_kub_low_dose_constraint", "s01", 1, MessyAgent, "launch"),
        ("ccta_heart_coverage_isocenter", "s02", 0, ReferenceAgent, "reset")],
    "messy-reference-crash": [
        ("ct_liver_coverage_isocenter", "dev", 2, MessyAgent, "launch"),
        ("ct_lung_coverage_isocenter", "dev", 3, ReferenceAgent, "reset"),
        ("ct_ui_smoke_routine", "dev", 0, CrashingAgent, "reset")],
    "after-crash-and-invalid": [
        ("ct_renal_bilateral_coverage", "s01", 0, ReferenceAgent, "launch"),
        ("ct_ui_smoke_routine", "dev", 1, FaultingAgent, "reset"),
        ("ct_lung_coverage_isocenter", "s02", 1, ReferenceAgent, "launch")],  # after the INVALID episode
}
SEQUENCE = [e for seg in SEGMENTS.values() for e in seg]
FAULT_ENV = {"MEDIMAGEOS_FAULT_INJECTION": "1"}  # registers _crash; changes nothing on screen


def _record(d: Path) -> dict[str, object]:
    """What must be identical: screenshots, receipts, state dump but console_start, verdict but wall time."""
    out: dict[str, object] = {p.name: p.read_bytes() for p in sorted(d.iterdir()) if p.suffix == ".png"}
    out["receipts"] = (d / "receipts.jsonl").read_text()
    if (d / "state.json").exists():
        state = json.loads((d / "state.json").read_text())
        out["console_start"] = state["provenance"].pop("console_start")
        out["state"] = state
    verdict = json.loads((d / "verdict.json").read_text())
    verdict.pop("wall_seconds")
    if verdict["outcome"] == "INVALID":  # a crash's message depends on when the runner noticed it
        verdict["reason"] = verdict["reason"].split(":")[0]
    out["verdict"] = verdict
    return out


_FRESH: dict[tuple, dict[str, object]] = {}  # fresh-launch records of this worker, shared by its tests


def _run(sequence, out: Path, display, keeper: ConsoleKeeper | None) -> list[dict[str, object]]:
    """Records of `sequence` played with `keeper` (reset in place), or each on a fresh console (keeper None;
    an episode's fresh record is played once per worker and reused by every test that compares with it)."""
    records = []
    for task, subject, seed, agent_cls, _ in sequence:
        key = (task, subject, seed, agent_cls)
        if keeper is None and key in _FRESH:
            records.append(_FRESH[key])
            continue
        agent = agent_cls()
        run_episode(EpisodeSpec(load_card(task), subject, seed), agent, out, display, console_env=FAULT_ENV,
                    control_timeout_s=10.0, keeper=keeper if keeper is not None else ConsoleKeeper(reuse=False))
        records.append(_record(episode_dir(out, agent.name, task, subject, seed)))
        if keeper is None:
            _FRESH[key] = records[-1]
    if keeper is not None:
        keeper.close()
    return records


def _differences(a: dict[str, object], b: dict[str, object]) -> list[str]:
    return [k for k in sorted(set(a) | set(b)) if k != "console_start" and a.get(k) != b.get(k)]


@pytest.mark.parametrize("segment", sorted(SEGMENTS))
def test_consecutive_episodes_reset_in_place_match_fresh_launches(display, tmp_path, subject_cache, segment):
    require_console()
    sequence = SEGMENTS[segment]
    keeper = ConsoleKeeper(reuse=True)
    reused = _run(sequence, tmp_path / "reused", display, keeper)
    fresh = _run(sequence, tmp_path / "fresh", display, None)
    starts = [start for *_, start in sequence]
    assert keeper.launches == starts.count("launch") and keeper.resets == starts.count("reset")
    for (task, subject, seed, agent_cls, start), r, f in zip(sequence, reused, fresh):
        where = (task, subject, seed, agent_cls.name)
        if agent_cls in (CrashingAgent, FaultingAgent):
            assert r["verdict"]["outcome"] == f["verdict"]["outcome"] == "INVALID", where
        else:
            assert r["console_start"] == start and f["console_start"] == "launch", where
            assert r["verdict"]["outcome"] != "INVALID", (where, r["verdict"]["reason"])
        assert _differences(r, f) == [], where


def test_the_comparison_catches_a_reset_that_forgets_the_page_or_window_level(display, tmp_path, monkeypatch,
                                                                               subject_cache):
    """Negative control: a reset followed by what it would have forgotten (Review page, Lung window)
    must be reported as differing from a fresh launch."""
    require_console()
    real_reset = ConsoleProcess.reset

    def forgetful_reset(self, task, subject, seed):
        hello = real_reset(self, task, subject, seed)
        from runner.actions import Action
        from runner.xinput import open_input

        inp = open_input(self.display.name)
        try:
            for name in ("tab_review", "wl_lung"):  # the W/L buttons are on the Review page
                x, y, w, h = self.geometry()["geometry"][name]
                inp.perform(Action("click", x=x + w // 2, y=y + h // 2))
                self.settle(0.0)
        finally:
            inp.close()
        return hello

    sequence = [SEQUENCE[0], ("ct_liver_coverage_isocenter", "dev", 0, ReferenceAgent, "reset")]
    fresh = _run(sequence, tmp_path / "fresh", display, None)
    monkeypatch.setattr(ConsoleProcess, "reset", forgetful_reset)
    reused = _run(sequence, tmp_path / "reused", display, ConsoleKeeper(reuse=True))
    assert reused[1].get("console_start") == "reset", reused[1]["verdict"]["reason"]
    assert "step_000.png" in _differences(reused[1], fresh[1])


def test_recovery_task_after_a_planning_episode_matches_a_fresh_launch(display, tmp_path, subject_cache):
    """A recovery task starts on Review, so its scouts are first shown at a new size: the overlays are
    drawn again on resize (they used to stay at the hidden page's size on a fresh console only)."""
    require_console()
    sequence = [SEQUENCE[0], ("ct_undercoverage_recovery", "dev", 1, ReferenceAgent, "reset")]
    reused = _run(sequence, tmp_path / "reused", display, ConsoleKeeper(reuse=True))
    fresh = _run(sequence, tmp_path / "fresh", display, None)
    assert reused[1]["console_start"] == "reset"
    assert _differences(reused[1], fresh[1]) == []
