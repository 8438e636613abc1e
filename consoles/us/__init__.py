"""Ultrasound console: probe pose, live B-mode, presets and controls, freeze, calipers, annotation, exam strip
(model pure; the Qt view is still to come, see issue 13)."""
