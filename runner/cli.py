"""The `medimageos` command line."""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path


def _seeds(text: str) -> list[int]:
    out: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if "-" in part[1:]:
            a, b = part.split("-", 1)
            out.extend(range(int(a), int(b) + 1))
        elif part:
            out.append(int(part))
    if not out:
        raise argparse.ArgumentTypeError("no seeds given")
    return out


def _subjects(text: str) -> list[str]:
    if text == "cohort":
        return [f"s{i:02d}" for i in range(1, 31)]
    return [s.strip() for s in text.split(",") if s.strip()]


def cmd_tasks_list(args) -> int:
    """List the task cards (validating every one: an invalid card is an error naming its file)."""
    from tasks.card import all_cards, cards_in

    cards = cards_in(Path(args.root)) if args.root else all_cards()
    if args.json:
        print(json.dumps([{"id": c.id, "modality": c.modality, "level": c.level, "title": c.title,
                           "version": c.version, "max_steps": c.budgets.max_steps} for c in cards], indent=2))
    else:
        print(f"{'id':40s} {'modality':8s} level  steps")
        for c in cards:
            print(f"{c.id:40s} {c.modality:8s} L{c.level}     {c.budgets.max_steps}")
    return 0


def cmd_tasks_publish_media(args) -> int:
    """Copy demo media into the task folders (checked against the shipped cards first)."""
    from runner.demo import publish_media

    for dest in publish_media(Path(args.dir), Path(args.root) if args.root else None):
        print(f"published {dest}")
    return 0


def agent_options(args) -> dict:
    return {"model": getattr(args, "model", None), "base_url": getattr(args, "base_url", None),
            "temperature": getattr(args, "temperature", 0.0), "max_tokens": getattr(args, "max_tokens", None),
            "timeout_s": getattr(args, "timeout", 60.0), "max_retries": getattr(args, "max_retries", 4),
            "history_k": getattr(args, "history_k", 3), "replay_from": getattr(args, "replay_from", None),
            "random_seed": getattr(args, "random_seed", 0), "adapter": getattr(args, "adapter", None),
            "cache_path": str(Path(args.out) / "model_cache.jsonl") if getattr(args, "agent", "") == "api" else None}


def cmd_run(args) -> int:
    import functools

    from runner.agents import make_agent
    from runner.run import expand, run_sequential
    from tasks.card import select_cards

    if getattr(args, "adapter", None) not in (None, "generic") and args.coord_scale != "pixels":
        raise ValueError(f"--coord-scale applies to the generic adapter; {args.adapter} has its own coordinates")
    cards = select_cards(args.tasks)
    subjects = _subjects(args.subjects)
    specs = expand(cards, subjects, args.seeds)
    opts = agent_options(args)
    factory = functools.partial(make_agent, args.agent, **opts)  # picklable: workers may be processes
    name = factory().name
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    workers = max(1, int(getattr(args, "workers", 1) or 1))
    backend = getattr(args, "backend", "local")
    reuse = False if getattr(args, "no_reuse", False) else None  # None: on unless MEDIMAGEOS_CONSOLE_REUSE=0
    common = dict(coord_scale=args.coord_scale, max_invalid_retries=args.max_invalid_retries,
                  episode_timeout_s=args.episode_timeout, reuse=reuse)
    print(f"running {len(specs)} episode(s) with agent {name} -> {out} "
          f"({backend}, {workers} worker(s))", file=sys.stderr)
    if backend == "ray":
        from runner.ray_backend import run_ray

        verdicts = run_ray(specs, factory, out, name, workers=workers, address=args.ray_address, **common)
    elif workers > 1 or args.max_invalid_retries > 0 or args.episode_timeout:
        from runner.parallel import run_parallel

        verdicts = run_parallel(specs, factory, out, name, workers=workers, **common)
    else:
        verdicts = run_sequential(specs, factory, out, name, coord_scale=args.coord_scale, reuse=reuse)
    counts: dict[str, int] = {}
    for v in verdicts:
        counts[v.outcome] = counts.get(v.outcome, 0) + 1
    print(json.dumps({"agent": name, "episodes": len(verdicts), "outcomes": counts, "out": str(out)}))
    return 0


def cmd_console(args) -> int:
    """Open a console on the caller's own display for a person to play."""
    from tasks.card import load_card

    card = load_card(args.task_id)
    if not os.environ.get("DISPLAY"):
        print("medimageos console needs a display (DISPLAY is not set); try: xvfb-run or an X session",
              file=sys.stderr)
        return 2
    cmd = [sys.executable, "-m", f"consoles.{card.modality}", "--task", card.id,
           "--subject", args.subject, "--seed", str(args.seed)]
    return subprocess.call(cmd)


def cmd_bench(args) -> int:
    from runner.bench import main as bench_main

    return bench_main(json_out=args.json, steps=args.steps, resets=args.resets, modalities=args.modality)


def cmd_score(args) -> int:
    from scoring.aggregate import score_command

    scores = score_command(Path(args.dir), out_json=Path(args.out) if args.out else None,
                           oracle_fn=_rescore_fn() if args.rescore else None, baselines=args.baselines)
    from runner.agents.adapters.provenance import add_adapters_section

    add_adapters_section(Path(args.dir), Path(args.out) if args.out else Path(args.dir) / "scores.json", scores)
    print(json.dumps({a: {"score": s["overall"]["score"], "sr": s["overall"]["sr"], "pr": s["overall"]["pr"],
                          "aq": s["overall"]["aq"]} for a, s in scores["agents"].items()}, indent=2))
    return 0


def cmd_agents_list(args) -> int:
    """The agent adapters of --agent api: name, model family, format, coordinates, history."""
    from runner.agents.adapters import list_adapters

    rows = list_adapters()
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    cols = [("name", "adapter"), ("family", "model family"), ("format", "source format"),
            ("coordinates", "coordinates"), ("history", "history")]
    widths = {k: max(len(h), *(len(r[k]) for r in rows)) for k, h in cols}
    print("  ".join(h.ljust(widths[k]) for k, h in cols).rstrip())
    for r in rows:
        print("  ".join(r[k].ljust(widths[k]) for k, _ in cols).rstrip())
    return 0


def _rescore_fn():
    """Re-score with the card each episode ran (its card.json), or the shipped card for older episodes."""
    from runner.episode import CARD_FILE
    from scoring.score import score_episode
    from tasks.card import load_card, load_card_file

    def rescore(state, old, ep_dir):
        ran = Path(ep_dir) / CARD_FILE
        card = load_card_file(ran) if ran.is_file() else load_card(old.task)
        return score_episode(state, card, old.subject, old.termination)

    return rescore


def cmd_report(args) -> int:
    from scoring.report import write_report

    path = write_report(Path(args.dir), baselines=args.baselines)
    print(f"report: {path}")
    return 0


def cmd_demo(args) -> int:
    from runner.demo import main as demo_main

    return demo_main(Path(args.out), tasks=args.tasks, subject=args.subject, seed=args.seed)


def _adapter_choices() -> list[str]:
    from runner.agents.adapters import adapter_names

    return adapter_names()


def build_parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="medimageos", description="MedImageOSWorld: GUI agents on simulated "
                                 "CT, MR and ultrasound acquisition consoles.")
    sub = ap.add_subparsers(dest="command", required=True)

    r = sub.add_parser("run", help="run an agent over tasks x subjects x seeds")
    r.add_argument("--agent", required=True, choices=["reference", "noop", "random", "api", "replay"])
    r.add_argument("--tasks", default="all", help="ids (comma-separated), a modality (ct|mr|us) or all")
    r.add_argument("--subjects", default="dev", type=str, help="ids (comma-separated), dev, or cohort (s01-s30)")
    r.add_argument("--seeds", default=[0], type=_seeds, help="e.g. 0,1,2 or 0-2")
    r.add_argument("--out", default="results")
    r.add_argument("--coord-scale", default="pixels", choices=["pixels", "norm1000"])
    r.add_argument("--model")
    r.add_argument("--base-url", help="the model endpoint (the vendor's own by default for claude-computer* and "
                   "openai-computer*)")
    r.add_argument("--temperature", type=float, default=0.0)
    r.add_argument("--max-tokens", type=int, default=None,
                   help="reply token limit (default 512; 4096 for the vendors' computer-use tools)")
    r.add_argument("--timeout", type=float, default=60.0)
    r.add_argument("--max-retries", type=int, default=4)
    r.add_argument("--history-k", type=int, default=3, help="steps of text history (generic adapter)")
    r.add_argument("--adapter", default=None, choices=_adapter_choices(),
                   help="--agent api: the model family's prompt and action format (default generic; "
                        "see `medimageos agents list`)")
    r.add_argument("--from", dest="replay_from")
    r.add_argument("--random-seed", type=int, default=0)
    r.add_argument("--workers", type=int, default=1, help="episodes at once, each on its own Xvfb display")
    r.add_argument("--no-reuse", action="store_true",
                   help="launch a console per episode instead of resetting a worker's console in place "
                        "(same screenshots, slower; also MEDIMAGEOS_CONSOLE_REUSE=0)")
    r.add_argument("--backend", default="local", choices=["local", "ray"],
                   help="local worker processes, or Ray actors (one display each)")
    r.add_argument("--ray-address", default=None, help="Ray cluster to join (e.g. auto); default: start a local one")
    r.add_argument("--max-invalid-retries", type=int, default=1,
                   help="redo an INVALID (environment fault) episode up to this many times")
    r.add_argument("--episode-timeout", type=float, default=None,
                   help="wall seconds before a hung episode's worker is killed and the episode retried "
                        "(default: 180 + 30 x step budget)")
    r.set_defaults(fn=cmd_run)

    ag = sub.add_parser("agents", help="agent adapters (the model families --agent api speaks to)")
    agsub = ag.add_subparsers(dest="agents_command", required=True)
    agl = agsub.add_parser("list", help="name, model family, source format, coordinates, history")
    agl.add_argument("--json", action="store_true", help="also the vLLM command of each family")
    agl.set_defaults(fn=cmd_agents_list)

    c = sub.add_parser("console", help="open a console on your display and play it by hand")
    c.add_argument("task_id")
    c.add_argument("--subject", default="dev")
    c.add_argument("--seed", type=int, default=0)
    c.set_defaults(fn=cmd_console)

    t = sub.add_parser("tasks", help="task cards")
    tsub = t.add_subparsers(dest="tasks_command", required=True)
    tl = tsub.add_parser("list")
    tl.add_argument("--json", action="store_true")
    tl.add_argument("--root", default=None, help="a tasks folder (<root>/<modality>/<id>/task.json); "
                    "default: the shipped tasks")
    tl.set_defaults(fn=cmd_tasks_list)
    tp = tsub.add_parser("publish-media", help="copy `medimageos demo --out DIR` media into tasks/<modality>/<id>/")
    tp.add_argument("dir", help="the demo's --out folder (or its media/ folder)")
    tp.add_argument("--root", default=None, help="the tasks folder to publish into; default: the shipped tasks")
    tp.set_defaults(fn=cmd_tasks_publish_media)
    from runner.cli_checks import add_parser as add_checks_parser
    from runner.cli_medians import add_parser as add_medians_parser
    from runner.cli_spread import add_parser as add_spread_parser
    from runner.visibility import add_parser as add_visibility_parser

    add_spread_parser(tsub)
    add_medians_parser(tsub)
    add_checks_parser(tsub)
    add_visibility_parser(tsub)

    b = sub.add_parser("bench", help="step overhead and reset time on this machine")
    b.add_argument("--json", action="store_true")
    b.add_argument("--steps", type=int, default=60)
    b.add_argument("--resets", type=int, default=5)
    b.add_argument("--modality", action="append", metavar="ct|mr|us",
                   help="bench only this modality (repeatable; default: every console)")
    b.set_defaults(fn=cmd_bench)

    s = sub.add_parser("score", help="aggregate (or re-score) a results folder")
    s.add_argument("dir")
    s.add_argument("--out")
    s.add_argument("--rescore", action="store_true", help="recompute every verdict from state.json")
    s.add_argument("--baselines", default=None, help="a `medimageos baselines --out` folder to score beside DIR")
    s.set_defaults(fn=cmd_score)

    d = sub.add_parser("demo", help="reference + no-op agents on the development subject; scores, report and "
                       "task media under OUT/media (publish them with `tasks publish-media OUT`)")
    d.add_argument("--out", default="results/demo")
    d.add_argument("--tasks", default="all")
    d.add_argument("--subject", default="dev")
    d.add_argument("--seed", type=int, default=0)
    d.set_defaults(fn=cmd_demo)

    rp = sub.add_parser("report", help="write report.md / report.html for a results folder")
    rp.add_argument("dir")
    rp.add_argument("--baselines", default=None, help="a `medimageos baselines --out` folder shown beside DIR")
    rp.set_defaults(fn=cmd_report)

    from runner.cli_baselines import add_parser as add_baselines_parser
    from runner.cli_compare import add_parser as add_compare_parser

    add_compare_parser(sub)
    add_baselines_parser(sub)
    from runner.doctor import add_doctor_parser

    add_doctor_parser(sub)

    try:
        from runner.cli_subjects import add_subjects_parser

        add_subjects_parser(sub)
    except ImportError:
        pass
    return ap


def _exit_on_sigterm(signum, frame) -> None:
    raise SystemExit(128 + signum)  # run finally/atexit cleanups: displays and consoles go down


def main(argv: list[str] | None = None) -> int:
    import signal

    signal.signal(signal.SIGTERM, _exit_on_sigterm)
    args = build_parser().parse_args(argv)
    try:
        return int(args.fn(args) or 0)
    except KeyboardInterrupt:
        print("interrupted", file=sys.stderr)
        return 130
    except (ValueError, KeyError, FileNotFoundError) as exc:
        print(f"medimageos: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
