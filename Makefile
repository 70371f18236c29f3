# Two entry points for users: `make run` and `make test`. Both create .venv when needed.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
OUT    ?= var/simulated

.PHONY: run test lint bench clean

$(STAMP): pyproject.toml Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# Simulate a few bundles, train a quick champion when none is registered, diagnose and evaluate.
run: $(STAMP)
	$(VENV)/bin/vsandx simulate --profile lab -n 8 --out $(OUT)/lab --seed 1
	$(VENV)/bin/vsandx simulate --profile field -n 8 --out $(OUT)/field --seed 1
	$(VENV)/bin/vsandx train --quick --if-missing
	$(VENV)/bin/vsandx diagnose $(OUT)/field/field-s1-000000.tgz
	$(VENV)/bin/vsandx evaluate $(OUT)/field

test: $(STAMP)
	$(PY) -m pytest -n auto --dist loadfile

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	$(VENV)/bin/mypy vsandx pipeline data models training service

bench: $(STAMP)
	$(PY) benchmarks/bench_simulate.py

clean:
	rm -rf var .pytest_cache .mypy_cache .ruff_cache
