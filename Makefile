# docreview: `make run` reviews generated sample contracts offline; `make test` runs the tests.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
BIN    := $(VENV)/bin

.PHONY: run test bench install clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install -qq --upgrade pip
	$(PY) -m pip install -qq -e '.[dev]'
	touch $@

install: $(VENV)/.installed

run: install
	$(BIN)/docreview samples inbox
	$(BIN)/docreview review inbox --out out

test: install
	$(PY) -m pytest

bench: install
	$(PY) -m benchmarks

clean:
	rm -rf out inbox inbox-ground-truth.json docreview.db docreview.db-wal docreview.db-shm
