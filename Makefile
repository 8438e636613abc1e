# The two commands of the README. Both start with the idempotent bootstrap.
.PHONY: bootstrap demo test test-fast test-display sweep bench clean

PY := .venv/bin/python

bootstrap:
	bash scripts/bootstrap.sh

demo: bootstrap
	$(PY) -m runner.cli demo --out results/demo

# Two lanes, each printing its 15 slowest tests: the fast lane over 2 pytest-xdist workers (no Xvfb:
# pure modules, headless drivers, the stratified headless reference sample of every card on every cohort
# subject; CPU-bound, and CI has 2 cores), then the display lane over 4 workers, one Xvfb each (real
# consoles: a display test waits on consoles, servers and deadlines for about half its time, so 4 workers
# keep 2 cores busy; measured 9 min 12 s with 2 workers, 6 min 25 s with 4, beside one other job).
# No test may take over 120 s (pyproject.toml). The subject cohort is built once per machine
# (~/.cache/medimageos). The full cohort sweep is `make sweep`, not part of `make test`.
PYTEST := $(PY) -m pytest -q -p no:cacheprovider --dist worksteal --durations=15
FAST_WORKERS := -n 2
DISPLAY_WORKERS := -n 4
FAST_LANE := -m "not display and not cohort_sweep"
DISPLAY_LANE := -m "display and not cohort_sweep"

test: bootstrap
	$(PYTEST) $(FAST_WORKERS) $(FAST_LANE) tests
	$(PYTEST) $(DISPLAY_WORKERS) $(DISPLAY_LANE) tests

test-fast: bootstrap
	$(PYTEST) $(FAST_WORKERS) $(FAST_LANE) tests

test-display: bootstrap
	$(PYTEST) $(DISPLAY_WORKERS) $(DISPLAY_LANE) tests

# Before a release: the headless reference on every card x s01..s30 x seeds 0-2 (4,410 episodes),
# one test per subject, over 2 workers; that the shortcut detector's cohort medians (tasks/cohort_medians.json)
# are current; then the random-action soak tests at 1000 actions each.
sweep: bootstrap
	$(PY) -m pytest -q -p no:cacheprovider -n 2 --durations=15 -m cohort_sweep tests/test_conformance.py
	$(PY) -m runner.cli tasks medians --check
	MEDIMAGEOS_SOAK_ACTIONS=1000 $(PYTEST) $(DISPLAY_WORKERS) -m "soak and not cohort_sweep" tests

bench: bootstrap
	$(PY) -m runner.cli bench

.PHONY: docs
docs:
	$(PY) -m mkdocs build --strict -d site

clean:
	rm -rf results .pytest_cache
