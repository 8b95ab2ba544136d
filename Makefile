# Two ways in without ROS 2: `make demo` and `make test` create .venv on a fresh machine.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
# Small dense linear algebra is slower with BLAS threads; one core is also what the bench reports.
export OPENBLAS_NUM_THREADS ?= 1
export OMP_NUM_THREADS ?= 1
export MPLBACKEND ?= Agg

.PHONY: venv demo test bench lint clean

$(STAMP): requirements.txt requirements-dev.txt requirements-bench.txt setup.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	$(PY) -m pip install --quiet --no-deps -e .
	touch $(STAMP)

venv: $(STAMP)

demo: venv
	$(VENV)/bin/biped-sim run walk --out runs/demo
	@echo "Results in runs/demo (summary.json, timeseries.csv, trace.mcap, replay.html: open it in a browser, plots/)"

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports

test: lint
	$(PY) -m pytest -q test

bench: venv
	$(VENV)/bin/biped-sim bench --peer mujoco --out runs/bench

clean:
	rm -rf $(VENV) runs
