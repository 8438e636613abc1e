"""`make image-test`: does the container image reproduce the official observations bit for bit?

1. `medimageos doctor` inside the image: its reference episodes' screenshots against the golden hashes in
   runner/golden/doctor.json (pixels and PNG bytes), the pinned fonts, the lock, Xvfb and GL.
2. The reference solver on a fixed small set of cards, one per modality (CT, MR, US; subject dev, seed 0),
   once inside the image (its own Xvfb, headless) and once on this machine's .venv; per episode the
   verdicts (every field but wall time) and every screenshot's sha256 (file and decoded pixels) must be
   equal. The host is the comparison because the golden file covers only the doctor's two CT episodes;
   run `medimageos doctor` on the host too, so that "equal to the host" means "equal to the golden machine".

Run with the host's .venv python from the repository root:
    .venv/bin/python docker/image_test.py --engine "podman --runtime runc --cgroup-manager cgroupfs"
Exit code 0 only when everything is equal; a difference names the episode, the field or the first
screenshot that differs and whether pixels or only PNG bytes differ (rendering vs encoder).
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from runner.doctor import episode_record  # noqa: E402  (after the path set-up above)

CARDS = ("ct_ui_smoke_routine", "mr_select_sequence_v1", "us_kidney_preset_acquire_save_v1")
SUBJECT, SEED, AGENT = "dev", 0, "reference"
# Wall time is the only verdict field that is allowed to differ between two machines.
UNCOMPARED_VERDICT_FIELDS = {"wall_seconds"}
RUN_ARGS = ["--agent", AGENT, "--tasks", ",".join(CARDS), "--subjects", SUBJECT, "--seeds", str(SEED),
            "--workers", "1"]


def engine_run(engine: list[str], image: str, args: list[str], mounts: dict[Path, str] | None = None,
               entrypoint: str | None = None, timeout: float = 900) -> subprocess.CompletedProcess:
    """`ENGINE run --rm` with host networking (podman on this kind of machine cannot set up its own)."""
    cmd = [*engine, "run", "--rm", "--network", "host", "--shm-size", "1g"]
    for host, inside in (mounts or {}).items():
        cmd += ["-v", f"{host}:{inside}"]
    if entrypoint:
        cmd += ["--entrypoint", entrypoint]
    cmd += [image, *args]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)


def verdict_fields(ep_dir: Path) -> dict[str, Any]:
    verdict = json.loads((ep_dir / "verdict.json").read_text())
    return {k: v for k, v in verdict.items() if k not in UNCOMPARED_VERDICT_FIELDS}


def compare_runs(host_root: Path, image_root: Path) -> list[str]:
    """Differences between the two runs' episodes, one line each (empty: identical)."""
    problems = []
    for card in CARDS:
        rel = Path(AGENT) / card / SUBJECT / f"seed{SEED}"
        h, c = host_root / rel, image_root / rel
        if not (c / "verdict.json").is_file():
            problems.append(f"{rel}: no verdict.json from the container")
            continue
        if not (h / "verdict.json").is_file():
            problems.append(f"{rel}: no verdict.json from the host run")
            continue
        hv, cv = verdict_fields(h), verdict_fields(c)
        for k in sorted(set(hv) | set(cv)):
            if hv.get(k) != cv.get(k):
                problems.append(f"{rel}: verdict field {k!r}: host {hv.get(k)!r}, container {cv.get(k)!r}")
        hr, cr = episode_record(h)["images"], episode_record(c)["images"]
        if set(hr) != set(cr):
            problems.append(f"{rel}: {len(cr)} screenshots in the container, {len(hr)} on the host")
        pix = [n for n in sorted(hr) if n in cr and hr[n]["rgb"] != cr[n]["rgb"]]
        png = [n for n in sorted(hr) if n in cr and hr[n]["rgb"] == cr[n]["rgb"] and hr[n]["png"] != cr[n]["png"]]
        if pix:
            problems.append(f"{rel}: pixels differ in {len(pix)} of {len(hr)} screenshots (first {pix[0]}): "
                            "rendering (Qt/VTK/Mesa/fonts/Xvfb) differs")
        if png:
            problems.append(f"{rel}: identical pixels but different PNG bytes in {len(png)} screenshots "
                            f"(first {png[0]}): the PNG encoder differs")
        if not (pix or png or set(hr) != set(cr)):
            print(f"  ok    {rel}: {cv.get('outcome')}, {len(hr)} screenshots identical (pixels and PNG bytes)")
    return problems


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--engine", default=os.environ.get("MEDIMAGEOS_CONTAINER_ENGINE", ""),
                    help='container engine command, e.g. "docker" or "podman --runtime runc --cgroup-manager cgroupfs"')
    ap.add_argument("--image", default="medimageosworld")
    ap.add_argument("--keep", type=Path, default=None, help="keep both runs' episode folders here")
    args = ap.parse_args(argv)
    engine = shlex.split(args.engine)
    if not engine or not shutil.which(engine[0]):
        print(f"image-test: no container engine ({args.engine!r}); install docker, or podman and runc",
              file=sys.stderr)
        return 2
    if subprocess.run([*engine, "image", "inspect", args.image], capture_output=True).returncode != 0:
        print(f"image-test: image {args.image!r} not found; build it with `make image`", file=sys.stderr)
        return 2

    failed = False
    print(f"image-test: {args.image} with {engine[0]}")
    t0 = time.monotonic()
    doctor = engine_run(engine, args.image, ["doctor"], entrypoint="/app/.venv/bin/medimageos")
    print(f"[doctor in the image, {time.monotonic() - t0:.0f} s, exit {doctor.returncode}]")
    print(doctor.stdout.rstrip())
    if doctor.returncode != 0:
        failed = True
        print(doctor.stderr.rstrip()[-3000:], file=sys.stderr)

    work = Path(tempfile.mkdtemp(prefix="medimageos-image-test-", dir=args.keep))
    try:
        host_root, image_root = work / "host", work / "image"
        host_root.mkdir()
        image_root.mkdir()
        os.chmod(image_root, 0o777)  # the image runs as a non-root user (uid 1000)
        t0 = time.monotonic()
        inside = engine_run(engine, args.image, RUN_ARGS, mounts={image_root: "/app/results"})
        print(f"[reference on {', '.join(CARDS)} in the image, {time.monotonic() - t0:.0f} s, "
              f"exit {inside.returncode}]")
        if inside.returncode != 0:
            failed = True
            print((inside.stdout + inside.stderr).rstrip()[-3000:], file=sys.stderr)
        t0 = time.monotonic()
        host = subprocess.run([str(ROOT / ".venv" / "bin" / "medimageos"), "run", *RUN_ARGS,
                               "--out", str(host_root)], capture_output=True, text=True, timeout=900, cwd=ROOT)
        print(f"[the same on this machine's .venv, {time.monotonic() - t0:.0f} s, exit {host.returncode}]")
        if host.returncode != 0:
            failed = True
            print((host.stdout + host.stderr).rstrip()[-3000:], file=sys.stderr)
        problems = compare_runs(host_root, image_root)
        for p in problems:
            print(f"  FAIL  {p}")
        failed = failed or bool(problems)
    finally:
        if args.keep is None:
            shutil.rmtree(work, ignore_errors=True)
        else:
            print(f"episodes kept in {work}")
    print("image-test: " + ("FAILED" if failed else
                            "PASSED: doctor reproduces the golden hashes and the reference episodes equal the host's"))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
