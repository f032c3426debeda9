# Two commands on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: demo test test-slow test-all lint bench clean install

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

test: $(STAMP)
	$(BIN)/python -m pytest -q -n auto

test-slow: $(STAMP)
	$(BIN)/python -m pytest -q -n auto -m slow

test-all: $(STAMP)
	$(BIN)/python -m pytest -q -n auto -m ''

lint: $(STAMP)
	$(BIN)/ruff check .

bench: $(STAMP)
	$(BIN)/python benchmarks/scalesim_compare.py
	$(BIN)/python benchmarks/eval_speed.py

clean:
	rm -rf $(VENV) runs build *.egg-info
