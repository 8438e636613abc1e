# The two commands of the README. Both start with the idempotent bootstrap.
.PHONY: bootstrap demo test bench clean

PY := .venv/bin/python

bootstrap:
	bash scripts/bootstrap.sh

demo: bootstrap
	$(PY) -m runner.cli demo --out results/demo

test: bootstrap
	$(PY) -m pytest -q -p no:cacheprovider tests

bench: bootstrap
	$(PY) -m runner.cli bench

clean:
	rm -rf results .pytest_cache
