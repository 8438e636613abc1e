"""MR console: exam queue, protocol library, series and viewports (model pure; view in Qt)."""
