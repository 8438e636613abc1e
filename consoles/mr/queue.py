"""The MR exam queue: rows, their editing, and Go/Stop in simulated time (a mixin of MRModel; no Qt).

Rows (one sequence each) have a stable `uid`, a name, a protocol, a status (pending, running, done, stopped,
skipped) and RowParams. Go starts the open row when it can run (pending or stopped), otherwise the first
pending row; rows run one at a time in simulated time (a scheduler event at t_start + duration finishes the row
and forms its series). After a row the scanner pauses: the user presses Go again, as on a clinical console with
auto-continue off. Go is refused, with the reason in words, when something blocks it (go_blocker): the scanner
is busy, nothing is pending, the protocol is a placeholder, no localizer has been acquired for a row planned on
one, a trigger without its physiological signal, a parameter conflict.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from consoles.common.numeric import duration_text
from consoles.mr import mapping, status
from consoles.mr.protocols import PROTOCOLS, MRProtocol, get_protocol, library_tree
from consoles.mr.row_params import RowParams, conflicts, scan_time_s

__all__ = ["QueueRow", "ExamQueue", "STATUSES", "MAX_NAME_CHARS", "PRIORITY_ROW_DONE", "STOP_FAULT_REASON"]

STATUSES = ("pending", "running", "done", "stopped", "skipped")
MAX_NAME_CHARS = 40
PRIORITY_ROW_DONE = 0
STOP_FAULT_REASON = "RF amplifier fault"


@dataclass
class QueueRow:
    """One sequence of the exam queue."""

    uid: int
    name: str
    protocol: str
    params: RowParams
    status: str = "pending"
    copy_of: int | None = None  # uid of the row this one repeats
    series: int | None = None  # uid of the series it acquired
    t_start: float | None = None
    t_end: float | None = None

    @property
    def proto(self) -> MRProtocol:
        return get_protocol(self.protocol)


class ExamQueue:
    """Queue lookup, editing and Go/Stop; MRModel supplies the clock, the log, the series store and the card."""

    # ---- lookup ---------------------------------------------------------------------------------
    @staticmethod
    def protocols() -> tuple[MRProtocol, ...]:
        return PROTOCOLS

    @staticmethod
    def library() -> dict[str, Any]:
        return library_tree().to_dict()

    def row(self, uid: int) -> QueueRow:
        for r in self.rows:
            if r.uid == uid:
                return r
        self._require(False, f"There is no row {uid} in the queue.")
        raise AssertionError  # unreachable: _require raised

    def row_at(self, index: int) -> QueueRow:
        """The row at 1-based queue position `index`."""
        self._require(1 <= index <= len(self.rows), f"There is no row {index} in the queue.")
        return self.rows[index - 1]

    def index_of(self, uid: int) -> int:
        """1-based queue position of a row."""
        return self.rows.index(self.row(uid)) + 1

    @property
    def open_row(self) -> QueueRow | None:
        return None if self._open_uid is None else self.row(self._open_uid)

    @property
    def running_row(self) -> QueueRow | None:
        return None if self._running_uid is None else self.row(self._running_uid)

    def duration_s(self, row: QueueRow) -> float:
        """The row's scan time: fixed once it started, otherwise what its parameters give now."""
        if row.status in ("running", "done") and row.t_start is not None and row.t_end is not None:
            return round(row.t_end - row.t_start, 3)
        return scan_time_s(row.params, row.proto, self.heart_rate_bpm, self._signal(row.params.trigger))

    def scan_time_text(self, row: QueueRow) -> str:
        """The row's scan time as every place shows it (queue Time column, Go line, card, status line): m:ss
        of duration_s, one rounding for all of them (issue 34: the queue read 0:17 beside a card's 0:16)."""
        return duration_text(self.duration_s(row))

    def go_status(self) -> status.GoStatus:
        """The Go line under the queue, as it stands now (consoles.mr.status.go_status)."""
        return status.go_status(self)

    def _param_message(self, row: QueueRow, name: str, value: Any) -> str:
        """The status line after `name` of `row` was set to `value`: a conflict it made, or what was set and
        the scan time that follows."""
        found = self.row_conflicts(row)
        if found:
            return found[0]
        return status.param_message(self.index_of(row.uid), name, value, self.scan_time_text(row))

    def row_conflicts(self, row: QueueRow) -> list[str]:
        return conflicts(row.params, row.proto, self.heart_rate_bpm, self._signal(row.params.trigger))

    # ---- queue editing --------------------------------------------------------------------------
    def _new_row(self, pid: str, name: str | None = None, position: int | None = None) -> QueueRow:
        try:
            p = get_protocol(pid)
        except KeyError as exc:
            self._require(False, str(exc.args[0]))
            raise
        row = QueueRow(self._next_row_uid, self._clean_name(name) if name is not None else p.name, p.id,
                       RowParams.from_protocol(p, self.isocentre_mm, self.field_t))
        self._next_row_uid += 1
        pos = len(self.rows) if position is None else max(0, min(len(self.rows), int(position)))
        self.rows.insert(pos, row)
        return row

    def _clean_name(self, name: str) -> str:
        text = " ".join(str(name).split())
        self._require(bool(text), "A row name cannot be empty.")
        self._require(len(text) <= MAX_NAME_CHARS, f"A row name has at most {MAX_NAME_CHARS} characters.")
        return text

    def add_protocol(self, pid: str, position: int | None = None) -> int:
        """Add a protocol of the library to the queue (at 0-based `position`, default the end); its uid."""
        row = self._new_row(pid, position=position)
        if pid in self.library_plans:  # the saved plan first: a seeded shim fault sits relative to the slice
            row.params.set_pose(self.library_plans[pid]["pose"])
        if self.library_mapping_fault and mapping.is_mapping(get_protocol(pid)):
            self._apply_mapping_fault(row, record=False)
        self._log("row_added", row=row.uid, protocol=pid, index=self.index_of(row.uid))
        self.message = f"{row.name} added to the queue."
        self._changed("queue")
        return row.uid

    def open(self, uid: int) -> None:
        """Open a row: its parameters show in the card and its planning graphics on the images."""
        row = self.row(uid)
        self._open_uid = uid
        self._log("row_opened", row=uid)
        self.message = f"{row.name} opened."
        self._changed("open")

    def close_row(self) -> None:
        row = self.open_row
        self._open_uid = None
        if row is not None:
            self.message = f"{row.name} closed."
        self._changed("open")

    def rename(self, uid: int, name: str) -> None:
        row = self.row(uid)
        new = self._clean_name(name)
        old, row.name = row.name, new
        self._log("row_renamed", row=uid, old=old, name=new)
        self.message = f"Row {self.index_of(uid)} renamed to {new}."
        self._changed("queue")

    def repeat(self, uid: int) -> int:
        """A pending copy of the row (same protocol, name and parameters) right after it; its uid."""
        src = self.row(uid)
        row = self._new_row(src.protocol, src.name, position=self.index_of(uid))
        row.params = src.params.copy()
        row.copy_of = src.uid
        self._log("row_repeated", row=uid, copy=row.uid, index=self.index_of(row.uid))
        self.message = f"{src.name} repeated as row {self.index_of(row.uid)}."
        self._changed("queue")
        return row.uid

    def skip(self, uid: int) -> None:
        """Skip a pending or stopped row (Go passes it by); skipping a skipped row makes it pending again."""
        row = self.row(uid)
        self._require(row.status not in ("running", "done"), f"{row.name} is {row.status}: it cannot be skipped.")
        row.status = "pending" if row.status == "skipped" else "skipped"
        self._log("row_skipped" if row.status == "skipped" else "row_unskipped", row=uid)
        self.message = f"{row.name} {'skipped' if row.status == 'skipped' else 'will be acquired again'}."
        self._changed("queue")

    def delete(self, uid: int) -> None:
        row = self.row(uid)
        self._require(row.status != "running", f"{row.name} is running: stop it before deleting it.")
        self._require(row.status != "done", f"{row.name} has been acquired: its series stays in the exam.")
        index = self.index_of(uid)
        self.rows.remove(row)
        if self._open_uid == uid:
            self._open_uid = None
        self._log("row_deleted", row=uid, index=index)
        self.message = f"{row.name} deleted."
        self._changed("queue")

    def move(self, uid: int, delta: int) -> None:
        """Move a row up (delta -1) or down (+1) by one place."""
        row = self.row(uid)
        i = self.index_of(uid) - 1
        j = i + (1 if delta > 0 else -1)
        self._require(row.status != "running", f"{row.name} is running: it cannot be moved.")
        self._require(0 <= j < len(self.rows), f"{row.name} is already {'last' if delta > 0 else 'first'}.")
        self.rows[i], self.rows[j] = self.rows[j], self.rows[i]
        self._log("row_moved", row=uid, index=j + 1)
        self.message = f"{row.name} moved {'down' if delta > 0 else 'up'} to row {j + 1}."
        self._changed("queue")

    def move_up(self, uid: int) -> None:
        self.move(uid, -1)

    def move_down(self, uid: int) -> None:
        self.move(uid, +1)

    # ---- Go / Stop ------------------------------------------------------------------------------
    def go_target(self) -> QueueRow | None:
        """The row Go would start: the open row if it can run, otherwise the first pending one."""
        r = self.open_row
        if r is not None and r.status in ("pending", "stopped"):
            return r
        return next((r for r in self.rows if r.status == "pending"), None)

    def go_blocker(self) -> str | None:
        """Why Go is refused now, in words (None: Go is available)."""
        running = self.running_row
        if running is not None:
            return f"The scanner is busy: {running.name} is running ({self.remaining_s():.0f} s left)."
        row = self.go_target()
        if row is None:
            return "There is no pending row to start."
        p = row.proto
        if not p.acquirable:
            return f"{row.name} cannot be acquired: mapping is not available on this console yet."
        if p.needs_localizer and not self.localizer_done():
            return f"{row.name} is planned on localizer images: acquire the localizer first."
        trig = row.params.trigger
        if trig != "none" and not self._signal(trig):
            what = "ECG" if trig == "ecg" else "pulse"
            return (f"{row.name} is triggered by {what}, but there is no {what} signal: check the "
                    f"{'ECG leads' if trig == 'ecg' else 'pulse sensor'} or set Trigger to none.")
        found = self.row_conflicts(row)
        if found:
            return f"{row.name}: {found[0]}"
        return None

    def can_go(self) -> bool:
        return self.go_blocker() is None

    def go(self) -> int:
        """Start the next row (see go_target); returns its uid."""
        reason = self.go_blocker()
        if reason is not None:
            self._log("go_refused", reason=reason)
        self._require(reason is None, reason or "")
        row = self.go_target()
        assert row is not None
        self._start(row)
        return row.uid

    def _start(self, row: QueueRow, t_end: float | None = None, t_start: float | None = None) -> None:
        dur = self.duration_s(row)  # not started yet: what its parameters give now
        row.t_start = self.t if t_start is None else float(t_start)
        row.t_end = row.t_start + dur if t_end is None else float(t_end)
        row.status = "running"
        self._running_uid = row.uid
        self._done_event = self.schedule(row.t_end, lambda uid=row.uid: self._finish(uid), PRIORITY_ROW_DONE,
                                         "row_done")
        self._log("row_started", row=row.uid, name=row.name, duration_s=round(row.t_end - row.t_start, 3))
        self.message = f"Scanning row {self.index_of(row.uid)}, {row.name}..."
        self._changed("scan")

    def stop(self) -> None:
        """Stop the running row: no series; it may be started again with Go."""
        row = self.running_row
        self._require(row is not None, "Nothing is running.")
        assert row is not None
        self.scheduler.cancel(self._done_event)
        self._done_event = None
        row.status, row.t_end = "stopped", self.t
        self._running_uid = None
        self._log("row_stopped", row=row.uid)
        self.message = f"Row {self.index_of(row.uid)} stopped: {row.name}."
        self._changed("scan")

    def remaining_s(self) -> float:
        row = self.running_row
        return 0.0 if row is None or row.t_end is None else max(0.0, row.t_end - self.t)

    def _finish(self, uid: int, prior: bool = False) -> None:
        """The row's last line was read: form its series and mark it done."""
        row = self.row(uid)
        s = self._form_series(row, prior)
        self.series.append(s)
        row.status, row.series = "done", s.uid
        if self._running_uid == uid:
            self._running_uid, self._done_event = None, None
        self._log("prior_series_loaded" if prior else "row_done", row=uid, series=s.uid, n_images=s.n_images)
        if s.localizer and self.autoload_localizer:
            for k in range(min(len(s.planes), len(self.layout.viewports))):  # sagittal, coronal, transverse
                self._load(k, s.uid, s.plane_middle(k))  # into 1-3, each on its middle slice
        # the end of a scan reads as such, with what Go would do next (issue 34)
        nxt = self.go_target()
        after = "no pending rows" if nxt is None else f"Go starts row {self.index_of(nxt.uid)} next"
        self.message = (f"Row {self.index_of(uid)} done: {row.name}, series {s.uid} ({s.n_images} "
                        f"image{'' if s.n_images == 1 else 's'}); {after}.")
        self._changed("series")

    def _fault_stop(self, uid: int) -> None:
        """A hardware fault stops the running row partway (no series); Go on the open stopped row resumes it."""
        row = self.row(uid)
        if self._running_uid != uid:
            return
        self.scheduler.cancel(self._done_event)
        self._done_event = None
        row.status, row.t_end = "stopped", self.t
        self._running_uid = None
        self._log("row_fault_stopped", row=uid, reason=STOP_FAULT_REASON)
        self.message = f"Row stopped: {STOP_FAULT_REASON} ({row.name}). Open the row and press Go to resume."
        self._changed("scan")
