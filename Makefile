# The two Quick start commands: `make demo` and `make test`.
# Both bootstrap what they need (a virtualenv in .venv) on a fresh clone.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
AGENT := $(VENV)/.installed-agent
TOOLS := $(VENV)/.installed-test
DEMO := $(BIN)/dnfsmon --config examples/demo.toml

.PHONY: demo test bench clean

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

## make test: every check the project has.
test: $(TOOLS)
	tests/bootstrap/debian-packages.sh
	$(BIN)/python -m pytest

## make bench: benchmarks against peers (on demand; not part of make test).
bench: $(TOOLS)
	tests/bootstrap/debian-packages.sh
	$(BIN)/pip install --quiet --disable-pip-version-check -e '.[bench]'
	$(BIN)/python bench/collect_cost.py

clean:
	rm -rf $(VENV) demo-data .pytest_cache .hypothesis
