"""`medimageos tasks visibility`: the visibility figure (scoring.visibility) over cards x subjects x seeds.

CT: each episode's console model (the same CTModel the console runs, built as the headless driver builds it)
acquires the card protocol's scouts; they are windowed as the console shows them and handed with the subject
oracle to scoring.visibility, which measures every answer-defining boundary's CNR.
MR (the renal cards): each episode's console model holds the localizer and any series acquired before the
session; every image is windowed as its viewport opens it and measured with the kidney masks of the oracle.
MR cardiac planning cards: the same images (the localizer, acquired first where the card starts without it, and
the cines the start state holds), measured with the LV's long-axis ends or the heart's borders.
Ultrasound: the reference plan is driven on the console model to its end; the image then on the screen is
measured with the examined kidney's poles and capsule.
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


MR_CARDIAC_CARDS = ("L3_coarse_2ch", "L3_coarse_4ch", "L4_2ch", "L4_4ch", "L4_fine_2ch", "L4_fine_4ch",
                    "L4_heart_shim_box", "L4_long_axis_pair", "L5_fine_lax_from_scratch", "L5_sax_stack")
MR_SHIM_CARDS = ("L4_heart_shim_box",)
US_CARDS = ("us_kidney_acquisition_optimization_v1", "us_kidney_contact_vs_gain_v1",
            "us_kidney_long_axis_search_v1")  # the L2+ ultrasound cards


def _acquire_localizer(model) -> None:
    """A card that starts with the localizer to acquire (L5_fine_lax_from_scratch): acquire it as the agent's
    first step does (Go on its row, the clock run to its end), so the figure measures the images planned on."""
    from consoles.common.clock import SimClock

    clock = SimClock(start=model.t)
    clock.subscribe(model.on_clock)
    model.go()
    clock.advance(model.remaining_s() + 1.0)
    if not any(s.localizer for s in model.series):
        raise RuntimeError(f"{model.task_id}: Go did not acquire the localizer")


def mr_views(task_id: str, subject: str, seed: int, near: np.ndarray | None = None
             ) -> tuple[list[vis.MRView], object]:
    """The images an MR renal episode plans on, as its viewports open them: every slice of the 3-plane
    localizer (named by its plane) and every image of a series the initial state has acquired (the judged /
    recovered series, the prior cines), each windowed with its series' opening window
    (MRSeries.auto_window). Also the episode's console model.

    `near` ((N, 3) subject mm, e.g. the measured organs' voxels): an image whose slab lies wholly away from
    these points cuts none of them, so its noise-free twin is not formed (grey_clean None; the measurement
    never reads it: `scoring.visibility.organ_sections` gives such an image an empty section)."""
    from rendering.mr_image import display_grey, noise_free_image
    from tasks.card import load_card
    from runner.headless.drive import make_model

    model = make_model(load_card(task_id), subject, seed)
    if task_id in MR_CARDIAC_CARDS and not any(s.localizer for s in model.series):
        _acquire_localizer(model)
    reach = float(np.sqrt(3.0) * np.max(model.subject.spacing_mm))
    views = []
    for s in model.series:
        data = s.data
        level, width = data.auto_window
        for k, im in enumerate(data.images):
            name = f"localizer {im.name}" if s.localizer else f"series {s.uid} image {k + 1}"
            clean = None
            if near is None or vis.slab_reaches(near, im.grid.pose, im.thickness_mm, reach):
                clean = display_grey(noise_free_image(model.subject, data, k), level, width)
            views.append(vis.MRView(name, display_grey(im.pixels, level, width), clean, im.grid, im.thickness_mm))
    return views, model


def mr_episode(task_id: str, subject: str, seed: int) -> list[vis.Measure]:
    """Every kidney boundary of one MR renal episode on every image it plans on, as displayed."""
    from scoring.subject_oracle import load_oracle

    oracle = load_oracle(subject)
    near = np.concatenate([oracle.organ_voxels_mm(o) for o in sorted({b.organ for b in vis.MR_KIDNEY_BOUNDARIES})])
    views, _ = mr_views(task_id, subject, seed, near)
    return vis.mr_measures(task_id, subject, seed, oracle, views)


def mr_cardiac_episode(task_id: str, subject: str, seed: int) -> list[vis.Measure]:
    """The LV's long-axis ends (the heart's borders on the shim card) of one MR cardiac episode on every image
    it plans on (the localizer, the cines its start state holds), as displayed."""
    from scoring.subject_oracle import load_oracle

    oracle = load_oracle(subject)
    bounds = vis.HEART_BORDERS if task_id in MR_SHIM_CARDS else vis.lv_boundaries(oracle)
    views, _ = mr_views(task_id, subject, seed, np.concatenate([oracle.organ_voxels_mm(o)
                                                               for o in sorted({b.organ for b in bounds})]))
    return vis.mr_oblique_measures(task_id, subject, seed, oracle, views, bounds)


def us_final_model(task_id: str, subject: str, seed: int):
    """The episode's ultrasound console model after the reference plan (runner.headless.us, the loop of
    runner.headless.drive.drive, which keeps its model to itself): the live image at the final pose."""
    from consoles.common.clock import SimClock
    from runner.agents.reference.common import wait_seconds
    from runner.agents.reference.us import USPlanner
    from runner.headless.drive import OP_SECONDS, make_model
    from runner.headless.us import MAX_OPS, apply_op
    from tasks.card import load_card

    card = load_card(task_id)
    model = make_model(card, subject, seed)
    planner = USPlanner(card, subject)
    clock = SimClock(start=model.t)
    clock.subscribe(model.on_clock)
    for _ in range(MAX_OPS + 1):
        op = planner.next_op(model.state())
        if op.name == "done":
            return model
        if op.name == "wait":
            clock.advance(wait_seconds(op.args["seconds"]))
            continue
        apply_op(model, op)
        clock.advance(OP_SECONDS)
    raise RuntimeError(f"{task_id} {subject} seed {seed}: the reference plan did not end in {MAX_OPS} operations")


def us_image(model, oracle, side: str) -> tuple[vis.PlaneImage, np.ndarray]:
    """The image on the screen (the frozen one, or the live one) as a PlaneImage, and the kidney's pixels on
    it (the label each displayed pixel shows, as the scan conversion samples it)."""
    from rendering.us_image import display_frame

    fr = display_frame(model.beam(), model.display_settings(), with_labels=True)
    if not np.array_equal(fr.pixels, model.frame().pixels):
        raise RuntimeError("the re-formed ultrasound frame differs from the console model's")
    rows, cols = fr.pixels.shape
    x, y = fr.pixel_to_mm(np.arange(rows)[:, None], np.arange(cols)[None, :])
    geo = fr.geometry
    pts = geo.image_to_subject(np.broadcast_to(x, (rows, cols)), np.broadcast_to(y, (rows, cols)))
    kidney = np.isin(fr.labels, oracle.organ_labels(f"kidney_{side}"))
    return vis.PlaneImage("live image", fr.pixels, None, fr.sector, pts, np.asarray(geo.u, float),
                          np.asarray(geo.axis, float), (fr.pixel_mm, fr.pixel_mm)), kidney


def us_episode(task_id: str, subject: str, seed: int) -> list[vis.Measure]:
    """The examined kidney's poles and capsule on the image at the reference's final pose, as displayed."""
    from scoring.oracles.us import _side, kidney_anatomy
    from scoring.subject_oracle import load_oracle

    oracle = load_oracle(subject)
    model = us_final_model(task_id, subject, seed)
    side = _side(model.state())
    im, kidney = us_image(model, oracle, side)
    bounds = vis.us_boundaries(kidney_anatomy(oracle, side)["axis"], im.col_axis, im.row_axis, side)
    return vis.oblique_measures(task_id, subject, seed, oracle, [im], bounds, {(f"kidney_{side}", 0): kidney})


def save_us_png(task_id: str, subject: str, seed: int, out_dir: Path) -> list[Path]:
    """The image at the reference's final pose as displayed (8-bit PNG)."""
    from PIL import Image

    out_dir.mkdir(parents=True, exist_ok=True)
    path = out_dir / f"{task_id}_{subject}_seed{seed}_live.png"
    Image.fromarray(us_final_model(task_id, subject, seed).frame().pixels).save(path)
    return [path]


def save_mr_pngs(task_id: str, subject: str, seed: int, out_dir: Path) -> list[Path]:
    """The localizer images of an MR episode as displayed, one 8-bit PNG each."""
    from PIL import Image

    views, _ = mr_views(task_id, subject, seed)
    out_dir.mkdir(parents=True, exist_ok=True)
    paths = []
    counts = {n: sum(v.name == n for v in views) for n in {v.name for v in views}}
    seen: dict[str, int] = {}
    for v in views:
        if v.name.startswith("localizer"):
            seen[v.name] = j = seen.get(v.name, 0) + 1  # the slice's place in its plane's stack
            path = out_dir / f"{task_id}_{subject}_seed{seed}_{v.name.replace(' ', '_')}_{j:02d}of{counts[v.name]:02d}.png"
            Image.fromarray(v.grey.astype(np.uint8)).save(path)
            paths.append(path)
    return paths


def episode(task_id: str, subject: str, seed: int) -> list[vis.Measure]:
    """One episode of a CT, MR or ultrasound card."""
    if task_id in MR_RENAL_CARDS:
        return mr_episode(task_id, subject, seed)
    if task_id in MR_CARDIAC_CARDS:
        return mr_cardiac_episode(task_id, subject, seed)
    if task_id in US_CARDS:
        return us_episode(task_id, subject, seed)
    return ct_episode(task_id, subject, seed)


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
    """The cards a --tasks value names that the figure measures: L2+ CT cards, the MR renal and cardiac
    planning cards and the L2+ ultrasound cards."""
    from tasks.card import select_cards

    return [c.id for c in select_cards(spec)
            if (c.modality == "ct" and c.level >= 2) or c.id in MR_RENAL_CARDS + MR_CARDIAC_CARDS + US_CARDS]


def cmd_tasks_visibility(args) -> int:
    """Print the tables (min / median CNR per card and structure); exit 1 when a boundary misses the bound."""
    tasks = visibility_cards(args.tasks)
    if not tasks:
        print(f"no measured cards in {args.tasks!r}: the visibility figure covers the L2+ CT cards, the MR "
              f"renal and cardiac planning cards and the L2+ ultrasound cards", file=sys.stderr)
        return 2
    subjects = [s.strip() for s in args.subjects.split(",")] if args.subjects else COHORT_SUBJECTS
    seeds = [int(s) for s in args.seeds.split(",")]
    t0 = time.perf_counter()
    measures = run(tasks, subjects, seeds, args.workers)
    wall = time.perf_counter() - t0
    others = MR_RENAL_CARDS + MR_CARDIAC_CARDS + US_CARDS
    ct = [m for m in measures if m.task not in others]
    mr = [m for m in measures if m.task in MR_RENAL_CARDS]
    heart = [m for m in measures if m.task in MR_CARDIAC_CARDS]
    us = [m for m in measures if m.task in US_CARDS]
    rows = vis.table_rows(ct) if ct else []
    mr_rows = vis.mr_table_rows(mr) if mr else []
    heart_rows = vis.mr_table_rows(heart) if heart else []
    us_rows = vis.mr_table_rows(us, "live") if us else []
    tables = ([vis.format_table(rows)] if rows else []) + ([vis.format_mr_table(mr_rows)] if mr_rows else []) + \
        ([vis.format_mr_table(heart_rows)] if heart_rows else []) + \
        ([vis.format_mr_table(us_rows, "live image")] if us_rows else [])
    print("Per card (every structure's best image; the tables below give each structure):\n")
    print(vis.format_card_summary(vis.card_summary_rows(measures)) + "\n")
    print("\n\n".join(tables))
    fails = vis.failures(measures)
    print(f"\n{len(tasks)} cards x {len(subjects)} subjects x {len(seeds)} seeds in {wall:.0f} s; "
          f"{len(fails)} boundaries under CNR {vis.CNR_BOUND:g} on every image")
    for line in vis.failure_report(fails).splitlines()[:args.show_failures]:
        print("  " + line)
    if args.png_dir:
        for t in tasks:
            for sub in subjects:
                for k in seeds:
                    save = (save_mr_pngs if t in MR_RENAL_CARDS + MR_CARDIAC_CARDS else
                            save_us_png if t in US_CARDS else save_scout_pngs)
                    save(t, sub, k, Path(args.png_dir))
    if args.json_out:
        Path(args.json_out).write_text(json.dumps({"wall_s": round(wall, 1), "rows": rows, "mr_rows": mr_rows,
                                                   "mr_cardiac_rows": heart_rows, "us_rows": us_rows,
                                                   "cards": vis.card_summary_rows(measures),
                                                   "measures": vis.measure_dicts(measures)}, indent=1))
    return 1 if fails else 0


def add_parser(tsub) -> None:
    """Register `tasks visibility` under the `tasks` command."""
    sp = tsub.add_parser("visibility", help="CNR of every answer-defining boundary on the images the agent "
                         "plans on (CT scouts, MR localizers and series, the ultrasound image at the reference's "
                         "final pose), per card and structure")
    sp.add_argument("--tasks", default="all", help="ids (comma-separated), a modality or all (the L2+ CT cards "
                    "and the MR renal cards are measured)")
    sp.add_argument("--subjects", default=None, help="comma-separated ids; default s01..s30")
    sp.add_argument("--seeds", default="0,1,2")
    sp.add_argument("--workers", type=int, default=2)
    sp.add_argument("--json-out", default=None)
    sp.add_argument("--png-dir", default=None, help="also save every episode's CT scouts / MR localizer images as displayed (PNG)")
    sp.add_argument("--show-failures", type=int, default=20, help="list this many of the lowest failures")
    sp.set_defaults(fn=cmd_tasks_visibility)
