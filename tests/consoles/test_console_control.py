"""The control socket of a real console under Xvfb, and pixel probes of the VTK viewport mapping."""
from __future__ import annotations


from runner.actions import Action
from runner.capture import ScreenCapture
from runner.console_process import ConsoleProcess
from runner.xinput import open_input


def _click(inp, con, rect, advance=0.5):
    x, y, w, h = rect
    inp.perform(Action("click", x=x + w // 2, y=y + h // 2))
    return con.settle(advance)


def test_hello_geometry_state_advance_and_quit(display):
    con = ConsoleProcess(display, "ct", "ct_ui_smoke_routine", "dev", 0)
    hello = con.start()
    try:
        assert hello["viewport"] == [1280, 800] and hello["window_id"] > 0
        assert {"hello", "settle", "advance", "state", "geometry", "quit"} <= set(hello["commands"])
        g = con.geometry()
        assert g["screen"] == [1280, 800]
        for name in ("load_protocol", "acquire_scout", "confirm_plan", "scan", "start_field", "scout_ap",
                     "protocol_item:chest_routine"):
            x, y, w, h = g["geometry"][name]
            assert 0 <= x and 0 <= y and x + w <= 1280 and y + h <= 800 and w > 0 and h > 0, name
        assert con.state()["sim_time"] == 0.0
        assert con.request("advance", seconds=2.5)["sim_time"] == 2.5
        assert con.settle(0.5) == 3.0
        bad = None
        try:
            con.request("advance", seconds=-1)
        except Exception as exc:  # noqa: BLE001
            bad = str(exc)
        assert bad and "must be >= 0" in bad
    finally:
        con.stop()
    assert not con.alive()


def test_range_box_is_drawn_where_the_exported_transform_says(display):
    """Pixel probe: the yellow top edge of the range box lies on the row the transform predicts."""
    con = ConsoleProcess(display, "ct", "ct_ui_smoke_routine", "dev", 0)
    con.start()
    inp = open_input(display.name)
    cap = ScreenCapture(display.name)
    try:
        geo = con.geometry()["geometry"]
        for name in ("protocol_item:chest_routine", "load_protocol", "acquire_scout"):
            _click(inp, con, geo[name])
        con.settle(5.0)  # scout finishes in simulated time
        st = con.state()
        assert st["scout"]["status"] == "done"
        g = con.geometry()
        t = g["transforms"]["scout_ap"]
        y = int(round(t["ay"] * st["plan"]["start_mm"] + t["by"]))
        x0, _, w, _ = g["geometry"]["scout_ap"]
        rgb = cap.grab_rgb().astype(int)
        band = rgb[y - 1:y + 2, x0:x0 + w]  # the row across the viewport: the edge spans the scout's width
        yellow = (band[..., 0] > 200) & (band[..., 1] > 170) & (band[..., 2] < 120)
        assert yellow.any(axis=0).sum() > 100, f"no yellow range edge near row {y}"  # a line, not a label
        far = rgb[y + 30, x0 + 130:x0 + 140]
        assert not ((far[:, 0] > 200) & (far[:, 1] > 170) & (far[:, 2] < 120)).any()
        # dragging the edge by 40 px moves the plan by 40 px / (px per mm)
        edge = g["geometry"]["scout_ap.range_start_edge"]
        ex, ey = edge[0] + edge[2] // 2, edge[1] + edge[3] // 2
        before = st["plan"]["start_mm"]
        inp.perform(Action("drag", x=ex, y=ey, x2=ex, y2=ey + 40))
        con.settle(1.0)
        after = con.state()["plan"]["start_mm"]
        assert abs((before - after) - 40 / t["ax"]) < 1.5 / t["ax"] + 0.11
    finally:
        cap.close()
        inp.close()
        con.stop()


def _maps_pydantic(pid: int) -> bool:
    with open(f"/proc/{pid}/maps") as f:
        return "_pydantic_core" in f.read()


def test_a_runner_console_runs_the_handed_over_card_without_the_card_schema(display):
    """The runner validates the card and hands it over (--card-json, reset's card): the console
    process never loads pydantic (about 10 MiB per console), before or after a reset."""
    con = ConsoleProcess(display, "ct", "ct_ui_smoke_routine", "dev", 0)
    con.start()
    try:
        assert not _maps_pydantic(con.proc.pid)
        con.reset("ct_kub_low_dose_constraint", "dev", 3)
        prov = con.state()["provenance"]
        assert (prov["task"], prov["seed"], prov["console_start"]) == ("ct_kub_low_dose_constraint", 3, "reset")
        assert not _maps_pydantic(con.proc.pid)
    finally:
        con.stop()
