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

## make demo: a simulated two-instance RAC on a host whose NFS client, NICs and filer paths replay a
## bundled case in real time (no NFS is needed here), the doctor's verdict on them, then the doctor on
## replays of bundled fault cases, each ending with a named layer, its evidence and the remedy; under a minute.
DEMO_HOST_CASE := linux-client-16-slots
DEMO_CASES := lossy-link linux-client-16-slots
demo: $(AGENT)
	rm -rf demo-data
	mkdir -p demo-data
	@echo "== The host's /proc and /sys: tests/cases/doctor/$(DEMO_HOST_CASE) replayed in real time under demo-data/host"
	@echo "==     ([host] proc_root in examples/demo.toml; its README gives the rates), stopped at the end"
	$(BIN)/python examples/replay_host.py tests/cases/doctor/$(DEMO_HOST_CASE) demo-data/host --seconds 120 --background > demo-data/replay.pid
	@echo
	@echo "== 1/3 dnfsmon collect for 20 s: the replayed host, and a simulated two-instance RAC database (its points are tagged simulated=true)"
	$(DEMO) collect --count 5 --interval 5
	@echo
	$(DEMO) show
	@echo
	@echo "== 2/3 dnfsmon doctor: two samples 5 s apart of the same host and database, which layer is to blame"
	$(DEMO) doctor --interval 5 || [ $$? -ge 10 ] || exit 1
	kill $$(cat demo-data/replay.pid) 2>/dev/null || true
	@echo
	@echo "== 3/3 dnfsmon doctor on replays of bundled fault cases: two captures 10 s apart of a host whose NICs, TCP"
	@echo "==     and NFS client carry filer traffic, with simulated database answers (tests/cases/doctor/, each with a README)"
	@for case in $(DEMO_CASES); do \
	    echo; echo "-- replay: tests/cases/doctor/$$case"; \
	    $(DEMO) doctor tests/cases/doctor/$$case/old tests/cases/doctor/$$case/new || [ $$? -ge 10 ] || exit 1; \
	done

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
