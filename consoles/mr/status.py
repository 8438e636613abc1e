"""What the MR console's status lines say (pure: no Qt): the Go line under the queue and the message line's
text for an edit of the open row.

Both describe the present (issue 34): the Go line is computed from the queue as it is now (a scan that ended is
news, "Row 4 done; no pending rows", not a refused press), and every edit of a row's parameters says what it set
and the scan time that follows, in the m:ss every other copy of that time shows (ExamQueue.scan_time_text).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from consoles.common.numeric import format_number
from consoles.mr.param_card import CHOICES, PARAM

__all__ = ["CHOICE_LABELS", "CHOICE_TITLES", "GoStatus", "GO_KINDS", "go_status", "param_message", "setting_text"]

# The choices' names on the card's buttons and the card's titles for them (consoles.mr.view_card shows these).
CHOICE_LABELS = {"trigger": {"none": "None", "ecg": "ECG", "pulse": "Pulse"},
                 "main": {"T": "Tra", "C": "Cor", "S": "Sag"},
                 "shim_mode": {"tune_up": "Tune-up", "standard": "Standard", "advanced": "Advanced"},
                 "scheme": {k: k for k in CHOICES["scheme"][0]}}
CHOICE_TITLES = {"trigger": "Trigger", "main": "Main orientation", "shim_mode": "Shim mode",
                 "scheme": "MOLLI scheme"}

# ready: Go starts a row; scanning: a row runs; finished: nothing left to start (not a refusal);
# blocked: something the user must fix stops Go
GO_KINDS = ("ready", "scanning", "finished", "blocked")


@dataclass(frozen=True)
class GoStatus:
    """The Go line: its kind (GO_KINDS, the view's colour) and its words."""

    kind: str
    text: str


def go_status(q: Any) -> GoStatus:
    """The Go line of `q` (an MRModel) as it stands now."""
    running = q.running_row
    if running is not None:
        return GoStatus("scanning", f"Scanning row {q.index_of(running.uid)}, {running.name}, "
                                    f"{q.remaining_s():.0f} s left; Go is unavailable while scanning.")
    target = q.go_target()
    if target is None:
        ended = [r for r in q.rows if r.status in ("done", "stopped") and r.t_end is not None]
        if not ended:
            return GoStatus("finished", "No pending rows: add a protocol from the library.")
        last = max(ended, key=lambda r: r.t_end)
        return GoStatus("finished", f"Row {q.index_of(last.uid)} {last.status}; no pending rows.")
    reason = q.go_blocker()
    if reason is None:
        return GoStatus("ready", f"Ready: Go starts row {q.index_of(target.uid)}, {target.name} "
                                 f"({q.scan_time_text(target)}).")
    return GoStatus("blocked", f"Go blocked: {reason}")


def setting_text(name: str, value: Any) -> str:
    """'Trigger ECG', 'Slices 21', 'TR 3.2 ms': a parameter as its card names and shows it."""
    if name in CHOICES:
        return f"{CHOICE_TITLES[name]} {CHOICE_LABELS[name].get(value, value)}"
    p = PARAM[name]
    return f"{p.label} {format_number(float(value), p.decimals, p.unit)}"


def param_message(index: int, name: str, value: Any, scan_time: str) -> str:
    """The status line after a parameter of row `index` (1-based) was set: what was set and the scan time."""
    return f"Row {index}: {setting_text(name, value)}; scan time {scan_time}."
