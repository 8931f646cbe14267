# The fusion fork's entry points.  Every target sets up what it needs, so a
# fresh machine with only Python 3 can run `make report` or `make test`.

PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.requirements-installed
EXPORT_DIR ?= build/export

.PHONY: develop build check lint test report export clean

# A virtualenv with the pinned torch and test tools, the overlay built and
# activated through a .pth file.  Quick and a no-op when nothing changed.
develop: $(STAMP)
	@$(PY) tools/fork.py build
	@$(PY) tools/fork.py activate >/dev/null

$(STAMP): requirements.txt
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found; install Python 3.10+ or pass PYTHON=..."; exit 1; }
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --disable-pip-version-check -r requirements.txt
	@touch $@

build: $(STAMP)
	$(PY) tools/fork.py build --time

check: develop
	$(PY) tools/fork.py check

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

# CI's entry point (.ci/run calls it).
test: develop
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) tools/fork.py check
	$(PY) -m pytest -v tools/test test

# The main job.  Until the fusion report exists, it runs the seed example
# torch.sin(x) + torch.cos(x) under TORCH_LOGS=fusion.
report: develop
	TORCH_LOGS=fusion $(PY) benchmarks/fusion/seed_example.py

# The whole change as a git-am series against upstream's layout (an output:
# build/ is ignored and the series is committed nowhere).
export: develop
	$(PY) tools/fork.py export $(EXPORT_DIR)

clean:
	rm -rf build
