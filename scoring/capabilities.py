"""Which task cards a subject can serve: what each card needs of the anatomy, what a subject has, the check.

A card needs what three readers take from the subject: its oracle and its reference solver (both read the
card's registry entry, scoring/registry/<modality>.py, so the needs are computed from that entry here) and
the console's seeding of the card (label extents the console measures for a prior series, a dose limit or
the breath-hold warp, read from the card's initial state and perturbations). Needs are named in one
vocabulary with what a subject's oracle half holds:

- an organ group of rendering.subjects.labels.ORGANS (``lungs``, ``kidney_left``, ``lv`` ...);
- a landmark (``mitral_valve_centre``, ``lv_apex_epicardial`` ...);
- ``<view>_plane``: a reference plane (4ch, 2ch, 3ch, sax); ``lv_long_axis``.

Procedural subjects carry every one of them; a label map brought in with `medimageos subjects import` has
the organs it labels and the landmarks derived from their masks, never valve planes or the LV long axis.
`medimageos subjects import` reports and `medimageos run` refuses (runner/run.py: expand) through
`unserved`, so the two cannot disagree.
"""
from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from rendering.subjects import SubjectError
from rendering.subjects import bundle as B
from rendering.subjects.labels import ORGANS
from rendering.subjects.params import parse_id
from rendering.subjects.version import GENERATOR_VERSION
from scoring.registry import entry_for_card
from tasks.card import TaskCard

LV_AXIS = "lv_long_axis"


def plane(view: str) -> str:
    """The need/feature name of a reference plane."""
    return f"{view}_plane"


class SubjectCapabilityError(ValueError):
    """Requested (subject, card) pairs the subject's anatomy cannot serve; the message names each one."""


# ---- what a card needs --------------------------------------------------------------------------------
def _ct_needs(e: Any) -> list[str]:
    """scoring/oracles/ct.py and runner/agents/reference/ct.py: every organ of the task's anatomy (coverage,
    extents, body-centre isocentre over their range); the heart for a heart isocentre; bolus tracking reads
    the aorta (ROI inside it), the descending aorta and the heart (the solver's monitoring slice)."""
    out = list(e.organs)
    if e.isocentre == "heart":
        out.append("heart")
    if e.bolus_tracking:
        out += ["aorta", "aorta_descending", "heart"]
    return out


def _mr_needs(e: Any) -> list[str]:
    """scoring/oracles/mr*.py and runner/agents/reference/mr*.py, by the entry's kind."""
    from scoring.registry import mr as R

    kind = e.kind
    if kind in ("long_axis", "long_axis_pair", "lax_from_scratch"):
        # plane_errors: the view's reference plane, the LV long axis, the landmarks the image must show
        return [plane(v) for v in e.views] + [LV_AXIS, *R.LAX_FOV_LANDMARKS]
    if kind == "sax_stack":  # sax_measures: the LV from the mitral plane to the apex; solver: sax row
        return [LV_AXIS, "lv", plane("sax")]
    if kind == "shim_box_fit":
        return ["heart"]
    if kind in ("renal_slab", "renal_numeric", "renal_recovery", "renal_adequacy"):
        return list(R.KIDNEYS)
    if e.family == R.MAPPING and kind != "stopped_row_retry":
        # the mid-ventricular ROI on the long axis (lv_myocardium label), the shim box over the heart
        return [LV_AXIS, "lv_myocardium", "heart"]
    return []  # queue, row, viewer, judgement and stopped-row tasks read no anatomy


def _us_needs(e: Any) -> list[str]:
    return []  # every US task scans a kidney: the side comes from the card (_seeding_needs)


_ENTRY_NEEDS = {"ct": _ct_needs, "mr": _mr_needs, "us": _us_needs}


def _organ_of_label(label: str) -> str:
    """The smallest organ group holding a label (a card's seeding names labels; subjects list organs)."""
    groups = [(len(v), k) for k, v in ORGANS.items() if label in v and k != "body"]
    if not groups:
        raise ValueError(f"label {label!r} belongs to no organ group of rendering/subjects/labels.py ORGANS")
    return min(groups)[1]


def _seeding_needs(card: TaskCard) -> list[str]:
    """What the console measures on the runtime labels when it seeds this card (consoles/*/model.py)."""
    init, pert = card.initial_state.as_dict(), card.perturbations.as_dict()
    out: list[str] = []
    if card.modality == "ct":
        prior = init.get("prior_exam") or {}
        out += [_organ_of_label(n) for n in prior.get("labels", [])]          # _load_prior_exam
        out += [_organ_of_label(n) for n in init.get("ctdi_limit_labels", [])]  # _set_size_specific_limit
        if "breath_hold_mm" in pert:  # _breath_hold_warp: the liver's dome
            out.append("liver")
    elif card.modality == "us":
        side = init.get("kidney")
        sides = [side] if side else list(pert.get("kidney") or ("left", "right"))
        out += [f"kidney_{s}" for s in sides]
    return out


def card_needs(card: TaskCard) -> tuple[str, ...]:
    """Everything of a subject's anatomy the card's oracle, reference solver and console seeding read, in a
    stable order without repeats."""
    e = entry_for_card(card)
    return tuple(dict.fromkeys(_ENTRY_NEEDS[card.modality](e) + _seeding_needs(card)))


# ---- what a subject has -------------------------------------------------------------------------------
def features(oracle_meta: Mapping[str, Any]) -> frozenset[str]:
    """The anatomy a subject's oracle half holds (its oracle.json, as written by the build or the import)."""
    have = set(oracle_meta.get("organ_labels", {})) | set(oracle_meta.get("landmarks", {}))
    have |= {plane(v) for v in oracle_meta.get("planes", {})}
    if oracle_meta.get("lv_long_axis"):
        have.add(LV_AXIS)
    return frozenset(have)


def _guard() -> None:
    # the same rule as scoring/subject_oracle.py: console processes never read the oracle half
    from scoring.subject_oracle import _guard as oracle_guard

    oracle_guard()


def subject_features(subject_id: str) -> frozenset[str] | None:
    """The features of a subject from its oracle.json; None for a procedural subject not built yet (it is
    not built here: the generator gives every subject the same anatomy, and a cohort run would otherwise
    spend minutes before its first episode; tests/runner/test_preflight.py checks dev serves every card).
    An unknown subject is a SubjectError naming it."""
    _guard()
    if parse_id(subject_id) is not None:
        d = B.procedural_dir(subject_id, GENERATOR_VERSION)
        if not (d / "oracle.json").exists():
            return None
    else:
        d = B.imported_dir(subject_id)
        if not (d / "runtime.json").exists():
            raise SubjectError(f"unknown subject {subject_id!r}: not dev, s01..s30, or an imported subject "
                               f"(looked in {d}); see `medimageos subjects list`")
    try:
        return features(json.loads((d / "oracle.json").read_text()))
    except (OSError, ValueError) as e:
        raise SubjectError(f"cannot read the oracle half of subject {subject_id!r} in {d}: {e}") from e


# ---- the check ----------------------------------------------------------------------------------------
def missing(card: TaskCard, have: Iterable[str]) -> list[str]:
    """The card's needs the subject lacks (empty: the subject serves the card)."""
    have = set(have)
    return [n for n in card_needs(card) if n not in have]


def unserved(cards: Iterable[TaskCard], have: Iterable[str]) -> dict[str, list[str]]:
    """card id -> what the subject lacks, for every card it cannot serve."""
    have = frozenset(have)
    return {c.id: lack for c in cards if (lack := missing(c, have))}


def preflight(cards: Iterable[TaskCard], subjects: Iterable[str]) -> None:
    """Refuse, before any console or display starts, every (subject, card) pair the subject cannot serve,
    and every unknown subject: one SubjectCapabilityError naming each subject, card and missing need."""
    cards = list(cards)
    problems: list[str] = []
    for sid in dict.fromkeys(subjects):
        try:
            have = subject_features(sid)
        except SubjectError as e:
            problems.append(str(e))
            continue
        if have is None:
            continue
        for cid, lack in unserved(cards, have).items():
            problems.append(f"subject {sid!r} cannot serve task {cid}: missing {', '.join(lack)}")
    if problems:
        raise SubjectCapabilityError(
            "refused before any episode started (no results written):\n  " + "\n  ".join(problems)
            + "\n(`medimageos subjects show <id>` lists a subject's anatomy; choose other --tasks or --subjects)")


def served_report(cards: Iterable[TaskCard], have: Iterable[str]) -> list[str]:
    """Lines for `medimageos subjects import`: the tasks served, then the tasks refused grouped by what is
    missing (a cardiac-less map lacks the same few things for a dozen planning cards)."""
    cards = list(cards)
    lack = unserved(cards, have)
    served = [c.id for c in cards if c.id not in lack]
    lines = [f"serves: {', '.join(served) or 'no task'} ({len(served)} of {len(cards)} tasks)"]
    groups: dict[tuple[str, ...], list[str]] = {}
    for cid, m in lack.items():
        groups.setdefault(tuple(m), []).append(cid)
    for m, ids in groups.items():
        lines.append(f"cannot serve {', '.join(ids)}: missing {', '.join(m)}")
    return lines
