# make build: set up .venv if needed (the package alone) and publish the sample catalogue to site/api/v1/
# make test:  set up .venv if needed (with the test extras) and run the whole test suite (and, where
#             npm is, install node_modules/ once, for the tests that run the Cloudflare Worker in workerd)
# make docs:  set up .venv if needed (with the docs extras) and build the documentation strictly into docs-site/
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# One stamp per level of installation, each made once: what a build needs, then the extras.
STAMP := $(VENV)/.installed-build
TEST_STAMP := $(VENV)/.installed-test
DOCS_STAMP := $(VENV)/.installed-docs
NODE_STAMP := node_modules/.installed

PORT ?= 8000
WRITE_PORT ?= 8001
TOKENS ?= write-tokens

comma := ,
BENCH_SIZES := 10000,100000$(if $(BENCH_FULL),$(comma)1000000)

.PHONY: build check test docs serve serve-cloudflare node_modules bench mutation golden screenshots clean

build: $(STAMP)
	@$(BIN)/catalogue build --data data --out site

check: $(STAMP)
	@$(BIN)/catalogue check --data data

# Serve a local build of data/ (links to http://127.0.0.1:$(PORT)/; site/ stays as deployed) with
# nginx, or the built-in server where nginx is not installed, and take writes into data/ with the
# write service on 127.0.0.1:$(WRITE_PORT), until Ctrl-C. The first run makes a token.
serve: $(STAMP)
	@if [ ! -f $(TOKENS) ]; then \
	  echo "A write token (shown once; only its hash is kept in $(TOKENS)):"; \
	  $(BIN)/catalogue token add librarian --tokens $(TOKENS); \
	fi
	$(BIN)/catalogue serve --site site --port $(PORT) --data data --tokens $(TOKENS) --write-port $(WRITE_PORT)

test: $(TEST_STAMP)
	@if command -v npm >/dev/null 2>&1; then $(MAKE) -s node_modules || echo "npm install failed: the Cloudflare Worker tests will skip"; \
	 else echo "npm is not installed: the Cloudflare Worker tests will skip"; fi
	$(BIN)/python -m pytest -q

# The site as the Cloudflare Worker serves it, in workerd (installed into node_modules/ on first use).
serve-cloudflare: $(STAMP) $(NODE_STAMP)
	$(BIN)/catalogue serve --server cloudflare --site site --port $(PORT) --write-port $(WRITE_PORT)

# workerd (the miniflare npm package) and wrangler, at the versions package-lock.json pins (about 370 MB).
node_modules: $(NODE_STAMP)
$(NODE_STAMP): package.json package-lock.json
	@echo "installing node_modules/ (once)"
	@npm ci --no-audit --no-fund --loglevel=error
	@touch $@

# The documentation (mkdocs.yml, docs/), built with every warning an error.
docs: $(DOCS_STAMP)
	$(BIN)/python -m mkdocs build --strict --site-dir docs-site

# Quiet unless something fails (-qq: errors only; the build backend's advice silenced).
$(STAMP): pyproject.toml setup.py
	@echo "setting up $(VENV) (once)"
	@$(PYTHON) -m venv $(VENV)
	@PYTHONWARNINGS=ignore $(BIN)/python -m pip install -qq --upgrade pip
	@PYTHONWARNINGS=ignore $(BIN)/python -m pip install -qq -e .
	@touch $@

$(TEST_STAMP): $(STAMP)
	@echo "installing the test extras into $(VENV) (once)"
	@PYTHONWARNINGS=ignore $(BIN)/python -m pip install -qq -e '.[test]'
	@touch $@

$(DOCS_STAMP): $(STAMP)
	@echo "installing the docs extras into $(VENV) (once)"
	@PYTHONWARNINGS=ignore $(BIN)/python -m pip install -qq -e '.[docs]'
	@touch $@

clean:
	rm -rf $(VENV) node_modules site bench-work docs-site

# Full, no-op and one-edit builds of 10K and 100K synthetic books (BENCH_FULL=1: and 1M), each
# `catalogue build` as a user runs it, against the write floor of the same tree in the same run.
# Then the delay from a POST's 201 to the record being served (sample and 100K books), and
# the requests/s of each server installed on the same files (20K books), the generated nginx
# configuration against a bare nginx on the same page file, and the records/s of
# `catalogue import` from the built-in server (10K books).
# Mutation testing, apart from make test: mutmut's mutants of the modules that decide what
# clients get, one module at a time against its tests (tests/mutation.py; MODULES=... for some,
# MUTATION_REPORT=file for the markdown report), then the project's own one-line mistakes of
# the query engine, Python and its JavaScript twin (tests/mutate.py; ENGINE=... for some,
# SAMPLE=N mutants of each drawn with SEED=S, JOBS=J modules at once), whose scores and
# survivors it writes to mutation-report.md.
mutation: $(TEST_STAMP)
	@status=0; \
	$(BIN)/python tests/mutation.py $(MODULES) $(if $(MUTATION_REPORT),--report $(MUTATION_REPORT)) || status=1; \
	$(BIN)/python tests/mutate.py $(ENGINE) $(if $(SAMPLE),--sample $(SAMPLE)) $(if $(SEED),--seed $(SEED)) $(if $(JOBS),--jobs $(JOBS)) || status=1; \
	exit $$status

bench: $(TEST_STAMP)
	$(BIN)/python benchmarks/bench.py --sizes $(BENCH_SIZES) --workdir bench-work $(if $(FLOOR_WRITER),--floor-writer $(FLOOR_WRITER))
	$(BIN)/python benchmarks/write_delay.py --sizes 0,100000 --workdir bench-work
	$(BIN)/python benchmarks/publish_delay.py --sizes 10000,100000 --workdir bench-work
	$(BIN)/python benchmarks/serve_rate.py --books 20000 --workdir bench-work
	$(BIN)/python benchmarks/nginx_bare.py --books 20000 --workdir bench-work
	$(BIN)/python benchmarks/import_rate.py --books 10000 --workdir bench-work
	$(BIN)/python benchmarks/query_rate.py --books $(if $(BENCH_FULL),1000000 --one-site,100000) --workdir bench-work
	$(BIN)/python benchmarks/term_index.py --books $(if $(BENCH_FULL),1000000,100000) --workdir bench-work

# The README's pictures of the HTML view (docs/screenshots/), taken by the browser test.
screenshots: $(TEST_STAMP)
	CATALOGUE_SCREENSHOTS=docs $(BIN)/python -m pytest -q tests/hosts/test_browser.py

# Rewrite tests/golden/ from the sample data: only on purpose, after reading the diff.
golden: $(TEST_STAMP)
	$(BIN)/python tests/golden_files.py
