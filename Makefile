# Two commands on a fresh machine: `make demo` and `make test`. `make docs` builds the docs site (build/site).
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
DOCS_STAMP := $(VENV)/.installed-docs

.PHONY: demo test test-slow test-faults test-all test-docs docs lint bench clean install

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip

$(STAMP): $(BIN)/python pyproject.toml
	$(BIN)/python -m pip install --quiet -e '.[test]'
	touch $(STAMP)

# The docs extra (MkDocs, the notebooks' kernel) on top: `make test` and the docs targets need it, `make demo` not.
$(DOCS_STAMP): $(STAMP)
	$(BIN)/python -m pip install --quiet -e '.[test,docs]'
	touch $(DOCS_STAMP)

install: $(DOCS_STAMP)

demo: $(STAMP)
	$(BIN)/python tools/train_digits.py designs/workloads  # trains the digits MLP once (no download)
	$(BIN)/dse explore designs/quickstart.yaml -o runs/quickstart
	@echo "open runs/quickstart/report.html in a browser"

# The suite runs one process per core (pytest-xdist, idle workers steal queued tests), each with one BLAS/OpenMP
# thread: the parallelism is across tests, so numeric libraries must not oversubscribe the cores.
TEST_ENV := OMP_NUM_THREADS=1 OPENBLAS_NUM_THREADS=1 MKL_NUM_THREADS=1
PYTEST   := $(TEST_ENV) $(BIN)/python -m pytest -q -n auto --dist worksteal

test: $(DOCS_STAMP)
	$(PYTEST)

test-slow: $(STAMP)
	$(PYTEST) -m slow

# The fault-injection suite (tests/test_fault_injection.py): SIGKILLs at random moments, memory limits, lost
# workers and full disks, injected into real dse processes; a few minutes, so CI runs it apart.
test-faults: $(STAMP)
	$(PYTEST) -m faults

test-all: $(DOCS_STAMP)
	$(PYTEST) -m ''

# Every tutorial's commands (tools/doc_commands.py) and every notebook in examples/, under the `docs` marker.
test-docs: $(DOCS_STAMP)
	$(PYTEST) -m docs

# The site, strictly (a broken link or reference fails); the gallery's screenshots need chromium.
docs: $(DOCS_STAMP)
	$(BIN)/mkdocs build --strict

lint: $(STAMP)
	$(BIN)/ruff check .

bench: $(STAMP)
	$(BIN)/python benchmarks/scalesim_compare.py
	$(BIN)/python benchmarks/eval_speed.py

clean:
	rm -rf $(VENV) runs build *.egg-info
