# Two ways in without ROS 2: `make demo` and `make test` create .venv on a fresh machine.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
ROS_STAMP := $(VENV)/.ros-stamp
# Small dense linear algebra is slower with BLAS threads; one core is also what the bench reports.
export OPENBLAS_NUM_THREADS ?= 1
export OMP_NUM_THREADS ?= 1
export MPLBACKEND ?= Agg

.PHONY: venv demo test test-ros-acceptance bench lint clean

$(STAMP): requirements.txt requirements-dev.txt requirements-bench.txt setup.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements-dev.txt
	$(PY) -m pip install --quiet --no-deps -e .
	touch $(STAMP)

venv: $(STAMP)

# ROS 2 Jazzy rclpy (Fast DDS) and message wheels from PyPI for the node test suite (test/ros):
# they exist for CPython 3.10-3.13 on Linux x86_64/aarch64; elsewhere the suite is skipped.
$(ROS_STAMP): requirements-ros.txt $(STAMP)
	@if $(PY) -c "import platform, sys; sys.exit(not (sys.platform == 'linux' and platform.machine() in ('x86_64', 'aarch64') and (3, 10) <= sys.version_info[:2] <= (3, 13)))"; then \
		$(PY) -m pip install --quiet -r requirements-ros.txt; \
	else \
		echo "No ROS 2 Jazzy wheels for this Python/platform: test/ros (the node test suite) is skipped"; \
	fi
	touch $(ROS_STAMP)

demo: venv
	$(VENV)/bin/biped-sim run walk --out runs/demo
	@echo "Results in runs/demo (summary.json, timeseries.csv, trace.mcap, replay.html: open it in a browser, plots/)"

lint: venv
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports

test: lint $(ROS_STAMP)
	$(PY) -m pytest -q test

# The acceptance runs of the ROS layer: stand, sway and walk under ctc and wbc in closed loop
# over DDS for 20 simulated seconds each, in lockstep as fast as possible and at
# real_time_factor 1 (make test runs them for 2 s, and at real time the default demo only).
test-ros-acceptance: venv $(ROS_STAMP)
	BIPED_ROS_ACCEPTANCE=1 $(PY) -m pytest -q -s -p no:cacheprovider \
		test/ros/test_nodes_closed_loop.py -k closed_loop

bench: venv
	$(VENV)/bin/biped-sim bench --peer mujoco --out runs/bench

clean:
	rm -rf $(VENV) runs
