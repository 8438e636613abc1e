"""consoles.common.view_base and the parameter-card builder on a real X display (in a subprocess)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.display
ROOT = Path(__file__).resolve().parents[2]

PROBE = r'''
import json
from consoles.common import determinism
determinism.apply_environment()
from PySide6 import QtCore, QtWidgets
app = QtWidgets.QApplication([])
from consoles.common.model_base import ConsoleModelBase, Rule
from consoles.common.params import Parameter
from consoles.common.view_base import ConsoleViewBase, by_role

IDLE = Rule((lambda m: m.status == "idle", "Cannot change parameters while scanning."))


class Model(ConsoleModelBase):
    def __init__(self):
        super().__init__("t", "dev", 0)
        self.status, self.kv, self.pitch = "idle", 120.0, 1.0
        self.declare([Parameter("kv", "Tube voltage", "kV", 70, 150, 0, 10, IDLE, set=lambda m, v: m.set("kv", v)),
                      Parameter("pitch", "Pitch", "", 0.2, 1.5, 2, 0.05, IDLE, set=lambda m, v: m.set("pitch", v))])

    def set(self, name, v):
        p = self.parameters[name]
        self._require_rule(p.enabled_when)
        setattr(self, name, p.clamp(v))


class View(ConsoleViewBase):
    def __init__(self, model):
        super().__init__(model, 400, 500)
        lay = QtWidgets.QVBoxLayout(self.central)
        self.card = self.parameter_card(["kv", ("Readout", QtWidgets.QLabel("x")), "pitch"])
        lay.addLayout(self.card.layout)
        self.rows = self._name("rows", QtWidgets.QListWidget())
        for pid in ("chest", "abdomen"):
            it = QtWidgets.QListWidgetItem(pid.title())
            it.setData(QtCore.Qt.ItemDataRole.UserRole, pid)
            self.rows.addItem(it)
        self._name_items("row", self.rows, by_role())
        self.queue = self._name("queue", QtWidgets.QTableWidget(3, 2))
        self._name_items("queue_row", self.queue)
        lay.addWidget(self.rows)
        lay.addWidget(self.queue)
        self._refresh_panel()


m = Model()
v = View(m)
v.central.show()
for _ in range(3):
    app.processEvents()
out = {"names": sorted(v.named_widgets()), "targets": v.named_targets()}
kv = v.card.field("kv")
out["kv_text"] = kv.text()
kv.setText("133.6")
kv.editingFinished.emit()  # the user typed and pressed Enter
out["kv_after_commit"] = m.kv
m.status = "scanning"
v._do(m.set, "kv", 90)  # refused: the reason lands in the message, the view refreshes
out["message"] = m.message
out["kv_enabled_when_scanning"] = kv.isEnabled()
m.status, m.pitch = "idle", 0.5
v.refresh_cards()
out["pitch_text"] = v.card.field("pitch").text()
out["kv_enabled_when_idle"] = kv.isEnabled()
out["queue_rect_0"] = [v.queue.viewport().mapToGlobal(QtCore.QPoint(0, 0)).y() + v.queue.visualRect(
    v.queue.model().index(0, 0)).y()]
out["cell_w"] = v.queue.columnWidth(0)
print(json.dumps(out))
'''


def test_view_base_names_items_cards_and_refusals(display):
    env = dict(os.environ, DISPLAY=display.name)
    proc = subprocess.run([sys.executable, "-c", PROBE], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=120)
    assert proc.returncode == 0, proc.stderr[-2000:]
    out = json.loads(proc.stdout.strip().splitlines()[-1])
    assert {"kv_field", "pitch_field", "rows", "queue"} <= set(out["names"])
    t = out["targets"]
    assert set(t) == {"row:chest", "row:abdomen", "queue_row:0", "queue_row:1", "queue_row:2"}
    assert t["row:abdomen"][1] > t["row:chest"][1] and t["row:chest"][2] > 0
    # a table row spans both columns: wider than one cell, same top as its first cell
    assert t["queue_row:0"][1] == out["queue_rect_0"][0] and t["queue_row:1"][1] > t["queue_row:0"][1]
    assert t["queue_row:0"][2] >= 2 * out["cell_w"] - 1
    # the field holds the number only; its unit is a label beside it (consoles/common/widgets.NumberField)
    assert out["kv_text"] == "120" and out["kv_after_commit"] == 134.0
    assert out["message"] == "Cannot change parameters while scanning."
    assert out["kv_enabled_when_scanning"] is False and out["kv_enabled_when_idle"] is True
    assert out["pitch_text"] == "0.50"
