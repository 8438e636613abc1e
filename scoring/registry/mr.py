"""The MR task registry: per task id, its oracle family, what the oracle checks and the solver's inputs.

Read by the MR oracles (scoring/oracles/mr.py) and the MR reference planner (runner/agents/reference/mr.py).
A task names its targets by clinical identity (a protocol, a localizer plane), never by queue position or
row name: both are seeded per episode. Thresholds are judged from the task's clinical meaning (how soon
"promptly" is, what "both kidneys covered" means), not from the reference solver's behaviour.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

ROW_EDIT = "mr_row_edit"
VIEWER = "mr_viewer"
QUEUE_RUN = "mr_queue_run"
JUDGEMENT = "mr_judgement"
Family = Literal["mr_row_edit", "mr_viewer", "mr_queue_run", "mr_judgement"]
Kind = Literal["trigger", "rename", "repeat_open", "load_image", "activate", "shim_box", "graphics", "select_image",
               "first_acquisition", "queue_order", "skip", "go_availability", "idle_or_scanning",
               "renal_adequacy", "select_sequence"]

# ---- thresholds -----------------------------------------------------------------------------------
# An idle scanner should be started at once: a few UI steps (open, Go) take well under 10 s of simulated
# time; 15 s leaves room for a look at the header but not for a wait "to be safe".
IDLE_START_MAX_S = 15.0
# Once a running sequence has finished, the next should follow as promptly.
BUSY_START_MAX_S = 15.0
# A renal series is adequate when each kidney's voxels lie inside the series' FOV and slab at least this
# much; a 2 mm grid edge may leave a stray voxel outside a well-planned slab, a clipped pole never does.
RENAL_MIN_COVERAGE = 0.98
KIDNEYS = ("kidney_left", "kidney_right")

# ---- clinical questions of mr_select_sequence_v1 -> the protocol that answers each -----------------
INDICATION_PROTOCOL: dict[str, str] = {
    "Left ventricular volumes and ejection fraction (Simpson's method)": "cine_sax",
    "Mitral and tricuspid regurgitation; right ventricular free wall motion": "cine_4ch",
    "Left atrial size; motion of the anterior and inferior left ventricular walls": "cine_2ch",
    "Incidental renal cyst on ultrasound: is it simple fluid?": "t2_haste_cor",
    "Suspected hepatic steatosis: fat content of the liver": "t1_gre_tra",
}


@dataclass(frozen=True)
class MRTask:
    """One MR task: what the oracle checks and what the reference planner aims at."""

    id: str
    family: Family
    kind: Kind
    protocol: str | None = None  # the queue row the goal names, by its protocol
    value: str | None = None  # the value the goal asks for (a name, a trigger, a graphics mode)
    image: str | None = None  # the localizer plane the goal names (sagittal, coronal, transverse)
    viewport: int | None = None  # 1-based viewport the goal names
    order: tuple[str, ...] = ()  # the pending queue the goal asks for, by protocol
    blocked_trigger: str | None = None  # the trigger the goal prescribes when the ECG signal is missing

    def stage_names(self) -> list[str]:
        """The oracle's stage names for this task, in verdict order."""
        from scoring.oracles.mr import stage_names

        return stage_names(self)


def _entries(*tasks: MRTask) -> dict[str, MRTask]:
    return {t.id: t for t in tasks}


REGISTRY: dict[str, MRTask] = _entries(
    # L0: operate
    MRTask("L0_physio_trigger", ROW_EDIT, "trigger", protocol="cine_4ch", value="ecg"),
    MRTask("mr_drag_coronal_to_viewport2_v1", VIEWER, "load_image", image="coronal", viewport=2),
    MRTask("mr_rename_sequence_4ch_v1", ROW_EDIT, "rename", protocol="cine_4ch", value="4ch"),
    MRTask("mr_select_transverse_viewport_v1", VIEWER, "activate", image="transverse"),
    MRTask("mr_show_shim_box_v1", VIEWER, "shim_box"),
    # L1: follow a workflow
    MRTask("L2a_first_acquisition", QUEUE_RUN, "first_acquisition", protocol="localizer_3plane"),
    MRTask("L2a_graphics_display_mode", VIEWER, "graphics", image="transverse", value="all"),
    MRTask("L2a_queue_mutation", QUEUE_RUN, "queue_order", order=("cine_2ch", "cine_4ch", "cine_sax")),
    MRTask("L2a_skip_row", QUEUE_RUN, "skip", protocol="cine_2ch"),
    MRTask("mr_repeat_and_open_v1", ROW_EDIT, "repeat_open", protocol="cine_4ch"),
    # L2: judge, expressed by the consequence
    MRTask("L1_go_availability", JUDGEMENT, "go_availability", blocked_trigger="pulse"),
    MRTask("L1_idle_or_scanning", JUDGEMENT, "idle_or_scanning"),
    MRTask("mr_renal_acquisition_adequacy_v2", JUDGEMENT, "renal_adequacy", protocol="t2_haste_cor"),
    MRTask("mr_select_sequence_v1", JUDGEMENT, "select_sequence"),
    MRTask("mr_select_transverse_image_only_v1", VIEWER, "select_image", image="transverse"),
)
