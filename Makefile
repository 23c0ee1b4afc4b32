# Every target sets itself up: it creates .venv if missing and installs what it needs.
PYTHON ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP_DEV := $(VENV)/.installed-dev
STAMP_DEMO := $(VENV)/.installed-demo
STAMP_DOCS := $(VENV)/.installed-docs
STAMP_BENCH := $(VENV)/.installed-bench
TRAJECTORIES ?= ../shared/data/trajectories

.PHONY: test lint typecheck pytest demo docs bench clean

# Editable installs in setuptools' strict mode: a tree of links under build/ that static tools
# (mypy, pyright) read as an installed package, which the default import hook is not. A new
# module joins the tree at the next install, so the folders (whose times change when a file
# is added) are prerequisites.
EDITABLE := --config-settings editable_mode=strict
# No byte-compiling of every installed module (about 15,000 files, half a minute of CPU):
# Python compiles the ones a run imports, once, on first import.
INSTALL := $(BIN)/python -m pip install --quiet --no-compile $(EDITABLE)
SOURCE_DIRS := $(shell find sdk backends sandbox -type d -not -name __pycache__)

$(BIN)/python:
	$(shell command -v $(PYTHON) >/dev/null 2>&1 && echo $(PYTHON) || echo python3) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP_DEV): $(BIN)/python pyproject.toml Makefile $(SOURCE_DIRS)
	$(INSTALL) -e '.[dev]'
	touch $@

$(STAMP_DEMO): $(BIN)/python pyproject.toml
	$(INSTALL) -e '.[demo]'
	touch $@

$(STAMP_BENCH): $(BIN)/python pyproject.toml
	$(INSTALL) -e '.[bench]'
	touch $@

$(STAMP_DOCS): $(BIN)/python pyproject.toml
	$(INSTALL) -e '.[docs]'
	touch $@

demo: $(STAMP_DEMO)
	$(BIN)/ctxfs demo

# The configuration reference is generated from the pydantic models, then the site is built
# into site/ (gitignored); --strict turns every warning (a broken link, a page missing from
# the nav) into an error.
docs: $(STAMP_DOCS)
	$(BIN)/python docs/gen_config_reference.py
	$(BIN)/mkdocs build --strict

# Side by side with Deep Agents and LangChain on the recorded runs (make bench TRAJECTORIES=DIR),
# then one synthetic thread of 50,000 messages (compaction and summary cost, index and
# checkpoint size as the thread grows), then long-term retrieval over the runs' transcripts.
bench: $(STAMP_BENCH)
	@test -d "$(TRAJECTORIES)" || { echo "make bench replays recorded agent runs: no folder" \
		"$(TRAJECTORIES); run make bench TRAJECTORIES=<a folder of *.jsonl traces>" \
		"(the format: docs/cli.md, 'The trace format')"; exit 2; }
	$(BIN)/python benchmarks/bench_side_by_side.py --trajectories $(TRAJECTORIES) $(BENCH_ARGS)
	$(BIN)/python benchmarks/bench_scale.py
	$(BIN)/python benchmarks/bench_memory.py --trajectories $(TRAJECTORIES)

lint: $(STAMP_DEV)
	$(BIN)/ruff check sdk backends sandbox tests examples benchmarks
	$(BIN)/ruff format --check sdk backends sandbox tests examples benchmarks

# mypy cannot follow setuptools' package-dir mapping (ctxfs -> sdk/, ctxfs.backends ->
# backends/, ...), so it checks a tree of symlinks laid out as the installed package; the
# examples and the docs' Python blocks (one module per page) are checked as strictly. Its
# cache stays outside the tree, which is made anew each time: a second run reads it.
SHIM := $(VENV)/typeshim
MYPY := $(CURDIR)/$(BIN)/mypy --config-file $(CURDIR)/pyproject.toml --cache-dir $(CURDIR)/.mypy_cache
typecheck: $(STAMP_DEV)
	rm -rf $(SHIM) && mkdir -p $(SHIM)/ctxfs
	for entry in sdk/*; do ln -s "$(CURDIR)/$$entry" $(SHIM)/ctxfs/; done
	ln -s "$(CURDIR)/backends" $(SHIM)/ctxfs/backends
	ln -s "$(CURDIR)/sandbox" $(SHIM)/ctxfs/sandbox
	$(BIN)/python docs/gen_doc_modules.py $(SHIM)/docs >/dev/null
	cd $(SHIM) && $(MYPY) -p ctxfs
	cd $(SHIM) && $(MYPY) $(CURDIR)/examples/*.py docs/*.py

# Two workers: the slow tests wait on subprocesses and the S3 server more than on a core;
# worksteal: a worker that runs out takes queued tests from the other, so a few long tests
# near the end do not leave one core idle.
pytest: $(STAMP_DEV)
	$(BIN)/python -m pytest -q -n 2 --dist worksteal

test: lint typecheck pytest

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .mypy_cache .ruff_cache
