"""Every oracle family has hand-built PASS and FAIL tests that do not lean on the reference solver (issue 32).

The oracle tests of earlier rounds took their PASS states from the reference's episodes, while the reference
itself calls oracle helpers: a wrong measure would move the oracle and its "good" cases together. The files
below build their states by hand from the subject's anatomy (landmarks, organ extents, planes, voxels). This
test keeps that true: each family is covered by one of them, and importing any of them loads nothing from
runner.agents (checked in a fresh interpreter, so an indirect import counts too).
"""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tasks.card import all_cards

HERE = Path(__file__).parent
ROOT = HERE.parents[1]

# oracle family -> the hand-built test files that cover it
HANDBUILT: dict[str, tuple[str, ...]] = {
    "ct_coverage_isocentre": ("test_ct_goal_checks.py",),
    "ct_recovery_coverage": ("test_ct_goal_checks.py",),
    "ct_routine_workflow": ("test_ct_goal_checks.py",),
    "mr_planning": ("test_mr_cardiac_oracle_handbuilt.py", "test_mr_renal_goal_checks.py"),
    "mr_mapping": ("test_mr_mapping_goal_checks.py",),
    "mr_judgement": ("test_mr_workflow_goal_checks.py",),
    "mr_queue_run": ("test_mr_workflow_goal_checks.py",),
    "mr_row_edit": ("test_mr_workflow_goal_checks.py",),
    "mr_viewer": ("test_mr_workflow_goal_checks.py",),
    "us_contact": ("test_us_goal_checks.py",),
    "us_control": ("test_us_goal_checks.py",),
    "us_measure": ("test_us_goal_checks.py",),
    "us_optimize": ("test_us_goal_checks.py",),
    "us_save": ("test_us_goal_checks.py",),
    "us_view": ("test_us_goal_checks.py",),
}
FILES = sorted({f for fs in HANDBUILT.values() for f in fs})


def test_every_oracle_family_of_the_cards_has_handbuilt_tests() -> None:
    families = {c.oracle for c in all_cards()}
    missing = sorted(families - set(HANDBUILT))
    assert not missing, f"oracle families without hand-built PASS/FAIL tests: {missing}"
    absent = [f for f in FILES if not (HERE / f).is_file()]
    assert not absent, f"hand-built test files named here but missing: {absent}"


@pytest.mark.parametrize("family", sorted(HANDBUILT))
def test_the_files_of_a_family_name_it_and_hold_pass_and_fail_cases(family: str) -> None:
    """Each family's files mention the family's cards or family name and assert both verdicts."""
    cards = {c.id for c in all_cards() if c.oracle == family}
    text = "\n".join((HERE / f).read_text() for f in HANDBUILT[family])
    assert family in text or any(cid in text for cid in cards), \
        f"{HANDBUILT[family]} name neither {family} nor any of its cards {sorted(cards)}"
    assert '"PASS"' in text or "'PASS'" in text, f"{HANDBUILT[family]}: no PASS case"
    assert any(v in text for v in ('"FAIL"', "'FAIL'", '"PARTIAL"', "!= \"PASS\"")), \
        f"{HANDBUILT[family]}: no failing case"


@pytest.mark.parametrize("name", FILES)
def test_a_handbuilt_file_imports_nothing_from_the_reference(name: str) -> None:
    module = f"tests.scoring.{name[:-3]}"
    code = ("import importlib, json, sys; importlib.import_module(%r); "
            "print(json.dumps(sorted(m for m in sys.modules if m == 'runner.agents' "
            "or m.startswith('runner.agents.'))))" % module)
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=50)
    assert out.returncode == 0, f"importing {module} failed: {out.stderr[-600:]}"
    loaded = json.loads(out.stdout.strip().splitlines()[-1])
    assert not loaded, f"{name} loads the reference solver's package: {loaded}"
