# nasfilter developer targets. Everything works from a fresh clone with only Python 3.10+.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: install test lint typecheck pytest demo bench clean

install: $(STAMP)

$(STAMP): setup.cfg pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[test]"
	# xautodl 1.0.0 pins numpy<=1.19.5, which cannot build on current Pythons (FACTS §8).
	$(BIN)/python -m pip install --quiet --no-deps xautodl==1.0.0
	touch $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check nasfilter tests benchmarks examples

typecheck: $(STAMP)
	$(BIN)/mypy

pytest: $(STAMP)
	$(BIN)/python -m pytest -q

test: lint typecheck pytest

demo: $(STAMP)
	$(BIN)/nasfilter demo

bench: $(STAMP)
	$(BIN)/python -m benchmarks

clean:
	rm -rf $(VENV) build dist *.egg-info .mypy_cache .ruff_cache .pytest_cache
