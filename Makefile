# Two entry points for users: `make run` and `make test`. Both create .venv when needed.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
OUT    ?= var/simulated
HOST   ?= 127.0.0.1
PORT   ?= 8000

.PHONY: run test lint bench clean

$(STAMP): pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# Train a quick champion when none is registered, simulate a few field bundles to upload, then start
# the service on embedded defaults (SQLite, embedded queue, under var/); it prints its URL.
run: $(STAMP)
	$(VENV)/bin/vsandx train --quick --if-missing
	$(VENV)/bin/vsandx simulate --profile field -n 8 --out $(OUT)/field --seed 1 --quiet
	@echo "example bundles to upload: $(OUT)/field/*.tgz"
	$(VENV)/bin/vsandx serve --host $(HOST) --port $(PORT)

test: $(STAMP)
	$(PY) -m pytest -n auto --dist loadfile

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy vsandx pipeline data models training diagnosis service cli

bench: $(STAMP)
	$(PY) benchmarks/bench_simulate.py

clean:
	rm -rf var .pytest_cache .mypy_cache .ruff_cache
