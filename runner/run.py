"""Many episodes: expand (tasks x subjects x seeds), skip finished ones, run, report progress."""
from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Callable, Iterable

from runner.console_process import ConsoleKeeper
from runner.display import VirtualDisplay
from runner.episode import EpisodeSpec, run_episode
from runner.results import episode_dir, is_finished
from scoring.capabilities import preflight
from tasks.card import TaskCard
from scoring.verdict import Verdict


def expand(cards: Iterable[TaskCard], subjects: list[str], seeds: list[int]) -> list[EpisodeSpec]:
    """Every (card, subject, seed) episode. A subject that cannot serve a card (an imported label map
    without the cardiac landmarks a planning card scores against) or an unknown subject is refused here,
    before any display, console or results folder exists: SubjectCapabilityError names each pair."""
    cards = list(cards)
    preflight(cards, subjects)
    return [EpisodeSpec(c, s, k) for c in cards for s in subjects for k in seeds]


class Progress:
    """One line per finished episode: done/total, PASS so far, ETA from the pace of episodes run.

    Skipped (already finished) episodes count as done but not towards the pace, so a resumed run's
    ETA is not fooled by the instant skips.
    """

    def __init__(self, total: int, out=sys.stderr) -> None:
        self.total, self.out = total, out
        self.done = self.passed = self.skipped = 0
        self.t0 = time.monotonic()

    def update(self, v: Verdict, skipped: bool = False) -> None:
        self.done += 1
        self.skipped += skipped
        self.passed += v.outcome == "PASS"
        ran = self.done - self.skipped
        if self.done >= self.total:
            eta_s = "0 s"
        elif ran:
            eta_s = f"{(time.monotonic() - self.t0) / ran * (self.total - self.done):.0f} s"
        else:
            eta_s = "?"
        tag = "skip " if skipped else ""
        print(f"[{self.done}/{self.total}] {tag}{v.agent} {v.task} {v.subject} seed{v.seed}: {v.outcome} "
              f"(SR {v.sr:.0f} PR {v.pr:.2f} AQ {v.aq:.1f}, {v.steps} steps, {v.termination})  "
              f"PASS so far {self.passed}  ETA {eta_s}", file=self.out, flush=True)


def run_sequential(specs: list[EpisodeSpec], make_agent: Callable[[], object], out: Path,
                   agent_name: str, coord_scale: str = "pixels", reuse: bool | None = None) -> list[Verdict]:
    """All episodes in this process on one Xvfb display (restarted if it dies); consecutive episodes
    on one modality reset the console in place unless `reuse` is False (default: on, unless
    MEDIMAGEOS_CONSOLE_REUSE=0)."""
    verdicts: list[Verdict] = []
    progress = Progress(len(specs))
    display: VirtualDisplay | None = None
    keeper = ConsoleKeeper(reuse)
    try:
        for spec in specs:
            final = episode_dir(out, agent_name, spec.card.id, spec.subject, spec.seed)
            skipped = is_finished(final, spec.card.version)
            w, h = spec.card.observation.width, spec.card.observation.height
            if display is None or not display.alive() or (display.width, display.height) != (w, h):
                if display is not None:
                    display.stop()
                display = VirtualDisplay(w, h).start()
            v = run_episode(spec, make_agent(), out, display, coord_scale=coord_scale, keeper=keeper)
            verdicts.append(v)
            progress.update(v, skipped)
    finally:
        keeper.close()
        if display is not None:
            display.stop()
    return verdicts
