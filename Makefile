# make build: set up .venv if needed and publish the sample catalogue to site/api/v1/
# make test:  set up .venv if needed and run the whole test suite
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

PORT ?= 8000

comma := ,
BENCH_SIZES := 10000,100000$(if $(BENCH_FULL),$(comma)1000000)

.PHONY: build check test serve bench golden clean

build: $(STAMP)
	$(BIN)/catalogue build --data data --out site

check: $(STAMP)
	$(BIN)/catalogue check --data data

# Serve the built site/ with nginx on 127.0.0.1:$(PORT) until Ctrl-C.
serve: $(STAMP)
	$(BIN)/catalogue serve --site site --port $(PORT)

test: $(STAMP)
	$(BIN)/python -m pytest -q

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $@

clean:
	rm -rf $(VENV) site bench-work

# Full, no-op and one-edit builds of 10K and 100K synthetic books (BENCH_FULL=1: and 1M).
bench: $(STAMP)
	$(BIN)/python benchmarks/bench.py --sizes $(BENCH_SIZES) --workdir bench-work

# Rewrite tests/golden/ from the sample data: only on purpose, after reading the diff.
golden: $(STAMP)
	$(BIN)/python tests/golden_files.py
