"""`medimageos demo`: reference solvers on the development subject, like the public release.

For each task: start.png (the agent's step-0 screen), success.png and success.gif (only when the
oracle said PASS) go into the task's folder; the no-op agent runs too, then scores and a report
are written. Nothing is opened; the paths are printed.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

from PIL import Image

from runner.agents.reference import ReferenceAgent
from runner.agents.simple import NoopAgent
from runner.results import episode_dir
from runner.run import expand, run_sequential
from runner.taskcard import TaskCard, select_cards

GIF_SIZE = (640, 400)
GIF_FRAME_MS = 700


def write_gif(frames: list[Path], out: Path) -> None:
    """A small looping animation of an episode's screens (half size, 0.7 s a frame)."""
    images = [Image.open(f).convert("RGB").resize(GIF_SIZE, Image.Resampling.LANCZOS) for f in frames]
    images = [im.quantize(colors=128, method=Image.Quantize.MEDIANCUT, dither=Image.Dither.NONE) for im in images]
    tmp = out.with_name(out.name + ".part")
    images[0].save(tmp, format="GIF", save_all=True, append_images=images[1:], duration=GIF_FRAME_MS,
                   loop=0, optimize=False)
    tmp.replace(out)


def publish_task_media(card: TaskCard, ep: Path, passed: bool) -> list[str]:
    """Copy start/success media of one reference episode into tasks/<modality>/<id>/."""
    dest = card.path.parent
    shutil.copyfile(ep / "step_000.png", dest / "start.png")
    written = ["start.png"]
    for stale in ("success.png", "success.gif"):
        (dest / stale).unlink(missing_ok=True)
    if passed:
        shutil.copyfile(ep / "final.png", dest / "success.png")
        frames = sorted(ep.glob("step_*.png")) + [ep / "final.png"]
        write_gif(frames, dest / "success.gif")
        written += ["success.png", "success.gif"]
    return written


def main(out: Path, tasks: str = "all", subject: str = "dev", seed: int = 0) -> int:
    cards = select_cards(tasks)
    out.mkdir(parents=True, exist_ok=True)
    specs = expand(cards, [subject], [seed])
    ref = run_sequential(specs, ReferenceAgent, out, "reference")
    noop = run_sequential(specs, NoopAgent, out, "noop")
    print("\ntask                                   reference  noop   media")
    for card, r, n in zip(cards, ref, noop):
        media = publish_task_media(card, episode_dir(out, "reference", card.id, subject, seed), r.outcome == "PASS")
        print(f"{card.id:38s} {r.outcome:10s} {n.outcome:6s} {card.path.parent}/{{{','.join(media)}}}")
    from scoring.aggregate import score_command
    from scoring.report import write_report

    score_command(out, cards=list(cards))
    report = write_report(out, cards=list(cards))
    print(f"\nresults: {out.resolve()}\nscores:  {(out / 'scores.json').resolve()}\nreport:  {report.resolve()}")
    failed = [c.id for c, r in zip(cards, ref) if r.outcome != "PASS"]
    if failed:
        print(f"reference did not PASS: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0
