"""Issue 32: every goal states the numbers its oracle checks; the generated goal/check table stays current.

- The goal reader (scoring/goal_numbers.py) on its own: it finds a threshold in its usual unit forms and
  fails on a goal that lacks it.
- Per card: every "stated" check of its registry entry (scoring/registry/*: ``checks()``) has its number in
  the card's goal. Cards whose goals do not state them yet are listed in GOAL_NUMBERS_MISSING below and run as
  strict xfails: when a goal rewrite states them, the xfail passes, the test fails, and the card leaves the list.
- docs/goal-checks.md is the output of `medimageos tasks checks`.
"""
from __future__ import annotations

import json

import pytest

from runner.cli import main
from runner.cli_checks import DOCS_PAGE, render
from scoring.checks import STATED, TOLERANCE, Check, card_checks
from scoring.goal_numbers import goal_states, quantities
from scoring.registry import entry_for_card
from tasks.card import all_cards

CARDS = sorted(all_cards(), key=lambda c: c.id)

# Cards whose goal does not state every "stated" check yet (main 338330c, 2026-12-07), with the checks missing.
# Empty it as the goal rewrites of issue 32 are merged: a card that now states them XPASSes, which fails.
GOAL_NUMBERS_MISSING: dict[str, tuple[str, ...]] = {
}


def _stated(value, unit: str, **kw) -> Check:
    return Check("x", value, unit, STATED, "a check", **kw)


# ---- the goal reader on its own --------------------------------------------------------------------------
@pytest.mark.parametrize("goal, check", [
    ("no more than 2 cm beyond them", _stated(20.0, "mm")),
    ("no more than 20 mm beyond them", _stated(20.0, "mm")),
    ("within 15 deg of it", _stated(15.0, "deg")),
    ("within 15 degrees of it", _stated(15.0, "deg")),
    ("within 15° of it", _stated(15.0, "deg")),
    ("at least 250 HU in the aorta", _stated(250.0, "HU")),
    ("within 15 s of the end", _stated(15.0, "s")),
    ("within 15 seconds of the end", _stated(15.0, "s")),
    ("at most 8 times the heart's volume", _stated(8.0, "x")),
    ("at most eight times the heart's volume", _stated(8.0, "x")),
    ("at most 8x the heart's volume", _stated(8.0, "x")),
    ("within 5 % of the true value", _stated(5.0, "%")),
    ("a mean grey level of 70-150", _stated((70.0, 150.0), "")),
    ("a mean grey level between 70 and 150", _stated((70.0, 150.0), "")),
    ("0.5 to 4 cm of tissue under it", _stated((5.0, 40.0), "mm")),
    ("at least 5 mm and at most 40 mm under it", _stated((5.0, 40.0), "mm")),
    ("slices 6-8 mm thick", _stated((6.0, 8.0), "mm")),
    ("set the frequency to 5.0 MHz", _stated(5.0, "MHz")),
    ("set the trigger to ECG", _stated("ECG", "")),
    ("rename it to 4ch", _stated("4ch", "")),
    ("between the basal and apical thirds", _stated((33.3, 66.7), "%", said_as=("basal and apical thirds",))),
])
def test_goal_reader_finds_a_stated_threshold(goal: str, check: Check) -> None:
    assert goal_states(goal, check), (goal, check.threshold)


@pytest.mark.parametrize("goal, check", [
    ("cover the lungs completely", _stated(20.0, "mm")),  # no number at all
    ("no more than 3 cm beyond them", _stated(20.0, "mm")),  # another number
    ("no more than 20 HU of noise", _stated(20.0, "mm")),  # the number in another unit
    ("within 15 mm of the plane", _stated(15.0, "deg")),
    ("a 20-chamber view", _stated(20.0, "mm")),  # a number that is not a length
    ("a grey level of 70-140", _stated((70.0, 150.0), "")),  # one end differs
    ("the 2 cm and 4 cm marks", _stated((5.0, 40.0), "mm")),
    ("set the trigger to pulse", _stated("ECG", "")),
    ("the 4chamber row", _stated("4ch", "")),  # a word inside another word
    ("on a T1 map", _stated(1.0, "")),  # a digit inside a name
    ("they tend to move", _stated(10.0, "")),  # a number word inside another word
    ("at mid-ventricular level", _stated((33.3, 66.7), "%", said_as=("basal and apical thirds",))),
])
def test_goal_reader_fails_a_goal_without_the_threshold(goal: str, check: Check) -> None:
    assert not goal_states(goal, check), (goal, check.threshold)


def test_goal_reader_converts_units_and_reads_ranges() -> None:
    q = quantities("2 cm, 0.5 to 4 cm, 15°, between 70 and 150, 1.5 min")
    assert [(x.lo, x.hi, x.unit) for x in q] == [(20.0, 20.0, "mm"), (5.0, 40.0, "mm"), (15.0, 15.0, "deg"),
                                                  (70.0, 150.0, None), (90.0, 90.0, "s")]


def test_goal_reader_refuses_a_unit_it_cannot_convert() -> None:
    with pytest.raises(ValueError, match="furlong"):
        goal_states("10 furlongs", _stated(10.0, "furlong"))


def test_check_refuses_a_bad_kind_or_range() -> None:
    with pytest.raises(ValueError, match="kind"):
        Check("x", 1.0, "mm", "hidden", "a check")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="range"):
        Check("x", (40.0, 5.0), "mm", STATED, "a check")


# ---- the registry's checks ------------------------------------------------------------------------------
@pytest.mark.parametrize("card", CARDS, ids=lambda c: c.id)
def test_registry_checks_are_well_formed(card) -> None:
    """Names unique per card, a kind and a phrase each, and every unit one the goal reader converts."""
    checks = entry_for_card(card).checks()
    names = [c.name for c in checks]
    assert len(names) == len(set(names)), names
    for c in checks:
        assert c.kind in (STATED, TOLERANCE) and c.phrase
        goal_states(card.goal, c)  # raises on a unit the reader does not know


def test_a_changed_threshold_field_changes_the_table() -> None:
    """The table is built from the entry's fields: another excess bound is another stated number."""
    from dataclasses import replace

    from scoring.registry.ct import REGISTRY

    task = REGISTRY["ct_renal_bilateral_coverage"]
    excess = {c.name: c.value for c in replace(task, excess_mm=25.0).checks()}["excess_per_end"]
    assert excess == 25.0 != {c.name: c.value for c in task.checks()}["excess_per_end"]


def test_the_known_missing_list_names_real_cards_and_checks() -> None:
    by_id = {c.id: c for c in CARDS}
    assert set(GOAL_NUMBERS_MISSING) <= set(by_id)
    for cid, names in GOAL_NUMBERS_MISSING.items():
        stated = {c.name for c in entry_for_card(by_id[cid]).checks() if c.kind == STATED}
        assert set(names) <= stated, (cid, set(names) - stated)


def _goal_number_params():
    for card in CARDS:
        marks = [pytest.mark.xfail(strict=True, reason="goal does not state: "
                                   + ", ".join(GOAL_NUMBERS_MISSING[card.id]))] if card.id in GOAL_NUMBERS_MISSING else []
        yield pytest.param(card, id=card.id, marks=marks)


@pytest.mark.parametrize("card", list(_goal_number_params()))
def test_goal_states_every_stated_threshold(card) -> None:
    row = card_checks(card)
    assert not row.missing, (f"{card.id}: the goal does not state " + "; ".join(
        f"{c.name} ({c.threshold}: {c.phrase})" for c in row.checks if c.name in row.missing))


# ---- the generated table ---------------------------------------------------------------------------------
def test_docs_page_is_the_commands_output() -> None:
    assert DOCS_PAGE.read_text(encoding="utf-8") == render("markdown"), (
        "docs/goal-checks.md is out of date: run `medimageos tasks checks --write`")


def test_command_prints_markdown_and_json(capsys) -> None:
    assert main(["tasks", "checks", "--tasks", "L4_heart_shim_box"]) == 0
    out = capsys.readouterr().out
    assert "## L4_heart_shim_box" in out and "| box_volume | 8x | stated |" in out
    assert main(["tasks", "checks", "--json", "--tasks", "us_kidney_set_acquisition_v1"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    value = next(c for c in row["checks"] if c["name"] == "value")
    assert (value["value"], value["unit"], value["kind"], value["in_goal"]) == (5.0, "MHz", "stated", True)
    assert main(["tasks", "checks", "--check"]) == 0


# ---- every threshold constant of the registry is in the table, or named here as no check -------------------
# A module-level number (or tuple / dict of numbers) of scoring/registry/<modality>.py that no entry's checks()
# reads, directly or through an entry field, must be listed here with why it is no pass/fail criterion; a new
# threshold added to the registry then shows in the table or is classified here (it cannot be silently hidden).
NOT_CHECKS: dict[str, dict[str, str]] = {
    "ct": {"ALLOWED_MARGIN_MM": "AQ's efficiency term only", "AQ_COVERAGE_FLOOR": "AQ only",
           "MAX_EXCESS_MM": "read through CTTask.max_excess_mm (the excess_per_end check)",
           "POSITION_TOLERANCE_MM": "solver input", "HEIGHT_TOLERANCE_MM": "solver input",
           "DOSE_TARGET_FRACTION": "solver input", "RECOVERY_OVERLAP_MM": "solver input"},
    "mr": {"SHIM_FULL_AQ_RATIO": "AQ only"},
    "us": {},
}


def _numeric(value) -> bool:
    if isinstance(value, bool):
        return False
    if isinstance(value, (int, float)):
        return True
    if isinstance(value, (tuple, list)):
        return bool(value) and all(_numeric(v) for v in value)
    if isinstance(value, dict):
        return bool(value) and all(_numeric(v) for v in value.values())
    return False


def _names_read_by_checks(source: str) -> set[str]:
    """Names read in each entry class (its checks() and its field defaults) and in the REGISTRY expression."""
    import ast

    tree = ast.parse(source)
    scopes = [n for n in tree.body if isinstance(n, ast.ClassDef) and any(
        isinstance(f, ast.FunctionDef) and f.name == "checks" for f in n.body)]
    scopes += [n for n in tree.body if isinstance(n, ast.AnnAssign) and getattr(n.target, "id", "") == "REGISTRY"
               or isinstance(n, ast.Assign) and any(getattr(t, "id", "") == "REGISTRY" for t in n.targets)]
    return {x.id for s in scopes for x in ast.walk(s) if isinstance(x, ast.Name)}


def test_the_threshold_scan_sees_what_checks_read_and_nothing_else() -> None:
    src = ("A = 1.0\nB = 2.0\nC = 3.0\nD = 4.0\n"
           "class T:\n    x: float = A\n    def checks(self):\n        return [B]\n"
           "def answers():\n    return C\n"
           "REGISTRY: dict = {'t': T(x=D)}\n")
    assert _names_read_by_checks(src) >= {"A", "B", "D"} and "C" not in _names_read_by_checks(src)


@pytest.mark.parametrize("modality", ["ct", "mr", "us"])
def test_every_registry_threshold_is_a_check_or_named_as_none(modality: str) -> None:
    import importlib
    import inspect

    mod = importlib.import_module(f"scoring.registry.{modality}")
    constants = {k for k, v in vars(mod).items() if k.isupper() and _numeric(v)}
    read = _names_read_by_checks(inspect.getsource(mod))
    unlisted = sorted(constants - read - set(NOT_CHECKS[modality]))
    assert not unlisted, (f"scoring/registry/{modality}.py thresholds in no check: {unlisted}: list them in the "
                          "entry's checks() (the goal-check table) or in NOT_CHECKS with why they are none")
    stale = sorted(set(NOT_CHECKS[modality]) - constants)
    assert not stale, f"NOT_CHECKS names constants scoring/registry/{modality}.py no longer has: {stale}"
