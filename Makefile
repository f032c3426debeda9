# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test test-slow test-faults test-all lint bench clean install

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/python tools/train_digits.py designs/workloads  # trains the digits MLP once (no download)
	$(BIN)/dse explore designs/quickstart.yaml -o runs/quickstart
	@echo "open runs/quickstart/report.html in a browser"

# The suite runs one process per core (pytest-xdist, idle workers steal queued tests), each with one BLAS/OpenMP
# thread: the parallelism is across tests, so numeric libraries must not oversubscribe the cores.
TEST_ENV := OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
PYTEST   := $(TEST_ENV) $(BIN)/python -m pytest -q -n auto --dist worksteal

test: $(STAMP)
	$(PYTEST)

test-slow: $(STAMP)
	$(PYTEST) -m slow

# The fault-injection suite (tests/test_fault_injection.py): SIGKILLs at random moments, memory limits, lost
# workers and full disks, injected into real dse processes; a few minutes, so CI runs it apart.
test-faults: $(STAMP)
	$(PYTEST) -m faults

test-all: $(STAMP)
	$(PYTEST) -m ''

lint: $(STAMP)
	$(BIN)/ruff check .

bench: $(STAMP)
	$(BIN)/python benchmarks/scalesim_compare.py
	$(BIN)/python benchmarks/eval_speed.py

clean:
	rm -rf $(VENV) runs build *.egg-info
