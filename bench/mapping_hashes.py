"""Bit-identity check of cardiac mapping image formation: hashes every map and image the mapping cards'
reference runs form (issue 22: the speed-ups must not change one output bit).

    .venv/bin/python bench/mapping_hashes.py [--out hashes.json] [--check hashes.json] [--pairs dev/0,s01/1]

For each mr_t1t2_mapping_* card and (subject, seed) pair, runs runner.headless.run_reference and hashes:
every acquire_t1_map / acquire_t2_map result (sources, map, fit mask, off-resonance, meta; the oracle's
re-formed maps included), every series pixel array the model holds at the end, the final state JSON and
the verdict. --check compares with a file written by --out and exits 1 on any difference.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402

CARDS = ("mr_t1t2_mapping_staged", "mr_t1t2_mapping_parameters", "mr_t1t2_mapping_from_empty",
         "mr_t1t2_mapping_geometry_staged", "mr_t1t2_mapping_from_boot")
PAIRS = (("dev", 0), ("s01", 1), ("s07", 2), ("s14", 1))


def _h(*arrays: Any) -> str:
    d = hashlib.blake2b(digest_size=12)
    for a in arrays:
        if isinstance(a, np.ndarray):
            d.update(str((a.dtype.str, a.shape)).encode())
            d.update(np.ascontiguousarray(a).tobytes())
        else:
            d.update(json.dumps(a, sort_keys=True, default=str).encode())
    return d.hexdigest()


def _map_hash(res: Any) -> str:
    return _h(*[im.pixels for im in res.sources], res.times_ms, res.map_ms, res.fit_ok, res.offresonance_hz,
              res.meta, float(res.noise_sigma))


def run(cards: tuple[str, ...], pairs: tuple[tuple[str, int], ...]) -> dict[str, Any]:
    from rendering import mr_mapping as mm
    from runner.headless import drive, run_reference, shortcut
    from tasks.card import all_cards

    by_id = {c.id: c for c in all_cards()}
    maps: list[str] = []
    models: list[Any] = []
    orig = {n: getattr(mm, n) for n in ("acquire_t1_map", "acquire_t2_map")}

    def wrap(fn):
        def w(*a, **k):
            res = fn(*a, **k)
            maps.append(_map_hash(res))
            return res
        return w

    for n, fn in orig.items():
        setattr(mm, n, wrap(fn))
    orig_make = drive.make_model

    def make_model(*a, **k):
        m = orig_make(*a, **k)
        models.append(m)
        return m

    drive.make_model = shortcut.make_model = make_model
    def series_hashes() -> list[str]:
        hs = []
        for m in models:
            for s in m.series:
                hs.append(_h(*[im.pixels for im in s.data.images]))
                res = getattr(s.data, "result", None)
                if res is not None:
                    hs.append(_map_hash(res))
            hs.append(_h(m.state()))
        return hs

    out: dict[str, Any] = {}
    try:
        for cid in cards:
            dev_ops = None
            for subj, seed in pairs:
                maps.clear()
                models.clear()
                run_ = run_reference(by_id[cid], subj, seed)
                dev_ops = run_.ops if dev_ops is None else dev_ops  # the first pair's script is replayed
                verdict = shortcut.replay(by_id[cid], subj, seed, dev_ops)  # the fixed script's other paths
                series = series_hashes()
                out[f"{cid} {subj}/{seed}"] = {
                    "maps": maps[:], "series": series, "state": _h(run_.state),
                    "verdict": _h(run_.verdict.outcome, str(run_.verdict.reason), verdict.outcome,
                                  str(verdict.reason))}
                print(f"{cid} {subj}/{seed}: {len(maps)} maps, {len(series)} series, {run_.verdict.outcome}"
                      f" / replay {verdict.outcome}", flush=True)
    finally:
        for n, fn in orig.items():
            setattr(mm, n, fn)
        drive.make_model = shortcut.make_model = orig_make
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--out")
    ap.add_argument("--check")
    ap.add_argument("--cards", default=",".join(CARDS))
    ap.add_argument("--pairs", default=",".join(f"{s}/{k}" for s, k in PAIRS))
    args = ap.parse_args(argv)
    pairs = tuple((p.split("/")[0], int(p.split("/")[1])) for p in args.pairs.split(","))
    got = run(tuple(args.cards.split(",")), pairs)
    if args.out:
        Path(args.out).write_text(json.dumps(got, indent=1, sort_keys=True))
    if args.check:
        want = json.loads(Path(args.check).read_text())
        bad = [k for k in got if got[k] != want.get(k)]
        print("IDENTICAL" if not bad else f"DIFFERENT: {bad}")
        return 1 if bad else 0
    return 0


if __name__ == "__main__":
    sys.exit(main())
