"""Memory per worker: PSS of the runner worker, its Xvfb and the console over reference episodes.

    .venv/bin/python bench/bench_memory.py [--tasks ct] [--subject dev] [--json]

PSS (proportional set size, /proc/<pid>/smaps_rollup) splits shared pages between the processes
that map them, so the three figures add up to what one worker costs the machine. Sampled at every
step of each episode (the reference agent is wrapped: it samples, then acts); reported per task as
the first frame and the maximum, and per modality as medians over tasks.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from runner.memory import anon_mib, pss_mib, rss_mib  # noqa: E402


class SamplingAgent:
    """The reference agent, sampling PSS of (worker, Xvfb, console) before each of its steps."""

    def __init__(self, display) -> None:
        from runner.agents.reference import ReferenceAgent

        self._inner, self._display = ReferenceAgent(), display
        self.name = self._inner.name
        self.samples: list[dict[str, float]] = []
        self._console_pid: int | None = None

    def reset(self, card, subject, seed) -> None:
        self.samples = []
        self._inner.reset(card, subject, seed)

    def bind_control(self, control) -> None:
        self._console_pid = control._console.proc.pid
        self._inner.bind_control(control)

    def act(self, obs):
        import os

        s = {"worker": pss_mib(os.getpid()), "xvfb": pss_mib(self._display.proc.pid),
             "console": pss_mib(self._console_pid), "console_rss": rss_mib(self._console_pid)}
        s["total"] = s["worker"] + s["xvfb"] + s["console"]
        # unshared memory of each part: unlike PSS, it does not fall when other consoles run
        s["anon"] = {"worker": anon_mib(os.getpid()), "xvfb": anon_mib(self._display.proc.pid),
                     "console": anon_mib(self._console_pid)}
        self.samples.append(s)
        return self._inner.act(obs)


def measure(tasks: str = "ct", subject: str = "dev", seed: int = 0) -> dict:
    """{"tasks": {id: {"first": sample, "max": sample}}, "pss_mib": median of per-task max totals, ...}."""
    from runner.display import VirtualDisplay
    from runner.episode import EpisodeSpec, run_episode
    from tasks.card import select_cards

    per_task: dict[str, dict] = {}
    with VirtualDisplay(1280, 800) as disp, tempfile.TemporaryDirectory(prefix="bench-mem-") as tmp:
        agent = SamplingAgent(disp)
        for card in select_cards(tasks):
            run_episode(EpisodeSpec(card, subject, seed), agent, Path(tmp), disp)
            peak = max(agent.samples, key=lambda s: s["total"])
            anon_max = {k: max(s["anon"][k] for s in agent.samples) for k in agent.samples[0]["anon"]}
            per_task[card.id] = {"first": _round(agent.samples[0]), "max": _round(peak), "anon_max": _round(anon_max)}
    totals = [t["max"]["total"] for t in per_task.values()]
    parts = ("worker", "xvfb", "console")
    return {"subject": subject, "seed": seed, "tasks": per_task,
            "pss_mib_first_frame_median": round(statistics.median(t["first"]["total"] for t in per_task.values()), 1),
            "pss_mib_max_median": round(statistics.median(totals), 1), "pss_mib_max": round(max(totals), 1),
            "anon_mib_first_frame_median": {k: _median(t["first"]["anon"][k] for t in per_task.values()) for k in parts},
            "anon_mib_max_median": {k: _median(t["anon_max"][k] for t in per_task.values()) for k in parts}}


def _median(xs) -> float:
    return round(statistics.median(list(xs)), 1)


def _round(s: dict) -> dict:
    return {k: _round(v) if isinstance(v, dict) else round(v, 1) for k, v in s.items()}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--tasks", default="ct")
    ap.add_argument("--subject", default="dev")
    ap.add_argument("--json", action="store_true")
    args = ap.parse_args(argv)
    r = measure(args.tasks, args.subject)
    if args.json:
        print(json.dumps(r, indent=2))
        return 0
    print(f"PSS per worker (MiB), reference on {args.subject} seed 0: first frame / peak over the episode")
    for task, t in r["tasks"].items():
        f, m = t["first"], t["max"]
        print(f"  {task:34s} total {f['total']:6.1f} / {m['total']:6.1f}   console {f['console']:6.1f} / "
              f"{m['console']:6.1f} (RSS {m['console_rss']:.0f})   Xvfb {m['xvfb']:5.1f}   worker {m['worker']:5.1f}")
    print(f"  median first frame {r['pss_mib_first_frame_median']}, median peak {r['pss_mib_max_median']}, "
          f"max peak {r['pss_mib_max']}")
    print(f"  anonymous (unshared) MiB, median first frame {r['anon_mib_first_frame_median']}, "
          f"median peak {r['anon_mib_max_median']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
