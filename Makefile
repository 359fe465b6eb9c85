# nasfilter developer targets. From a fresh clone with Python 3.10+; `make test` also needs a
# headless Chromium (installed below with apt-get, as root, when missing).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
CORE   := $(VENV)/.core

.PHONY: install core browser test test-fast lint typecheck pytest demo bench docs readme clean

install: $(STAMP)

# The core install (numpy, scipy, tqdm: `pip install nasfilter`), all that `make demo` needs.
core: $(CORE)

$(CORE): setup.cfg pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -c constraints.txt -e .
	touch $(CORE)

# Everything, on top of the core: every extra the tests exercise.
$(STAMP): $(CORE)
	# The test extra includes the survey's timm; constraints.txt pins the torchvision built for the
	# pinned CPU torch (nasfilter.survey.timm_import handles its CUDA-only C ops; docs/survey.md).
	$(BIN)/python -m pip install --quiet -c constraints.txt -e ".[test]"
	# xautodl 1.0.0 pins numpy<=1.19.5, which cannot build on current Pythons (docs/facts.md §8).
	$(BIN)/python -m pip install --quiet --no-deps xautodl==1.0.0
	touch $(STAMP)

lint: $(STAMP)
	$(BIN)/ruff check nasfilter tests benchmarks examples scripts

typecheck: $(STAMP)
	$(BIN)/mypy

# The report's browser test drives Debian's chromium; install it when it is missing (needs root).
browser:
	@command -v "$${NASFILTER_CHROMIUM:-chromium}" >/dev/null 2>&1 || { \
	  echo "installing Debian's chromium for the browser test (apt-get)"; \
	  (apt-get update -qq && apt-get install -y -qq chromium >/dev/null) || { \
	    echo "could not install chromium (apt-get needs root): run 'apt-get update && apt-get install -y chromium' as root, or set NASFILTER_CHROMIUM to a Chromium binary"; exit 1; }; }

pytest: $(STAMP) browser
	$(BIN)/python -m pytest -q

test: lint typecheck pytest

# The quick loop while working (no browser needed): leaves out the tests marked slow, browser
# or ray (pyproject.toml lists the markers; docs/testing.md says what each covers), in two
# processes (pytest-xdist), one per core of these machines.
test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 -m "not slow and not browser and not ray"

# The core only: the demo names the peers it leaves out for a missing extra (Optuna's).
demo: $(CORE)
	$(BIN)/nasfilter demo

bench: $(STAMP)
	$(BIN)/python -m benchmarks

# Regenerate the generated docs (docs/cli.md from the argparse parser); tests check they match.
docs: $(STAMP)
	$(BIN)/python scripts/gen_cli_docs.py

# Rerun `nasfilter reproduce` and rewrite the README's results section and docs/img/.
readme: $(STAMP)
	$(BIN)/python scripts/update_readme.py

clean:
	rm -rf $(VENV) build dist *.egg-info .mypy_cache .ruff_cache .pytest_cache
