# The two commands of the README. Both start with the idempotent bootstrap.
.PHONY: bootstrap demo test test-fast bench clean

PY := .venv/bin/python

bootstrap:
	bash scripts/bootstrap.sh

demo: bootstrap
	$(PY) -m runner.cli demo --out results/demo

# Two lanes: the fast lane (no Xvfb: pure modules, headless drivers; under 2 minutes) first, then the
# display lane and the headless cohort sweep. The subject cohort is built once per machine (~/.cache/medimageos).
test: bootstrap
	$(PY) -m pytest -q -p no:cacheprovider -m "not display and not cohort_sweep" tests
	$(PY) -m pytest -q -p no:cacheprovider -m "display or cohort_sweep" tests

test-fast: bootstrap
	$(PY) -m pytest -q -p no:cacheprovider -m "not display and not cohort_sweep" tests

bench: bootstrap
	$(PY) -m runner.cli bench

clean:
	rm -rf results .pytest_cache
