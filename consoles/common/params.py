"""Declarative console parameters (pure: no Qt).

A Parameter says once what a numeric setting is: its label and unit on the screen, its bounds,
the decimals the console accepts and shows, the arrow-key step, and when it may be edited
(`enabled_when`, a predicate on the model; a `Rule` also explains a refusal). The model clamps
and rounds every value through it and the parameter-card builder (consoles.common.widgets)
builds, refreshes and greys out its field from it, so bounds and enable rules exist in one place.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable

from consoles.common.model_base import ALWAYS, Rule

Getter = Callable[[Any], float]
Setter = Callable[[Any, float], None]


@dataclass(frozen=True)
class Parameter:
    """One numeric console setting.

    get(model) reads the value shown; set(model, value) is the model action a committed field
    calls (it refuses or clamps through this parameter). `widget` names the field on screen
    (the name geometry export and solvers use); it defaults to "<name>_field".
    """

    name: str
    label: str
    unit: str
    lo: float
    hi: float
    decimals: int
    step: float
    enabled_when: Callable[[Any], bool] = ALWAYS
    get: Getter | None = None
    set: Setter | None = None
    widget: str = ""

    def __post_init__(self) -> None:
        if not self.lo <= self.hi:
            raise ValueError(f"parameter {self.name}: lo {self.lo} > hi {self.hi}")
        if self.decimals < 0 or self.step <= 0:
            raise ValueError(f"parameter {self.name}: decimals must be >= 0 and step > 0")

    @property
    def widget_name(self) -> str:
        return self.widget or f"{self.name}_field"

    def bound(self, value: float) -> float:
        """`value` inside [lo, hi], not rounded (for models that apply further limits before rounding)."""
        return min(self.hi, max(self.lo, float(value)))

    def clamp(self, value: float) -> float:
        """`value` inside [lo, hi], rounded to the accepted decimals (what the field would commit)."""
        return round(self.bound(value), self.decimals)

    def enabled(self, model: Any) -> bool:
        """Whether the user may edit it now."""
        return bool(self.enabled_when(model))

    def refusal(self, model: Any) -> str | None:
        """Why it may not be edited now (None when it may); a plain predicate gives a generic reason."""
        if isinstance(self.enabled_when, Rule):
            return self.enabled_when.reason(model)
        return None if self.enabled(model) else f"{self.label} cannot be changed now."

    def value(self, model: Any) -> float:
        """The model's current value of this parameter."""
        return float(self.get(model) if self.get is not None else getattr(model, self.name))

    def commit(self, model: Any, value: float) -> None:
        """Hand a user-entered value to the model's action for it."""
        if self.set is None:
            raise TypeError(f"parameter {self.name} has no setter")
        self.set(model, value)
