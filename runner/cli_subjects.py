"""`medimageos subjects ...`: build, list, show, import and export digital subjects.

runner/cli.py calls add_subjects_parser(subparsers); each handler returns an exit code
(0 ok, 1 subject error, 2 usage error) and prints errors as one clear line on stderr.
"""
from __future__ import annotations

import argparse
import json
import sys
import time


def _err(msg: str) -> int:
    print(f"medimageos subjects: error: {msg}", file=sys.stderr)
    return 1


def cmd_build(args) -> int:
    from rendering.subjects import SubjectError
    from rendering.subjects.params import cohort_ids
    from rendering.subjects.runtime import build_procedural
    ids = list(args.ids or [])
    if args.cohort:
        ids += cohort_ids()
    if not ids:
        ids = ["dev"]
    try:
        for sid in ids:
            t = time.perf_counter()
            d = build_procedural(sid, force=args.force)
            print(f"{sid}: {d} ({time.perf_counter() - t:.1f} s)")
    except SubjectError as e:
        return _err(str(e))
    return 0


def cmd_list(args) -> int:
    from rendering.subjects import list_subjects
    rows = list_subjects()
    if args.json:
        print(json.dumps(rows, indent=1))
    else:
        for r in rows:
            print(f"{r['id']:<12} {r['kind']:<12} {'built' if r['built'] else 'not built'}")
    return 0


def cmd_show(args) -> int:
    from rendering.subjects import SubjectError, load_runtime
    from rendering.subjects.montage import render_montage
    try:
        rt = load_runtime(args.id)
        lms = {}
        info = {"id": rt.id, "version": rt.version, "shape": list(rt.labels.shape), "spacing_mm": rt.spacing_mm,
                "origin_mm": rt.origin_mm, "kind": rt.meta.get("kind")}
        try:
            from scoring.subject_oracle import load_oracle
            orc = load_oracle(args.id)
            lms = orc.landmarks
            info["organs_ml"] = {k: round(orc.organ_volume_ml(k)) for k in
                                 ("lungs", "heart", "liver", "spleen", "kidney_left", "kidney_right", "bladder")
                                 if k in orc.meta["organ_labels"]}
            info["cannot_serve"] = _unserved(orc.meta)
        except SubjectError as e:   # e.g. run under MEDIMAGEOS_ROLE=console: no landmarks
            info["oracle"] = str(e)
        print(json.dumps(info, indent=1, default=float))
        if args.png:
            render_montage(rt, args.png, lms)
            print(f"montage: {args.png}")
    except SubjectError as e:
        return _err(str(e))
    except OSError as e:
        return _err(f"cannot write {args.png}: {e}")
    return 0


def _unserved(oracle_meta: dict) -> dict[str, list[str]]:
    """Shipped card id -> what the subject lacks for it: the check `medimageos run` applies before it
    starts (scoring/capabilities.py, used by runner/run.py: expand)."""
    from scoring.capabilities import features, unserved
    from tasks.card import all_cards
    return unserved(all_cards(), features(oracle_meta))


def cmd_import(args) -> int:
    from rendering.subjects import SubjectError
    from rendering.subjects.nifti_io import import_labelmap
    try:
        d = import_labelmap(args.labels, args.map, args.id, force=args.force, min_voxels=args.min_voxels)
    except SubjectError as e:
        return _err(str(e))
    from scoring.capabilities import features, served_report
    from tasks.card import all_cards
    # the check `medimageos run` applies before it starts (runner/run.py: expand), over every shipped card
    meta = json.loads((d / "oracle.json").read_text())
    print(f"imported {d.name}: {d}")
    for line in served_report(all_cards(), features(meta)):
        print(line)
    return 0


def cmd_export(args) -> int:
    from rendering.subjects import SubjectError, load_runtime
    from rendering.subjects.nifti_io import export_nifti
    try:
        out = export_nifti(load_runtime(args.id), args.out)
    except SubjectError as e:
        return _err(str(e))
    print(f"wrote {out}")
    return 0


def add_subjects_parser(subparsers) -> argparse.ArgumentParser:
    """Register `subjects {build,list,show,import,export}` on an argparse subparsers object."""
    p = subparsers.add_parser("subjects", help="digital subjects: build, list, show, import, export")
    sub = p.add_subparsers(dest="subjects_command", required=True)
    b = sub.add_parser("build", help="build and cache subjects (default: dev)")
    b.add_argument("ids", nargs="*", help="subject ids (dev, s01..s30)")
    b.add_argument("--cohort", action="store_true", help="build the 30-subject scoring cohort")
    b.add_argument("--force", action="store_true", help="rebuild even if cached")
    b.set_defaults(fn=cmd_build, func=cmd_build)
    ls = sub.add_parser("list", help="list subjects")
    ls.add_argument("--json", action="store_true")
    ls.set_defaults(fn=cmd_list, func=cmd_list)
    sh = sub.add_parser("show", help="summary of a subject, optionally a montage PNG")
    sh.add_argument("id")
    sh.add_argument("--png", help="write a montage of orthogonal slices with labels and landmarks")
    sh.set_defaults(fn=cmd_show, func=cmd_show)
    im = sub.add_parser("import", help="convert a NIfTI label map into a subject")
    im.add_argument("--labels", required=True, help="label map (.nii / .nii.gz)")
    im.add_argument("--map", default="totalsegmentator", choices=["totalsegmentator", "medimageos"])
    im.add_argument("--id", help="subject id (default: file name)")
    im.add_argument("--force", action="store_true", help="replace an existing imported subject")
    im.add_argument("--min-voxels", type=int, default=10, help="smallest accepted organ (voxels)")
    im.set_defaults(fn=cmd_import, func=cmd_import)
    ex = sub.add_parser("export", help="write a subject's labels to NIfTI (+ .labels.json sidecar)")
    ex.add_argument("id")
    ex.add_argument("--out", required=True)
    ex.set_defaults(fn=cmd_export, func=cmd_export)
    return p


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="medimageos")
    add_subjects_parser(ap.add_subparsers(dest="command", required=True))
    args = ap.parse_args(argv)
    return int(args.fn(args))


if __name__ == "__main__":
    sys.exit(main())
