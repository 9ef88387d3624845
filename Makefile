# make build: set up .venv if needed and publish the sample catalogue to site/api/v1/
# make test:  set up .venv if needed and run the whole test suite
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: build check test golden clean

build: $(STAMP)
	$(BIN)/catalogue build --data data --out site

check: $(STAMP)
	$(BIN)/catalogue check --data data

test: $(STAMP)
	$(BIN)/python -m pytest -q

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

clean:
	rm -rf $(VENV) site

# Rewrite tests/golden/ from the sample data: only on purpose, after reading the diff.
golden: $(STAMP)
	$(BIN)/python tests/golden_files.py
