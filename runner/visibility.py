"""`medimageos tasks visibility`: the visibility figure (scoring.visibility) over cards x subjects x seeds.

CT: each episode's console model (the same CTModel the console runs, built as the headless driver builds it)
acquires the card protocol's scouts; they are windowed as the console shows them and handed with the subject
oracle to scoring.visibility, which measures every answer-defining boundary's CNR.
MR (the renal cards): each episode's console model holds the localizer and any series acquired before the
session; every image is windowed as its viewport opens it and measured with the kidney masks of the oracle.
"""
from __future__ import annotations

import json
import sys
import time
from concurrent.futures import ProcessPoolExecutor
from pathlib import Path

import numpy as np

from scoring import visibility as vis

COHORT_SUBJECTS = [f"s{i:02d}" for i in range(1, 31)]


def ct_scout_model(task_id: str, subject: str, seed: int):
    """The episode's CT console model with both scouts acquired on the card's protocol."""
    from runner.headless.drive import make_model
    from scoring.registry.ct import REGISTRY
    from tasks.card import load_card

    model = make_model(load_card(task_id), subject, seed)
    if not model.scouts:  # the recovery cards' prior exam has acquired them already
        model.load_protocol(REGISTRY[task_id].protocol, log=False)
        model._finish_scout(log=False)
    return model


def save_scout_pngs(task_id: str, subject: str, seed: int, out_dir: Path) -> list[Path]:
    """Both scouts of an episode as the console windows them, one 8-bit PNG per view (2 mm a pixel)."""
    from PIL import Image

    from rendering import ct_physics

    model = ct_scout_model(task_id, subject, seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for view in vis.VIEWS:
        grey = ct_physics.scout_display_grey(model.scouts[view].pixels, view).astype(np.uint8)
        path = out_dir / f"{task_id}_{subject}_seed{seed}_{view}.png"
        Image.fromarray(grey).save(path)
        paths.append(path)
    return paths


def ct_episode(task_id: str, subject: str, seed: int) -> list[vis.Measure]:
    """Every answer-defining boundary of one CT episode on both scouts, as the console shows them."""
    from consoles.ct.model import SCOUT_PIXEL_MM
    from rendering import ct_physics
    from scoring.registry.ct import REGISTRY
    from scoring.subject_oracle import load_oracle

    spec = REGISTRY[task_id]
    model = ct_scout_model(task_id, subject, seed)
    top, bottom = model.scout_window
    scouts = {}
    for view in vis.VIEWS:
        clean, _ = model._scout_grid(view, top, bottom)
        scouts[view] = (ct_physics.scout_display_grey(model.scouts[view].pixels, view),
                        ct_physics.scout_display_grey(clean, view),
                        model.scout_grid_indices(view, top, bottom))
    return vis.ct_scout_measures(task_id, subject, seed, spec.anatomy, load_oracle(subject), scouts,
                                 SCOUT_PIXEL_MM)


MR_RENAL_CARDS = ("mr_renal_acquisition_adequacy_v2", "mr_renal_bilateral_coverage_recovery_v2",
                  "mr_renal_bilateral_geometry_planning_v2", "mr_renal_numeric_coverage_correction_v2")


def mr_views(task_id: str, subject: str, seed: int) -> tuple[list[vis.MRView], object]:
    """The images an MR renal episode plans on, as its viewports open them: the 3-plane localizer's images
    and every image of a coronal series the initial state has acquired (the judged / recovered series), each
    windowed with its series' opening window (MRSeries.auto_window). Also the episode's console model."""
    from rendering.mr_image import display_grey, noise_free_images
    from tasks.card import load_card
    from runner.headless.drive import make_model

    model = make_model(load_card(task_id), subject, seed)
    views = []
    for s in model.series:
        data = s.data
        level, width = data.auto_window
        clean = noise_free_images(model.subject, data)
        for k, im in enumerate(data.images):
            name = f"localizer {im.name}" if s.localizer else f"series {s.uid} image {k + 1}"
            views.append(vis.MRView(name, display_grey(im.pixels, level, width),
                                    display_grey(clean[k], level, width), im.grid, im.thickness_mm))
    return views, model


def mr_episode(task_id: str, subject: str, seed: int) -> list[vis.Measure]:
    """Every kidney boundary of one MR renal episode on every image it plans on, as displayed."""
    from scoring.subject_oracle import load_oracle

    views, _ = mr_views(task_id, subject, seed)
    return vis.mr_measures(task_id, subject, seed, load_oracle(subject), views)


def save_mr_pngs(task_id: str, subject: str, seed: int, out_dir: Path) -> list[Path]:
    """The localizer images of an MR episode as displayed, one 8-bit PNG each."""
    from PIL import Image

    views, _ = mr_views(task_id, subject, seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    for v in views:
        if v.name.startswith("localizer"):
            path = out_dir / f"{task_id}_{subject}_seed{seed}_{v.name.replace(' ', '_')}.png"
            Image.fromarray(v.grey.astype(np.uint8)).save(path)
            paths.append(path)
    return paths


def episode(task_id: str, subject: str, seed: int) -> list[vis.Measure]:
    """One episode of a CT or MR card."""
    return mr_episode(task_id, subject, seed) if task_id in MR_RENAL_CARDS else ct_episode(task_id, subject, seed)


def _subject_job(args: tuple[list[str], str, list[int]]) -> list[vis.Measure]:
    from rendering import memo

    tasks, subject, seeds = args
    with memo.enabled():
        return [m for t in tasks for s in seeds for m in episode(t, subject, s)]


def run(tasks: list[str], subjects: list[str], seeds: list[int], workers: int = 2) -> list[vis.Measure]:
    """All measures, one job per subject (its oracle and projections loaded once)."""
    jobs = [(tasks, s, seeds) for s in subjects]
    if workers <= 1:
        return [m for j in jobs for m in _subject_job(j)]
    with ProcessPoolExecutor(workers) as ex:
        return [m for ms in ex.map(_subject_job, jobs) for m in ms]


def visibility_cards(spec: str) -> list[str]:
    """The cards a --tasks value names that the figure measures: L2+ CT cards and the MR renal cards."""
    from tasks.card import select_cards

    return [c.id for c in select_cards(spec)
            if (c.modality == "ct" and c.level >= 2) or c.id in MR_RENAL_CARDS]


def cmd_tasks_visibility(args) -> int:
    """Print the tables (min / median CNR per card and structure); exit 1 when a boundary misses the bound."""
    tasks = visibility_cards(args.tasks)
    if not tasks:
        print(f"no measured cards in {args.tasks!r}: the visibility figure covers the L2+ CT cards and the MR "
              f"renal cards so far", file=sys.stderr)
        return 2
    subjects = [s.strip() for s in args.subjects.split(",")] if args.subjects else COHORT_SUBJECTS
    seeds = [int(s) for s in args.seeds.split(",")]
    t0 = time.perf_counter()
    measures = run(tasks, subjects, seeds, args.workers)
    wall = time.perf_counter() - t0
    ct = [m for m in measures if m.task not in MR_RENAL_CARDS]
    mr = [m for m in measures if m.task in MR_RENAL_CARDS]
    rows = vis.table_rows(ct) if ct else []
    mr_rows = vis.mr_table_rows(mr) if mr else []
    if rows:
        print(vis.format_table(rows))
    if mr_rows:
        print(("\n" if rows else "") + vis.format_mr_table(mr_rows))
    fails = vis.failures(measures)
    print(f"\n{len(tasks)} cards x {len(subjects)} subjects x {len(seeds)} seeds in {wall:.0f} s; "
          f"{len(fails)} boundaries under CNR {vis.CNR_BOUND:g} on every image")
    for line in vis.failure_report(fails).splitlines()[:args.show_failures]:
        print("  " + line)
    if args.png_dir:
        for t in tasks:
            for sub in subjects:
                for k in seeds:
                    (save_mr_pngs if t in MR_RENAL_CARDS else save_scout_pngs)(t, sub, k, Path(args.png_dir))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"wall_s": round(wall, 1), "rows": rows, "mr_rows": mr_rows,
                                                   "measures": vis.measure_dicts(measures)}, indent=1))
    return 1 if fails else 0


def add_parser(tsub) -> None:
    """Register `tasks visibility` under the `tasks` command."""
    sp = tsub.add_parser("visibility", help="CNR of every answer-defining boundary on the images the agent "
                         "plans on (CT scouts, MR renal localizers and series), per card and structure")
    sp.add_argument("--tasks", default="all", help="ids (comma-separated), a modality or all (the L2+ CT cards "
                    "and the MR renal cards are measured)")
    sp.add_argument("--subjects", default=None, help="comma-separated ids; default s01..s30")
    sp.add_argument("--seeds", default="0,1,2")
    sp.add_argument("--workers", type=int, default=2)
    sp.add_argument("--json-out", default=None)
    sp.add_argument("--png-dir", default=None, help="also save every episode's CT scouts / MR localizer images as displayed (PNG)")
    sp.add_argument("--show-failures", type=int, default=20, help="list this many of the lowest failures")
    sp.set_defaults(fn=cmd_tasks_visibility)
