# The two commands of the README. Both start with the idempotent bootstrap.
.PHONY: bootstrap demo test test-fast test-display sweep bench clean

PY := .venv/bin/python

bootstrap:
	bash scripts/bootstrap.sh

demo: bootstrap
	$(PY) -m runner.cli demo --out results/demo

# Two lanes, each printing its 15 slowest tests, after the subject cohort is built once (in 2 processes, under
# a file lock: tests/rendering/subject_cache.py; ~/.cache/medimageos, reused while the generator version
# holds). The fast lane runs over 2 pytest-xdist workers (no Xvfb: pure modules, headless drivers, widget
# tests on Qt's offscreen platform, the stratified headless reference sample, the shortcut detector's fixed
# script and constant answer; CPU-bound, and CI has 2 cores); then the display lane over DISPLAY_WORKERS
# workers, one Xvfb each (real consoles: a display test waits on consoles, servers and deadlines for part of
# its time). Per-test limit 120 s (pyproject.toml); no test is meant to come near it (docs/development.md).
# Full-cohort work and the detector's answer-spread check are in `make sweep`, the container lane in
# `make test-containers`; neither is part of `make test`.
PYTEST := $(PY) -m pytest -q -p no:cacheprovider --dist worksteal --durations=15
FAST_WORKERS := -n 2
DISPLAY_WORKERS := -n 4
FAST_LANE := -m "not display and not cohort_sweep and not containers"
DISPLAY_LANE := -m "display and not cohort_sweep and not containers"
SUBJECTS := $(PY) -c "from tests.rendering.subject_cache import session_cache; session_cache()"

test: bootstrap
	$(SUBJECTS)
	$(PYTEST) $(FAST_WORKERS) $(FAST_LANE) tests
	$(PYTEST) $(DISPLAY_WORKERS) $(DISPLAY_LANE) tests

test-fast: bootstrap
	$(SUBJECTS)
	$(PYTEST) $(FAST_WORKERS) $(FAST_LANE) tests

test-display: bootstrap
	$(SUBJECTS)
	$(PYTEST) $(DISPLAY_WORKERS) $(DISPLAY_LANE) tests

# Before a release: the headless reference on every card x s01..s30 x seeds 0-2 (4,410 episodes),
# one test per subject, over 2 workers, the shortcut detector's answer-spread check on its 16-pair
# sample and the goal-boundary checks on every cohort subject (CCTA landmark, literal 4-chamber plan);
# that the detector's cohort medians (tasks/cohort_medians.json) are current; the visibility figure on every
# measured card and cohort episode (docs/visibility.md; fails naming each boundary under CNR 3); the per-card GUI episodes
# `make test` samples (MR reference on cohort subjects, random agent: tests/runner/baselines.py); then
# the random-action soak tests at 1000 actions each.
sweep: bootstrap
	$(PY) -m pytest -q -p no:cacheprovider -n 2 --durations=15 -m cohort_sweep tests/test_conformance.py tests/test_shortcuts.py tests/scoring
	$(PY) -m runner.cli tasks medians --check
	mkdir -p results && $(PY) -m runner.cli tasks visibility --workers 2 --json-out results/visibility.json
	$(PYTEST) $(DISPLAY_WORKERS) -m "display and cohort_sweep" tests/runner
	MEDIMAGEOS_SOAK_ACTIONS=1000 $(PYTEST) $(DISPLAY_WORKERS) -m "soak and not cohort_sweep" tests

bench: bootstrap
	$(PY) -m runner.cli bench

.PHONY: docs
docs:
	$(PY) -m mkdocs build --strict -d site

clean:
	rm -rf results .pytest_cache

# ---------------------------------------------------------------- container image (docker/README.md)
# `make image`: docker/Dockerfile built with docker, or with podman where there is no running docker.
# BASE=... picks the base image; without it the public python:3.11-slim-bookworm is used when it is
# present or can be pulled, else a local Debian bookworm made by scripts/make-offline-base.sh (no
# registry reachable, as on the machine this was written on). `make image-test`: doctor and the
# reference on one CT, one MR and one US card inside the image, compared with this machine's .venv.
# `make test-containers`: tests/containers, a lane of its own (not part of `make test`).
# The engine is found once, and only when one of these targets runs (not on every `make test`).
# podman gets --runtime runc --cgroup-manager cgroupfs: crun refuses hybrid cgroups and there may be no
# systemd (see scripts/make-offline-base.sh, which also sets containers.conf's default_ulimits = []).
IMAGE ?= medimageosworld
PUBLIC_BASE := docker.io/library/python:3.11-slim-bookworm
OFFLINE_BASE := localhost/bookworm-min
# pip inside the build trusts this CA bundle too (a build secret, never in a layer): for networks whose
# HTTPS goes through an intercepting proxy, where the host's pip is configured with PIP_CERT.
CA_BUNDLE ?= $(PIP_CERT)
ENGINE = $(eval ENGINE := $(shell \
  if command -v docker >/dev/null 2>&1 && timeout 20 docker info >/dev/null 2>&1; then echo docker; \
  elif command -v podman >/dev/null 2>&1; then echo "podman --runtime runc --cgroup-manager cgroupfs"; fi))$(ENGINE)

.PHONY: image image-base image-test test-containers
image-base:
	@[ -n "$(ENGINE)" ] || { echo "make image: no container engine (install docker, or podman and runc)" >&2; exit 1; }
	@if [ "$$(id -u)" -eq 0 ] && command -v podman >/dev/null 2>&1; then bash scripts/make-offline-base.sh --setup; fi

image: image-base
	@set -e; base="$(BASE)"; \
	if [ -z "$$base" ]; then \
	  if $(ENGINE) image inspect $(PUBLIC_BASE) >/dev/null 2>&1 || timeout 120 $(ENGINE) pull -q $(PUBLIC_BASE) >/dev/null 2>&1; then \
	    base=$(PUBLIC_BASE); \
	  else \
	    echo "make image: $(PUBLIC_BASE) cannot be pulled (no registry reachable); using $(OFFLINE_BASE)"; \
	    $(ENGINE) image inspect $(OFFLINE_BASE) >/dev/null 2>&1 || CONTAINER_ENGINE="$(ENGINE)" bash scripts/make-offline-base.sh; \
	    base=$(OFFLINE_BASE); \
	  fi; \
	fi; \
	secret=""; if [ -n "$(CA_BUNDLE)" ] && [ -f "$(CA_BUNDLE)" ]; then secret="--secret id=ca_bundle,src=$(CA_BUNDLE)"; fi; \
	echo "make image: $(ENGINE) build, base $$base$${secret:+, CA bundle $(CA_BUNDLE)}"; start=$$(date +%s); \
	$(ENGINE) build --network host --build-arg BASE=$$base $$secret -f docker/Dockerfile -t $(IMAGE) .; \
	echo "make image: $(IMAGE) built in $$(( $$(date +%s) - start )) s, $$($(ENGINE) image inspect $(IMAGE) --format '{{.Size}}') bytes"

image-test: image-base
	$(PY) docker/image_test.py --engine "$(ENGINE)" --image $(IMAGE)

test-containers:
	MEDIMAGEOS_CONTAINER_ENGINE="$(ENGINE)" MEDIMAGEOS_IMAGE=$(IMAGE) \
	  $(PY) -m pytest -q -p no:cacheprovider -m containers tests/containers
