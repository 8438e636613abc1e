"""The correct answer of an MR episode as named parts (issue 21: runner/headless/shortcut.answers).

Moved out of scoring/registry/mr.py so the registry stays plain data: the hooks read the registry's
thresholds and the MR oracles' measures.
"""
from __future__ import annotations

from scoring.registry.mr import INDICATION_PROTOCOL, MAPPING, PLANNING, RENAL_MIN_COVERAGE, MRTask


# ---- issue 21: each episode's correct answer as named parts (runner/headless/shortcut.answers) ------------
# The non-planning families (judgements, viewer pick, mapping, stopped-row retry). A judgement's part is the
# categorical choice the oracle rewards (tolerance None); a mapping task's parts are the target slice and
# timing with the oracle's tolerance for each (scoring/oracles/mr_mapping.answer_parts).
def _answers_other(task: MRTask, state: dict, ops: list) -> dict:
    """The correct answer of one episode of a non-planning MR task, read from its state dump and the
    subject's anatomy (never from the reference's operations)."""
    from scoring.answers import Answer

    start = state["start"]
    rows = start["queue"]
    if task.kind == "go_availability":
        target = next(r for r in rows if r["status"] == "pending")
        blocked = not start["ecg_signal"] and target["params"]["trigger"] == "ecg"
        return {"consequence": Answer(f"switch_to_{task.blocked_trigger}_then_start" if blocked else "start")}
    if task.kind == "idle_or_scanning":
        return {"consequence": Answer("wait_then_start" if start["scanner_busy"] else "start_now")}
    if task.kind == "renal_adequacy":
        from scoring.oracles.mr import kidney_coverage
        from scoring.subject_oracle import load_oracle

        renal = next(r for r in rows if r["protocol"] == task.protocol and r["status"] == "done")
        series = next(r for r in state["queue"] if r["uid"] == renal["uid"])["series"]
        cov = kidney_coverage(state, load_oracle(state["subject"]), series)
        return {"consequence": Answer("accept" if min(cov.values()) >= RENAL_MIN_COVERAGE else "repeat")}
    if task.kind == "select_sequence":
        return {"protocol": Answer(INDICATION_PROTOCOL[start["indication"]])}
    if task.kind == "select_image":
        from scoring.oracles.mr import localizer_image_index

        want = localizer_image_index(state, task.image)
        shown = [(e["series"], e["image"]) for e in state["series_list"]]
        # the answer is where the image sits in the series list (what a click picks), not its identity; a
        # localizer plane's entry shows its middle slice (localizer_image_index)
        return {"list_position": Answer(str(shown.index(tuple(want)) + 1))}
    if task.family == MAPPING:
        from scoring.oracles.mr_mapping import answer_parts

        return {k: Answer(v, tol) for k, (v, tol) in answer_parts(task, state).items()}
    raise NotImplementedError(f"no answers for MR task kind {task.kind!r}")


def answers(task: MRTask, state: dict, ops: list) -> dict:
    """issue 21 hook: the episode's correct answer as named parts {name: Answer}: geometry planning from
    scoring/oracles/mr_planning.py, every other family from `_answers_other`."""
    if task.family == PLANNING:
        return _answers_planning(task, state, ops)
    return _answers_other(task, state, ops)


def _answers_planning(task: MRTask, state: dict, ops: list) -> dict:
    from scoring.oracles.mr_planning import planning_answers

    return planning_answers(task, state, ops)
