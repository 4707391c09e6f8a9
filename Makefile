# Everything a fresh machine needs: `make run` and `make test` create .venv and install first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
EXAMPLE := examples/session.json

.PHONY: install run test lint format bench clean

install: $(INSTALLED)

$(INSTALLED): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $@

run: install
	@echo "== estimate before"; $(BIN)/ctxpack estimate $(EXAMPLE)
	@echo "== micro: old tool results become markers"
	$(BIN)/ctxpack micro --stats $(EXAMPLE) --no-transcript | $(BIN)/ctxpack estimate

test: install
	$(BIN)/python -m pytest

lint: install
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: install
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

bench: install
	$(BIN)/python bench/run.py

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache .ruff_cache .hypothesis bench/data
