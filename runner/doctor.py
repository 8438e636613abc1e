"""`medimageos doctor`: does this machine reproduce the official observations bit for bit?

1. Install: Xvfb found and starts, pinned fonts present with the expected sha256, Python packages at
   the versions of requirements.lock, GL renders (the console reports its GL strings).
2. A few short reference episodes, whose screenshots are compared with golden hashes
   (runner/golden/doctor.json): per image the sha256 of the PNG file and of its decoded RGB pixels.
   Pixels equal but PNG bytes different -> the PNG encoder (imagecodecs/zlib-ng) differs; pixels different ->
   rendering (Qt/VTK/GL/fonts/Xvfb). The fingerprint fields that differ from the golden machine's
   are named.
3. A plain verdict; exit code 0 when the observations are reproduced and the install checks pass.

`medimageos doctor --write-golden` regenerates the golden file (for maintainers, after a change of
the consoles' look or of the pinned environment). The comparison (`compare`) is pure.
"""
from __future__ import annotations

import hashlib
import json
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from runner.fingerprint import component, differing_fields
from scoring.aggregate import episode_environment

GOLDEN_PATH = Path(__file__).resolve().parent / "golden" / "doctor.json"
DEFAULT_LOCK = Path(__file__).resolve().parent.parent / "requirements.lock"
GOLDEN_SCHEMA = 1
# Short reference episodes (about 10 s together) that cover the widgets, scout and axial rendering.
EPISODES = (("ct_ui_smoke_routine", "dev", 0), ("ct_kub_low_dose_constraint", "dev", 0))
AGENT = "reference"
REPRODUCED = "this machine reproduces the official observations bit for bit"
COMPONENT_NAMES = {
    "rendering": "rendering (Qt/VTK/GL/fonts/Xvfb)",
    "encoder": "the PNG encoder (imagecodecs/zlib-ng)",
    "capture": "screen capture (mss)",
}


@dataclass
class Finding:
    """One line of the doctor's report."""

    level: str  # "ok", "warn" or "fail"
    topic: str
    message: str

    def __str__(self) -> str:
        return f"  {self.level:5s} {self.topic}: {self.message}"


@dataclass
class Diagnosis:
    """The outcome of comparing observed episodes with the golden ones."""

    findings: list[Finding] = field(default_factory=list)
    causes: set[str] = field(default_factory=set)  # "rendering", "encoder", "behaviour", "missing"
    fingerprint_diff: dict[str, tuple[Any, Any]] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return not self.causes


# --------------------------------------------------------------------------- hashing

def sha256_bytes(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


def image_hashes(png_path: Path) -> dict[str, str]:
    """{"png": sha256 of the file, "rgb": sha256 of its decoded 8-bit RGB pixels, row-major}."""
    from PIL import Image

    data = Path(png_path).read_bytes()
    with Image.open(png_path) as im:
        rgb = im.convert("RGB").tobytes()
    return {"png": sha256_bytes(data), "rgb": sha256_bytes(rgb)}


def episode_record(ep_dir: Path) -> dict[str, Any]:
    """What the golden file keeps of one episode: verdict summary and the hashes of every screenshot."""
    verdict = json.loads((ep_dir / "verdict.json").read_text())
    images = sorted(p.name for p in ep_dir.glob("step_*.png"))
    if (ep_dir / "final.png").exists():
        images.append("final.png")
    return {
        "task": verdict["task"], "task_version": verdict["task_version"], "subject": verdict["subject"],
        "seed": verdict["seed"], "outcome": verdict["outcome"], "steps": verdict["steps"],
        "reason": verdict.get("reason", "") if verdict["outcome"] == "INVALID" else "",
        "images": {name: image_hashes(ep_dir / name) for name in images},
    }


# --------------------------------------------------------------------------- comparison (pure)

def _describe_diff(diff: dict[str, tuple[Any, Any]], wanted: tuple[str, ...]) -> str:
    parts = [f"{k} {a!r} -> {b!r}" for k, (a, b) in diff.items() if component(k) in wanted]
    return "; ".join(parts)


def _screen_order(name: str) -> tuple[bool, str]:
    return name == "final.png", name  # step_000.png ... step_NNN.png, then final.png


def compare(golden: dict[str, Any], observed: dict[str, Any]) -> Diagnosis:
    """Golden vs observed {"fingerprint": ..., "episodes": {key: episode_record}} -> diagnosis.

    Per episode: images whose pixels differ point at rendering, images whose pixels agree but whose
    PNG bytes do not point at the encoder; a different outcome or image list is a behaviour
    difference (which follows from the pixels the reference solver saw, or from changed code).
    """
    diag = Diagnosis()
    diag.fingerprint_diff = differing_fields(golden.get("fingerprint") or {}, observed.get("fingerprint") or {})
    pixel_images = png_images = total = 0
    first_pixel = first_png = ""
    for key, want in (golden.get("episodes") or {}).items():
        got = (observed.get("episodes") or {}).get(key)
        if got is None:
            diag.causes.add("missing")
            diag.findings.append(Finding("fail", f"episode {key}", "did not run"))
            continue
        problems: list[str] = []
        if got.get("task_version") != want.get("task_version"):
            problems.append(f"task card version {want.get('task_version')} in the golden file, "
                            f"{got.get('task_version')} here (the golden file is stale)")
            diag.causes.add("behaviour")
        if got.get("outcome") != want.get("outcome"):
            why = f" ({got['reason']})" if got.get("reason") else ""
            problems.append(f"outcome {got.get('outcome')}{why}, golden {want.get('outcome')}")
            diag.causes.add("behaviour")
        gi, oi = want.get("images") or {}, got.get("images") or {}
        if set(gi) != set(oi):
            problems.append(f"{len(oi)} screenshots, golden {len(gi)}")
            diag.causes.add("behaviour")
        common = sorted((n for n in gi if n in oi), key=_screen_order)
        pix = [n for n in common if gi[n]["rgb"] != oi[n]["rgb"]]
        png = [n for n in common if gi[n]["rgb"] == oi[n]["rgb"] and gi[n]["png"] != oi[n]["png"]]
        total += len(gi)
        if pix:
            diag.causes.add("rendering")
            pixel_images += len(pix)
            first_pixel = first_pixel or f"{key}/{pix[0]}"
            problems.append(f"pixels differ in {len(pix)} of {len(gi)} screenshots (first: {pix[0]})")
        if png:
            diag.causes.add("encoder")
            png_images += len(png)
            first_png = first_png or f"{key}/{png[0]}"
            problems.append(f"PNG bytes differ with identical pixels in {len(png)} of {len(gi)} screenshots")
        if problems:
            diag.findings.append(Finding("fail", f"episode {key}", "; ".join(problems)))
        else:
            diag.findings.append(Finding("ok", f"episode {key}",
                                         f"{len(gi)} screenshots identical ({got.get('outcome')})"))
    if "rendering" in diag.causes:
        named = _describe_diff(diag.fingerprint_diff, ("rendering", "capture"))
        diag.findings.append(Finding(
            "fail", "rendering",
            f"pixels differ ({pixel_images} of {total} screenshots, first {first_pixel}): "
            f"{COMPONENT_NAMES['rendering']} or capture differs from the golden machine; "
            + (f"fingerprint fields that differ: {named}" if named else
               "no recorded version differs, so an unrecorded one does (a system library such as "
               "freetype or fontconfig), or the console code changed since the golden file was written")))
    if "encoder" in diag.causes:
        named = _describe_diff(diag.fingerprint_diff, ("encoder",))
        diag.findings.append(Finding(
            "fail", "encoder",
            f"identical pixels but different PNG bytes ({png_images} screenshots, first {first_png}): "
            f"{COMPONENT_NAMES['encoder']} differs; "
            + (f"fingerprint fields that differ: {named}" if named else "no recorded encoder version differs")))
    if diag.fingerprint_diff and diag.ok:
        diag.findings.append(Finding(
            "warn", "fingerprint",
            "differs from the golden machine's but the observations are identical: "
            + _describe_diff(diag.fingerprint_diff, ("rendering", "capture", "encoder", "other"))))
    return diag


def verdict_text(diag: Diagnosis, install_failed: list[Finding]) -> str:
    if diag.ok and not install_failed:
        return REPRODUCED
    what = []
    if "rendering" in diag.causes:
        what.append("the screenshots' pixels differ: " + COMPONENT_NAMES["rendering"])
    if "encoder" in diag.causes:
        what.append("the PNG bytes differ with identical pixels: " + COMPONENT_NAMES["encoder"])
    if "behaviour" in diag.causes:
        what.append("the reference episodes went differently (outcome, steps or task version)")
    if "missing" in diag.causes:
        what.append("some reference episodes did not run")
    what.extend(f"{f.topic}: {f.message}" for f in install_failed)
    return "this machine does NOT reproduce the official observations: " + "; ".join(what)


# --------------------------------------------------------------------------- install checks

def check_fonts(golden: dict[str, Any] | None) -> Finding:
    fonts = ((golden or {}).get("fingerprint") or {}).get("fonts") or {}
    if not fonts:
        return Finding("warn", "fonts", "the golden file lists no pinned fonts")
    bad = []
    for path, want in sorted(fonts.items()):
        p = Path(path)
        if not p.is_file():
            bad.append(f"{path} missing")
        elif (have := sha256_bytes(p.read_bytes())) != want:
            bad.append(f"{path} has sha256 {have[:16]}..., expected {want[:16]}...")
    if bad:
        return Finding("fail", "fonts", "; ".join(bad) + " (scripts/bootstrap.sh installs fonts-dejavu-core)")
    return Finding("ok", "fonts", f"{len(fonts)} pinned font files present with the expected sha256")


def check_lock(lock_path: Path) -> Finding:
    from runner.lockfile import installed_mismatches, read_lock

    if not Path(lock_path).is_file():
        return Finding("warn", "packages", f"no lock file at {lock_path}; package versions not checked")
    try:
        lock = read_lock(lock_path)
    except (OSError, ValueError) as exc:
        return Finding("warn", "packages", f"cannot read {lock_path}: {exc}")
    bad = installed_mismatches(lock)
    if bad:
        shown = ", ".join(f"{n} {have or 'missing'} (lock {want})" for n, want, have in bad[:8])
        more = f" and {len(bad) - 8} more" if len(bad) > 8 else ""
        return Finding("warn", "packages", f"{len(bad)} of {len(lock)} packages differ from {lock_path.name}: "
                                           f"{shown}{more}")
    return Finding("ok", "packages", f"{len(lock)} packages installed at the versions of {lock_path.name}")


def check_gl(fingerprint: dict[str, Any] | None) -> Finding:
    fp = fingerprint or {}
    renderer = fp.get("gl_renderer")
    if not renderer or str(renderer).startswith("unavailable"):
        return Finding("fail", "GL", "the console reported no GL strings (did it start and render?)")
    return Finding("ok", "GL", f"{fp.get('gl_vendor')}, {renderer}, {fp.get('gl_version')}")


# --------------------------------------------------------------------------- running

def run_reference_episodes(out_root: Path, display) -> dict[str, Any]:
    """Run the doctor's episodes into `out_root`; {"fingerprint", "episodes"} as in the golden file."""
    from runner.agents.reference import ReferenceAgent
    from runner.episode import EpisodeSpec, run_episode
    from runner.results import episode_dir
    from tasks.card import load_card

    episodes: dict[str, Any] = {}
    fingerprint: dict[str, Any] | None = None
    for task, subject, seed in EPISODES:
        card = load_card(task)
        ep_dir = episode_dir(out_root, AGENT, task, subject, seed)
        shutil.rmtree(ep_dir, ignore_errors=True)  # a kept folder from an earlier run is not reused
        run_episode(EpisodeSpec(card, subject, seed), ReferenceAgent(), out_root, display)
        episodes[f"{AGENT}/{task}/{subject}/seed{seed}"] = episode_record(ep_dir)
        fingerprint = fingerprint or episode_environment(ep_dir)
    return {"fingerprint": fingerprint or {}, "episodes": episodes}


def _git_revision() -> dict[str, Any] | None:
    root = Path(__file__).resolve().parent.parent
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=10)
        dirty = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                               capture_output=True, text=True, timeout=10)
    except (OSError, subprocess.SubprocessError):
        return None
    if head.returncode != 0:
        return None
    return {"commit": head.stdout.strip(), "dirty": bool(dirty.stdout.strip())}


def load_golden(path: Path) -> dict[str, Any] | None:
    try:
        return json.loads(Path(path).read_text())
    except (OSError, ValueError):
        return None


def format_fingerprint(fp: dict[str, Any]) -> list[str]:
    lines = []
    for key in sorted(fp):
        if isinstance(fp[key], dict):
            for sub in sorted(fp[key]):
                lines.append(f"  {key} {sub}: {fp[key][sub]}")
        else:
            lines.append(f"  {key}: {fp[key]}")
    return lines


def run_doctor(golden_path: Path = GOLDEN_PATH, lock_path: Path = DEFAULT_LOCK, keep: Path | None = None,
               write_golden: bool = False, out=sys.stdout) -> int:
    """Check this machine (or, with `write_golden`, record it as the golden one). Returns the exit code."""
    from runner.display import DisplayError, VirtualDisplay
    from runner.fingerprint import xvfb_version

    def say(line: str = "") -> None:
        print(line, file=out, flush=True)

    t0 = time.monotonic()
    golden = None if write_golden else load_golden(golden_path)
    say("medimageos doctor")
    install: list[Finding] = []
    if golden is None and not write_golden:
        install.append(Finding("fail", "golden", f"no readable golden file at {golden_path}"))
    if not write_golden:
        install.append(check_fonts(golden))
    install.append(check_lock(lock_path))
    try:
        display = VirtualDisplay(1280, 800).start()
    except DisplayError as exc:
        install.append(Finding("fail", "Xvfb", str(exc)))
        for f in install:
            say(str(f))
        say(f"verdict: {verdict_text(Diagnosis(), [f for f in install if f.level == 'fail'])}")
        return 1
    tmp = None
    try:
        install.append(Finding("ok", "Xvfb", f"{xvfb_version(display.name)} starts"))
        if keep is None:
            tmp = tempfile.TemporaryDirectory(prefix="medimageos-doctor-")
            root = Path(tmp.name)
        else:
            root = Path(keep)
            root.mkdir(parents=True, exist_ok=True)
        observed = run_reference_episodes(root, display)
    finally:
        display.stop()
    install.append(check_gl(observed["fingerprint"]))
    for f in install:
        say(str(f))
    try:
        if write_golden:
            bad = [f for f in install if f.level == "fail"]
            invalid = [k for k, e in observed["episodes"].items() if e["outcome"] != "PASS"]
            if bad or invalid:
                say(f"not writing {golden_path}: " + "; ".join([str(f).strip() for f in bad] +
                                                              [f"{k} did not PASS" for k in invalid]))
                return 1
            data = {"schema": GOLDEN_SCHEMA, "written_by": "medimageos doctor --write-golden",
                    "source": _git_revision(), **observed}
            golden_path.parent.mkdir(parents=True, exist_ok=True)
            golden_path.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
            n = sum(len(e["images"]) for e in observed["episodes"].values())
            say(f"wrote {golden_path}: {len(observed['episodes'])} episodes, {n} screenshots")
            say("fingerprint of this machine:")
            for line in format_fingerprint(observed["fingerprint"]):
                say(line)
            return 0
        diag = compare(golden or {}, observed)
        for f in diag.findings:
            say(str(f))
        say("fingerprint of this machine:")
        for line in format_fingerprint(observed["fingerprint"]):
            say(line)
        if keep is not None:
            say(f"episodes kept in {root}")
        say(f"doctor took {time.monotonic() - t0:.1f} s")
        failed = [f for f in install if f.level == "fail"]
        say(f"verdict: {verdict_text(diag, failed)}")
        return 0 if diag.ok and not failed else 1
    finally:
        if tmp is not None:
            tmp.cleanup()


def add_doctor_parser(sub) -> None:
    """Register `medimageos doctor` on the CLI's subparsers."""
    p = sub.add_parser("doctor", help="check that this machine reproduces the official observations bit for bit")
    p.add_argument("--write-golden", action="store_true",
                   help=f"(maintainers) record this machine's observations as the golden ones in {GOLDEN_PATH.name}")
    p.add_argument("--golden", type=Path, default=GOLDEN_PATH, help="golden file (default: the packaged one)")
    p.add_argument("--lock", type=Path, default=DEFAULT_LOCK, help="requirements lock to check packages against")
    p.add_argument("--keep", type=Path, default=None, help="keep the reference episodes in this folder")
    p.set_defaults(fn=lambda args: run_doctor(args.golden, args.lock, args.keep, args.write_golden))

