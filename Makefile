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

# constraints.txt pins the torch and torchvision the tests run on (setup.cfg asks for ranges).
$(BIN)/focus-eval: setup.cfg pyproject.toml constraints.txt
	$(call STAGE,creating $(VENV) with $(PYTHON),$(PYTHON) -m venv $(VENV))
	$(call STAGE,upgrading pip,$(BIN)/python -m pip install --upgrade pip)
	$(call STAGE,installing focus-eval and its test dependencies (torch included: several minutes the first time),$(BIN)/python -m pip install -c constraints.txt -e '.[test]')
	@touch $@

.PHONY: install demo demo-full test test-fast browser
install: $(BIN)/focus-eval

# DEMO_ARGS: more `focus-eval demo` options, e.g. DEMO_ARGS="--models efficientnet-lite0,tiny-vit --n-boot 100"
demo: install
	$(BIN)/focus-eval demo --out demo-out $(DEMO_ARGS)

# The demo, then the fragility runs on its synthetic data (docs/ROBUSTNESS.md), three models per analysis so that
# each section of the Fragility page judges a ranking, their reports and the site again. Each step says when it
# starts and how long it took, and each run shows its own progress. About a quarter of an hour on 2 cores after
# the demo (16 CPU-minutes measured).
DEMO_RUN = $(BIN)/focus-eval --data-root demo-out/data --output-path demo-out/results --cache-dir demo-out/cache
DEMO_CORRUPTIONS = blur,jpeg:3,illumination:3,exposure:3,rotation:3
DEMO_FRACTIONS = 0.1,0.5,1
FRAGILITY = @t=$$(date +%s); echo "[demo-full] $$(date +%T) $(1): $(2)"; \
	for m in $(2); do $(DEMO_RUN) --model $$m $(3) || exit 1; done; \
	echo "[demo-full] $$(date +%T) $(1): done in $$(( $$(date +%s) - t )) s"
demo-full: demo
	$(call FRAGILITY,1/4 prompt paraphrases,tiny-medgemma tiny-qwen-vl tiny-llava-next,--tasks '*_synth_*' --prompt-variants all)
	$(call FRAGILITY,2/4 image corruptions,efficientnet-lite0 tiny-vit tiny-clip,--tasks '*_synth_*' --corruptions $(DEMO_CORRUPTIONS))
	$(call FRAGILITY,3/4 label budgets,efficientnet-lite0 tiny-vit tiny-clip,--tasks '*_synth_*' --methods linear_probe --train-fraction $(DEMO_FRACTIONS) --train-seeds 3)
	$(call FRAGILITY,4/4 label rules,efficientnet-lite0 tiny-vit tiny-clip,--tasks 'referable_dr_synth_*' --label-rules all)
	@for r in prompt-sensitivity corruptions label-efficiency label-rule-sensitivity; do \
	  echo "[demo-full] $$(date +%T) report $$r"; $(BIN)/focus-eval report $$r demo-out/results || exit 1; done
	$(BIN)/focus-eval leaderboard demo-out/results -o demo-out/site --thumbnails --data-root demo-out/data

# The browser tests drive Debian's Chromium through Playwright (never `playwright install`).
browser:
	@command -v chromium >/dev/null 2>&1 || { apt-get update -qq && apt-get install -y -qq chromium >/dev/null; }

# The tests run in parallel, one test file per worker at a time (pytest-xdist): TEST_JOBS workers, by default one
# per CPU core up to 4. TEST_JOBS=0 runs them in this one process.
TEST_JOBS ?= $(shell n=$$(nproc 2>/dev/null || echo 1); [ $$n -gt 4 ] && n=4; echo $$n)
PYTEST = $(BIN)/python -m pytest -q $(if $(filter 0,$(TEST_JOBS)),,-n $(TEST_JOBS) --dist loadfile)

test: install browser
	$(PYTEST)

test-fast: install
	$(PYTEST) -m "not slow"
