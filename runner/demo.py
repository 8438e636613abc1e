"""`medimageos demo`: reference solvers on the development subject, like the public release.

For each task: start.png (the agent's step-0 screen), success.png and success.gif (only when the
oracle said PASS) go into OUT/media/<modality>/<id>/ beside card.json, the exact card the episode
ran; the no-op agent runs too, then scores and a report are written. Nothing is written into the
source tree: `medimageos tasks publish-media OUT` (publish_media) copies the media into
tasks/<modality>/<id>/, refusing media made from a card other than the shipped one.
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

from PIL import Image

from runner.agents.reference import ReferenceAgent
from runner.agents.simple import NoopAgent
from runner.episode import CARD_FILE
from runner.results import episode_dir
from runner.run import expand, run_sequential
from tasks.card import (TaskCard, TaskCardError, cards_in, load_card_file, select_cards, tasks_root,
                        write_card)

MEDIA_FILES = ("start.png", "success.png", "success.gif")
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


def media_dir(out: Path, card: TaskCard) -> Path:
    """Where the demo puts one task's media: OUT/media/<modality>/<id>/."""
    return Path(out) / "media" / card.modality / card.id


def write_task_media(card: TaskCard, ep: Path, dest: Path, passed: bool) -> list[str]:
    """Media of one reference episode into `dest` (start.png; success.png/.gif only if it passed),
    with the card the episode ran (card.json) so publishing can tell which card version they show."""
    dest.mkdir(parents=True, exist_ok=True)
    for stale in MEDIA_FILES:
        (dest / stale).unlink(missing_ok=True)
    if (ep / CARD_FILE).is_file():
        shutil.copyfile(ep / CARD_FILE, dest / CARD_FILE)
    else:  # an episode from before episodes recorded their card; it was skipped as the same version
        write_card(card, dest / CARD_FILE)
    shutil.copyfile(ep / "step_000.png", dest / "start.png")
    written = ["start.png"]
    if passed:
        shutil.copyfile(ep / "final.png", dest / "success.png")
        frames = sorted(ep.glob("step_*.png")) + [ep / "final.png"]
        write_gif(frames, dest / "success.gif")
        written += ["success.png", "success.gif"]
    return written


def publish_media(media_root: Path, tasks_dir: Path | None = None) -> list[Path]:
    """Copy demo media (OUT or OUT/media) into <tasks_dir>/<modality>/<id>/; returns the task folders written.

    Every media folder is checked before anything is copied: its card.json must equal the shipped
    card (same version and content), else TaskCardError names the task and the difference. A task
    whose media have no success.png/.gif (the reference did not pass) loses its stale ones.
    """
    media_root = Path(media_root)
    if (media_root / "media").is_dir():
        media_root = media_root / "media"
    tasks_dir = Path(tasks_dir) if tasks_dir is not None else tasks_root()
    shipped = {(c.modality, c.id): c for c in cards_in(tasks_dir)}
    folders = sorted(p.parent for p in media_root.glob(f"*/*/{CARD_FILE}"))
    if not folders:
        raise TaskCardError(f"no task media under {media_root} (expected <modality>/<id>/{CARD_FILE}; "
                            "make them with `medimageos demo --out DIR`)")
    plan: list[tuple[Path, Path]] = []
    for src in folders:
        ran = load_card_file(src / CARD_FILE)
        card = shipped.get((ran.modality, ran.id))
        if card is None:
            raise TaskCardError(f"{src}: task {ran.modality}/{ran.id} is not shipped in {tasks_dir}")
        if ran.version != card.version:
            raise TaskCardError(f"{src}: media of {ran.id} version {ran.version!r}, but the shipped card "
                                f"{card.source} is version {card.version!r}: rerun the demo")
        if ran != card:
            raise TaskCardError(f"{src}: media of {ran.id} were made from a card that differs from the "
                                f"shipped {card.source} (same version {card.version!r}): rerun the demo")
        if not (src / "start.png").is_file():
            raise TaskCardError(f"{src}: start.png is missing")
        plan.append((src, card.source.parent))
    for src, dest in plan:
        for name in MEDIA_FILES:
            (dest / name).unlink(missing_ok=True)
            if (src / name).is_file():
                shutil.copyfile(src / name, dest / name)
    return [dest for _, dest in plan]


def main(out: Path, tasks: str = "all", subject: str = "dev", seed: int = 0) -> int:
    """Run the demo into `out`; returns 1 if a reference episode did not PASS."""
    cards = select_cards(tasks)
    out.mkdir(parents=True, exist_ok=True)
    specs = expand(cards, [subject], [seed])
    ref = run_sequential(specs, ReferenceAgent, out, "reference")
    noop = run_sequential(specs, NoopAgent, out, "noop")
    print("\ntask                                   reference  noop   media")
    for card, r, n in zip(cards, ref, noop):
        dest = media_dir(out, card)
        media = write_task_media(card, episode_dir(out, "reference", card.id, subject, seed), dest,
                                 r.outcome == "PASS")
        print(f"{card.id:38s} {r.outcome:10s} {n.outcome:6s} {dest}/{{{','.join(media)}}}")
    from scoring.aggregate import score_command
    from scoring.report import write_report

    score_command(out, cards=list(cards))
    report = write_report(out, cards=list(cards))
    print(f"\nresults: {out.resolve()}\nscores:  {(out / 'scores.json').resolve()}\nreport:  {report.resolve()}"
          f"\nmedia:   {(out / 'media').resolve()}  (into tasks/: medimageos tasks publish-media {out})")
    failed = [c.id for c, r in zip(cards, ref) if r.outcome != "PASS"]
    if failed:
        print(f"reference did not PASS: {', '.join(failed)}", file=sys.stderr)
    return 1 if failed else 0
