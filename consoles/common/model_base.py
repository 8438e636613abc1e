"""What every console model shares (pure: no Qt, no VTK).

A console model holds all acquisition state and simulator logic; its Qt view only binds it to the
screen. This base gives every modality the same plumbing:

- change notification: views subscribe to `listeners` and are told *what* changed (`_changed`);
- the event log: `_log(event, **info)` stamps simulated time; the oracles read it from the dump;
- user-facing refusals: `_require(cond, message)` shows the reason and raises ConsoleActionError;
  `Rule` bundles such checks so a view can grey a control out with the very same test;
- a discrete-event scheduler on the simulated clock: components schedule callbacks at simulated
  times and `on_clock(t_old, t_new)` runs the due ones in time order (ties: lower priority first,
  then the order they were scheduled), so one long wait equals many short ones;
- seeded perturbation draws from the episode rng (`PerturbationDraws`).
"""
from __future__ import annotations

import heapq
import itertools
from dataclasses import dataclass, field
from typing import Any, Callable, Iterable, Mapping, Sequence

import numpy as np

from rendering.seeding import seeded_rng


class ConsoleActionError(ValueError):
    """An operation the console refuses in its current state (shown to the user as a message)."""


# ---- rules: one predicate that can both grey out a control and explain a refusal --------------------
Check = tuple[Callable[[Any], bool], str]


class Rule:
    """An ordered list of (predicate on the model, refusal message).

    `rule(model)` is True when every check holds (a view enables the control); `rule.reason(model)`
    is the message of the first failing check (a model refuses with it). Rules combine with `&`.
    """

    def __init__(self, *checks: Check) -> None:
        self.checks: tuple[Check, ...] = tuple(checks)

    def __call__(self, model: Any) -> bool:
        return self.reason(model) is None

    def reason(self, model: Any) -> str | None:
        """The message of the first check that fails, or None when the rule holds."""
        for pred, message in self.checks:
            if not pred(model):
                return message
        return None

    def __and__(self, other: "Rule") -> "Rule":
        return Rule(*self.checks, *other.checks)


ALWAYS = Rule()


# ---- discrete-event scheduler ------------------------------------------------------------------------
@dataclass(order=True)
class ScheduledEvent:
    """One pending callback; ordered by (time, priority, scheduling order)."""

    t: float
    priority: int
    seq: int
    fn: Callable[[], None] = field(compare=False)
    name: str = field(default="", compare=False)
    cancelled: bool = field(default=False, compare=False)


class EventScheduler:
    """Callbacks at simulated times, run in time order; deterministic for equal times.

    Ties are broken by `priority` (lower first), then by the order of scheduling, never by
    anything wall-clock or hash dependent.
    """

    MAX_EVENTS_PER_ADVANCE = 10000  # bounded: a handler that reschedules itself at the same time would spin

    def __init__(self) -> None:
        self._heap: list[ScheduledEvent] = []
        self._seq = itertools.count()

    def schedule(self, t: float, fn: Callable[[], None], priority: int = 0, name: str = "") -> ScheduledEvent:
        """Run `fn` when the clock reaches simulated time `t`; returns a handle for `cancel`."""
        ev = ScheduledEvent(float(t), int(priority), next(self._seq), fn, name or getattr(fn, "__name__", ""))
        heapq.heappush(self._heap, ev)
        return ev

    @staticmethod
    def cancel(ev: ScheduledEvent | None) -> None:
        """Drop a pending event (no-op for None or an event that already ran)."""
        if ev is not None:
            ev.cancelled = True

    def _prune(self) -> None:
        while self._heap and self._heap[0].cancelled:
            heapq.heappop(self._heap)

    def peek(self) -> ScheduledEvent | None:
        """The next event that would run, or None."""
        self._prune()
        return self._heap[0] if self._heap else None

    def pending(self) -> list[ScheduledEvent]:
        """Pending events in the order they would run."""
        return sorted(ev for ev in self._heap if not ev.cancelled)

    def run_until(self, t_new: float, set_time: Callable[[float], None], tolerance: float = 1e-9) -> int:
        """Run every event due at or before `t_new` (within `tolerance`), in order.

        `set_time(t)` is called before each handler with the event's time, so the handler sees
        the simulated time it was scheduled for. Events a handler schedules are considered in the
        same pass. Returns the number of handlers run.
        """
        n = 0
        for _ in range(self.MAX_EVENTS_PER_ADVANCE):
            ev = self.peek()
            if ev is None or ev.t > t_new + tolerance:
                break
            heapq.heappop(self._heap)
            ev.cancelled = True  # it ran: a later cancel() of this handle is a no-op
            set_time(ev.t)
            ev.fn()
            n += 1
        return n


# ---- seeded perturbation draws -----------------------------------------------------------------------
class PerturbationDraws:
    """Draws a card's seeded perturbations from the episode rng, in the order they are asked for.

    The order of calls is part of the episode's identity: the same calls in the same order give
    the same numbers for the same (task, subject, seed). Keys that were asked for are remembered,
    so a caller can report card keys that nothing read (`unused_keys`).
    """

    def __init__(self, rng: np.random.Generator, perturbations: Mapping[str, Any] | None = None) -> None:
        self.rng = rng
        self.perturbations = dict(perturbations or {})
        self.used: set[str] = set()

    @classmethod
    def for_episode(cls, task_id: str, subject_id: str, seed: int,
                    perturbations: Mapping[str, Any] | None) -> "PerturbationDraws":
        """Draws from the episode's "perturbation" stream (rendering.seeding)."""
        return cls(seeded_rng(task_id, subject_id, seed, "perturbation"), perturbations)

    def _get(self, key: str, default: Any) -> Any:
        self.used.add(key)
        return self.perturbations.get(key, default)

    def has(self, key: str) -> bool:
        self.used.add(key)
        return key in self.perturbations

    def offset_mm(self, name: str) -> float:
        """A seeded offset in mm, rounded to 0.1: `<name>_mm: [lo, hi]` draws uniformly in the range;
        `<name>_abs_mm: [lo, hi]` draws a magnitude in the range with a random sign, so the start
        state is always clearly wrong. The uniform draw is always made (even for [0, 0]) so adding
        the abs key never shifts the draws that follow."""
        lo, hi = self._get(f"{name}_mm", [0.0, 0.0])
        value = float(self.rng.uniform(lo, hi))
        if self.has(f"{name}_abs_mm"):
            lo, hi = self.perturbations[f"{name}_abs_mm"]
            value = float(self.rng.choice([-1.0, 1.0]) * self.rng.uniform(lo, hi))
        return round(value, 1)

    def uniform(self, key: str, default: Sequence[float]) -> float:
        """A uniform draw in the card's [lo, hi] for `key` (or `default`); always consumes one draw."""
        lo, hi = self._get(key, default)
        return float(self.rng.uniform(lo, hi))

    def uniform_if_present(self, key: str) -> float | None:
        """A uniform draw only when the card has `key` (no draw otherwise)."""
        if not self.has(key):
            return None
        lo, hi = self.perturbations[key]
        return float(self.rng.uniform(lo, hi))

    def choice(self, key: str, default: Sequence[Any]) -> Any:
        """One of the card's options for `key` (or `default`), uniformly."""
        return self.pick(self.options(key, default))

    def options(self, key: str, default: Sequence[Any]) -> list[Any]:
        """The card's options for `key` (or `default`), without a draw."""
        return list(self._get(key, default))

    def pick(self, options: Sequence[Any]) -> Any:
        """One of `options`, uniformly (one draw)."""
        return options[int(self.rng.integers(len(options)))]

    def unused_keys(self) -> list[str]:
        """Card keys no draw asked for (likely typos)."""
        return sorted(set(self.perturbations) - self.used)


# ---- the model base ----------------------------------------------------------------------------------
class ConsoleModelBase:
    """State, log, refusals and simulated-time events common to every console model."""

    modality = "generic"

    def __init__(self, task_id: str, subject_id: str, seed: int) -> None:
        self.task_id, self.seed = task_id, seed
        self._subject_id = subject_id
        self.t = 0.0
        self.listeners: list[Callable[[str], None]] = []
        self.events: list[dict[str, Any]] = []
        self.message = ""
        self.scheduler = EventScheduler()
        self.parameters: dict[str, Any] = {}  # name -> params.Parameter, see declare()

    # ---- notifications --------------------------------------------------------------------------
    def _changed(self, what: str) -> None:
        for fn in self.listeners:
            fn(what)

    def _log(self, event: str, **info: Any) -> None:
        self.events.append({"t": round(self.t, 3), "event": event, **info})

    def _require(self, cond: bool, message: str) -> None:
        """Refuse (ConsoleActionError) with `message` shown to the user unless `cond` holds."""
        if not cond:
            self.message = message
            self._changed("message")
            raise ConsoleActionError(message)

    def _require_rule(self, rule: Rule) -> None:
        """Refuse with the first failing check's message unless `rule` holds."""
        reason = rule.reason(self)
        self._require(reason is None, reason or "")

    # ---- rng ------------------------------------------------------------------------------------
    def rng(self, *stream: Any) -> np.random.Generator:
        """The episode rng of a named stream (e.g. rng("recon", 2)); same arguments, same numbers."""
        return seeded_rng(self.task_id, self._subject_id, self.seed, *stream)

    # ---- parameters -----------------------------------------------------------------------------
    def declare(self, params: Iterable[Any]) -> None:
        """Register declared parameters (params.Parameter) by name; names are unique per model."""
        for p in params:
            if p.name in self.parameters:
                raise ValueError(f"parameter {p.name!r} declared twice")
            self.parameters[p.name] = p

    def parameter(self, name: str) -> Any:
        """The declared parameter `name`; refuses unknown names with a message."""
        self._require(name in self.parameters, f"unknown parameter {name}")
        return self.parameters[name]

    # ---- simulated time -------------------------------------------------------------------------
    def schedule(self, t: float, fn: Callable[[], None], priority: int = 0, name: str = "") -> ScheduledEvent:
        """Run `fn` at simulated time `t` (see EventScheduler.schedule)."""
        return self.scheduler.schedule(t, fn, priority, name)

    def _set_time(self, t: float) -> None:
        self.t = max(self.t, t)

    def on_clock(self, t_old: float, t_new: float) -> None:
        """Advance simulated time: run due events in order, then notify ("clock")."""
        self.scheduler.run_until(t_new, self._set_time)
        self.t = t_new
        self._after_clock()
        self._changed("clock")

    def _after_clock(self) -> None:
        """Hook for notifications a model sends after every clock advance (before "clock")."""


class ModelComponent:
    """A part of a console model with its own state and scheduled events (e.g. CT bolus tracking).

    It logs, refuses and notifies through its host, so the dump and the message line stay one.
    """

    def __init__(self, host: ConsoleModelBase) -> None:
        self.host = host

    @property
    def t(self) -> float:
        return self.host.t

    def _log(self, event: str, **info: Any) -> None:
        self.host._log(event, **info)

    def _changed(self, what: str) -> None:
        self.host._changed(what)

    def _require(self, cond: bool, message: str) -> None:
        self.host._require(cond, message)

    def _require_rule(self, rule: Rule) -> None:
        self.host._require_rule(rule)

    def schedule(self, t: float, fn: Callable[[], None], priority: int = 0, name: str = "") -> ScheduledEvent:
        return self.host.schedule(t, fn, priority, name)
