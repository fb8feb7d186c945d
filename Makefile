# The Quick start commands: `make demo`, `make check` and `make test`.
# Each bootstraps what it needs (a virtualenv in .venv) on a fresh clone.
# CONTRIBUTING.md says what each needs (root, apt, Go, network).

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
AGENT := $(VENV)/.installed-agent
TOOLS := $(VENV)/.installed-test
DEMO := $(BIN)/dnfsmon --config examples/demo.toml

.PHONY: demo lint check test bench clean

# The fast tier: tests that need no root, apt, Go, network, NFS lab or tmux, and take
# at most a second or two each (the markers are declared in pyproject.toml).
FAST_TESTS := not slow and not system and not influx and not prometheus and not lab and not tmux

# The agent alone (what make demo needs), then the test tools on top.
$(AGENT): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --disable-pip-version-check -e .
	touch $@

$(TOOLS): $(AGENT)
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[test]'
	touch $@

## make demo: the agent's main job on the embedded default, then dnfsmon doctor; about 40 s.
demo: $(AGENT)
	rm -rf demo-data
	$(DEMO) collect --count 7 --interval 5
	@echo
	$(DEMO) show
	@echo
	@# The doctor's verdict on the same host and (simulated) database; exit 10/11 only report findings.
	$(DEMO) doctor --interval 5 || [ $$? -ge 10 ]

## make lint: the Python's lint rules, layout and types (configured in pyproject.toml).
lint: $(TOOLS)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy

## make check: lint and the fast tests; no root, apt, Go or network once .venv exists.
check: lint
	$(BIN)/python -m pytest -q -m "$(FAST_TESTS)"

## make test: every check the project has (what CI runs).
test: lint
	tests/bootstrap/debian-packages.sh
	tests/bootstrap/lab-packages.sh
	$(BIN)/python -m pytest

## make bench: benchmarks against peers (on demand; not part of make test); needs Go and the module proxy.
## BENCH_ARGS=--quick for a first look; writes bench/RESULTS.md and bench/scaling.png.
bench: $(TOOLS)
	tests/bootstrap/debian-packages.sh
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[bench]'
	$(BIN)/python bench/run.py $(BENCH_ARGS)

clean:
	rm -rf $(VENV) demo-data .pytest_cache .hypothesis .mypy_cache .ruff_cache
