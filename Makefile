# The two commands of the README: `make tour` (set up, then run the main job, the lineage tour) and
# `make test`; `make demo` trains one Seq2Seq longer.
# Both create .venv with the CPU build of torch 2.13.0 pinned; the package itself asks only torch>=2.4.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
BIN := $(VENV)/bin
TORCH := torch==2.13.0

.PHONY: tour demo test test-long lint install install-test clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet $(TORCH)
	$(BIN)/pip install --quiet -e .
	touch $@

$(VENV)/.installed-test: pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet $(TORCH)
	$(BIN)/pip install --quiet -e '.[test]'
	touch $(VENV)/.installed $@

install: $(VENV)/.installed
install-test: $(VENV)/.installed-test

tour: install
	$(BIN)/seq2bert tour

demo: install
	$(BIN)/seq2bert demo

lint: install-test
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

test: lint
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q

# the tests marked `long` (minutes each), left out of `make test`; CI runs both
test-long: install-test
	HF_HUB_OFFLINE=1 $(BIN)/python -m pytest -q -m long

clean:
	rm -rf $(VENV) runs
