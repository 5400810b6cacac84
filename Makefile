# Two entry points for a fresh machine: `make demo` and `make test`. Both create .venv on first use.
# `make test-fast` leaves out the tests marked slow (the demo, browser, torchrun and end-to-end runs).
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
export HF_HUB_OFFLINE ?= 1
export TRANSFORMERS_OFFLINE ?= 1

# The install says what it is doing: one line per stage with its time, and pip's own lines (a progress bar per
# download on a terminal). A first install fetches torch and its libraries: several minutes.
STAGE = @t=$$(date +%s); echo "[install] $$(date +%T) $(1)"; $(2) && echo "[install] $$(date +%T) $(1): done in $$(( $$(date +%s) - t )) s"

$(BIN)/focus-eval: setup.cfg pyproject.toml
	$(call STAGE,creating $(VENV) with $(PYTHON),$(PYTHON) -m venv $(VENV))
	$(call STAGE,upgrading pip,$(BIN)/python -m pip install --upgrade pip)
	$(call STAGE,installing focus-eval and its test dependencies (torch included: several minutes the first time),$(BIN)/python -m pip install -e '.[test]')
	@touch $@

.PHONY: install demo demo-full test test-fast browser
install: $(BIN)/focus-eval

# DEMO_ARGS: more `focus-eval demo` options, e.g. DEMO_ARGS="--models efficientnet-lite0,tiny-vit --n-boot 100"
demo: install
	$(BIN)/focus-eval demo --out demo-out $(DEMO_ARGS)

# The demo, then the fragility runs on its synthetic data (docs/ROBUSTNESS.md), their reports and the site again.
DEMO_RUN = $(BIN)/focus-eval --data-root demo-out/data --output-path demo-out/results --no-progress
demo-full: demo
	$(DEMO_RUN) --model tiny-medgemma --tasks '*_synth_*' --prompt-variants all
	$(DEMO_RUN) --model efficientnet-lite0 --tasks '*_synth_*' --corruptions blur,jpeg:3,illumination:3,exposure:3,rotation:3
	$(DEMO_RUN) --model efficientnet-lite0 --tasks '*_synth_*' --methods linear_probe --train-fraction 0.1,0.5,1 --train-seeds 3
	$(DEMO_RUN) --model efficientnet-lite0 --tasks 'referable_dr_synth_*' --label-rules all
	for r in prompt-sensitivity corruptions label-efficiency label-rule-sensitivity; do \
	  $(BIN)/focus-eval report $$r demo-out/results || exit 1; done
	$(BIN)/focus-eval leaderboard demo-out/results -o demo-out/site

# The browser tests drive Debian's Chromium through Playwright (never `playwright install`).
browser:
	@command -v chromium >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq chromium >/dev/null; }

test: install browser
	$(BIN)/python -m pytest -q

test-fast: install
	$(BIN)/python -m pytest -q -m "not slow"
