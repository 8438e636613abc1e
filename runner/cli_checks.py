"""`medimageos tasks checks`: per card, its goal and every threshold its oracle checks, read from the task
registry (scoring/checks.py), with the stated thresholds the goal does not state (issue 32).

Prints the table as markdown (the docs page docs/goal-checks.md, which `--write` rewrites and `--check`
compares) or as JSON.
"""
from __future__ import annotations

import sys
from pathlib import Path

DOCS_PAGE = Path(__file__).resolve().parents[1] / "docs" / "goal-checks.md"


def render(fmt: str = "markdown", tasks: str = "all") -> str:
    """The table of the selected cards, as markdown or JSON text."""
    from scoring.checks import table, to_json, to_markdown
    from tasks.card import select_cards

    rows = table(select_cards(tasks))
    return to_json(rows) + "\n" if fmt == "json" else to_markdown(rows)


def cmd_tasks_checks(args) -> int:
    """Print the goal/check table; --write the docs page; --check exit 1 when the page is stale."""
    text = render("json" if args.json else "markdown", args.tasks)
    if args.write or args.check:
        if args.json or args.tasks != "all":
            print("--write and --check compare the whole markdown table: drop --json and --tasks", file=sys.stderr)
            return 2
        if args.check:
            stale = not DOCS_PAGE.exists() or DOCS_PAGE.read_text(encoding="utf-8") != text
            if stale:
                print(f"{DOCS_PAGE} is out of date: run `medimageos tasks checks --write`", file=sys.stderr)
            return 1 if stale else 0
        DOCS_PAGE.write_text(text, encoding="utf-8")
        print(f"wrote {DOCS_PAGE}")
        return 0
    sys.stdout.write(text)
    return 0


def add_parser(tsub) -> None:
    """Register `tasks checks` under the `tasks` command."""
    sp = tsub.add_parser("checks", help="per card, its goal and every threshold its oracle checks (stated in the "
                         "goal or a measurement tolerance), from the task registry")
    sp.add_argument("--tasks", default="all")
    fmt = sp.add_mutually_exclusive_group()
    fmt.add_argument("--json", action="store_true", help="print JSON")
    fmt.add_argument("--markdown", action="store_true", help="print markdown (the default)")
    mode = sp.add_mutually_exclusive_group()
    mode.add_argument("--write", action="store_true", help=f"write the markdown table to docs/{DOCS_PAGE.name}")
    mode.add_argument("--check", action="store_true", help=f"exit 1 when docs/{DOCS_PAGE.name} differs from it")
    sp.set_defaults(fn=cmd_tasks_checks)
