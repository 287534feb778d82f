# The commands for a fresh clone (each may be run again: a step does only what is missing):
#   make help   this list (also what bare `make` prints)
#   make demo   set up (venv, sispin, `pin sync`, work/), then run the demo set: output/demo/
#   make test   set up for the tests, then run the whole suite (.ci/run runs this)
#   make test-fast  the fast loop (under a minute): every test that needs neither Sisyphus + i6_core, SLURM, the
#               network nor seconds of its own; no `pin sync`. The markers (real, cluster, network, slow) are set by
#               tests/conftest.py from the fixtures a test uses; docs/development.md says what each means
#   make test-matrix  the version matrix alone (tests/e2e/test_versions.py): the graph commands with a sample of the
#               Sisyphus and i6_core commits a setup may pin, one each side of every change the adapter follows (make
#               test takes its ends only: the pinned, the oldest; CI runs both); MATRIX=all takes every first-parent
#               commit of each since the oldest supported (hours), MATRIX=N every Nth
#   make docs   build the documentation site (site/) with mkdocs --strict
PYTHON ?= python3
VENV ?= .venv
PYTEST_ARGS ?=
# the tests of make test-fast: all but those marked (by tests/conftest.py) as needing more than sispin and git
FAST = not real and not cluster and not network and not slow
# pytest-xdist: -n auto is a worker per core and one more (tests/conftest.py says why); with worksteal an idle worker
# takes tests queued for another
XDIST = -n auto --dist worksteal
# pip says what it fetches and installs, a line a package (a rerun that has everything prints none of its
# "Requirement already satisfied" lines); pipefail keeps pip's exit status through the filter
SHELL := bash
.SHELLFLAGS := -o pipefail -c
PIP = $(VENV)/bin/python -m pip install --disable-pip-version-check --progress-bar off
SHOWN = | (grep --line-buffered -E '^(Collecting|Installing collected packages|Successfully installed)' || true)

.PHONY: help demo test test-fast test-matrix docs venv
.DEFAULT_GOAL := help
MATRIX ?= sample

help:
	@sed -n '/^[^#]/q; s/^# \{0,1\}//p' $(firstword $(MAKEFILE_LIST))

venv:
	@echo "== virtual environment $(VENV) ($$($(PYTHON) --version))"
	@test -x $(VENV)/bin/python || $(PYTHON) -m venv $(VENV)

demo: venv
	@echo "== install sispin, what the setup needs and the nn_demo set's TensorFlow (the tour builds it): pip install -e '.[setup,nn]'"
	@$(PIP) -e ".[setup,nn]" $(SHOWN)
	@echo "== pin sync: Sisyphus (tools/sisyphus) and i6_core (recipe/i6_core) at their pinned commits; work/"
	@$(VENV)/bin/pin sync
	@mkdir -p work
	@echo "== pin run demo: sis manager on config/demo.py"
	@$(VENV)/bin/pin run demo -- -r
	@echo "== done: output/demo/returnn_common (the pinned checkout) and output/demo/returnn.config"

test: venv
	@echo "== install sispin with the test, setup, nn and docs extras: pip install -e '.[test,setup,nn,docs]'"
	@$(PIP) -e ".[test,setup,nn,docs]" $(SHOWN)
	@echo "== pin sync: Sisyphus and i6_core at their pinned commits (the real ones the tests use)"
	@$(VENV)/bin/pin sync
	@echo "== the suite: python -m pytest -q $(XDIST) $(PYTEST_ARGS)"
	@PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VENV)/bin/python -m pytest -q $(XDIST) $(PYTEST_ARGS)

test-fast: venv
	@echo "== install sispin with the test extras: pip install -e '.[test]'"
	@$(PIP) -e ".[test]" $(SHOWN)
	@echo "== the fast loop: python -m pytest -q $(XDIST) -m \"$(FAST)\" $(PYTEST_ARGS)"
	@PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VENV)/bin/python -m pytest -q $(XDIST) -m "$(FAST)" $(PYTEST_ARGS)

test-matrix: venv
	@echo "== install sispin with the test and setup extras: pip install -e '.[test,setup]'"
	@$(PIP) -e ".[test,setup]" $(SHOWN)
	@echo "== pin sync: Sisyphus and i6_core at their pinned commits (their histories hold the versions sampled)"
	@$(VENV)/bin/pin sync
	@echo "== the version matrix (MATRIX=$(MATRIX)): python -m pytest -q $(XDIST) tests/e2e/test_versions.py"
	@SISPIN_MATRIX="$(MATRIX)" PATH="$(CURDIR)/$(VENV)/bin:$$PATH" $(VENV)/bin/python -m pytest -q $(XDIST) \
		tests/e2e/test_versions.py $(PYTEST_ARGS)

docs: venv
	@echo "== install mkdocs: pip install -e '.[docs]'"
	@$(PIP) -e ".[docs]" $(SHOWN)
	@echo "== mkdocs build --strict (a broken link or anchor fails it): site/"
	@NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet
