# The fusion fork's entry points.  Every target sets up what it needs, so a
# fresh machine with only Python 3 can run `make report` or `make test`.

PYTHON ?= python3
# The torch release to work on: 2.15.0 (the newest release, the default) or
# 2.14.1.  Each has its own virtualenv, requirements file
# and patch series (patches/<release>/); `make test` runs both.
SUPPORTED_RELEASES := 2.15.0 2.14.1
TORCH ?= 2.15.0
ifeq ($(filter $(TORCH),$(SUPPORTED_RELEASES)),)
$(error TORCH=$(TORCH) is not supported; choose one of: $(SUPPORTED_RELEASES))
endif
VENV := $(if $(filter $(firstword $(SUPPORTED_RELEASES)),$(TORCH)),.venv,.venv-$(TORCH))
REQUIREMENTS := requirements/torch-$(TORCH).txt
PY := $(VENV)/bin/python
STAMP := $(VENV)/.requirements-installed
EXPORT_DIR ?= build/export/$(TORCH)
# The releases `make test` runs the suite on, each in its own virtualenv.
TEST_RELEASES ?= $(SUPPORTED_RELEASES)
# pytest processes per release (pytest-xdist): two, for CI's 2-core machine;
# a larger machine names more (TEST_WORKERS=8), and TEST_WORKERS=0 runs the
# suite in pytest's own process alone.
TEST_WORKERS ?= 2

.PHONY: develop build check lint test test-release report export clean system-deps

# A virtualenv with the pinned torch and test tools, the overlay built and
# activated through a .pth file.  Quick and a no-op when nothing changed.
develop: $(STAMP)
	@$(PY) tools/fork.py build
	@$(PY) tools/fork.py activate >/dev/null

# A machine-wide pip constraints file (one that caps torch, say) does not
# apply: PIP_CONSTRAINT names the project's own, which adds nothing.  pip keeps
# no cache of what it downloads (--no-cache-dir): a release's wheels are about
# 2.8 GB beside the 5.8 GB virtualenv they fill, and `make test` installs two
# releases on one disk (one CI run ended with "No space left on device" while
# it installed the second).
# Checked before a virtualenv is made, so that a full disk stops with one line
# rather than pip's OSError minutes in (the last CI failure: clones of earlier
# test runs had filled the disk).
VENV_FREE_GB ?= 9
# The packages of this repository that live outside torch/ (the viewer, the FX
# fusion backend), installed editable so the checkout is what runs.
PACKAGES := packages/fusion_viewer packages/fx_fusion

$(STAMP): $(REQUIREMENTS) requirements/common.txt requirements/constraints.txt $(PACKAGES:%=%/pyproject.toml)
	@command -v $(PYTHON) >/dev/null || { echo "error: $(PYTHON) not found; install Python 3.10+ or pass PYTHON=..."; exit 1; }
	@free=$$(df -Pk . | awk 'NR == 2 { print int($$4 / 1048576) }'); \
	  [ "$$free" -ge $(VENV_FREE_GB) ] || { echo "error: $(VENV) needs about $(VENV_FREE_GB) GB free on this disk (a release's wheels unpacked beside its virtualenv); $$free GB free"; exit 1; }
	$(PYTHON) -m venv $(VENV)
	PIP_CONSTRAINT=$(CURDIR)/requirements/constraints.txt \
	  $(PY) -m pip install --quiet --disable-pip-version-check --no-cache-dir -r $(REQUIREMENTS)
	PIP_CONSTRAINT=$(CURDIR)/requirements/constraints.txt \
	  $(PY) -m pip install --quiet --disable-pip-version-check --no-cache-dir --no-deps $(PACKAGES:%=-e %)
	@touch $@

build: $(STAMP)
	$(PY) tools/fork.py build --time

check: develop
	$(PY) tools/fork.py check

lint: $(STAMP)
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .

# Graphviz (report pictures) and, for the tests, Chromium, from Debian.
system-deps:
	@sh tools/install_system_deps.sh --with-browser

# CI's entry point (.ci/run calls it): lint, the patch check and the whole
# suite, once per release in TEST_RELEASES, each in its own virtualenv.
test: system-deps
	@status=0; for release in $(TEST_RELEASES); do \
	  echo "=== torch $$release ==="; \
	  $(MAKE) --no-print-directory test-release TORCH=$$release || status=1; \
	done; exit $$status

# The same for one release (TORCH).
test-release: develop
	$(PY) -m ruff check .
	$(PY) -m ruff format --check .
	$(PY) tools/fork.py check
	$(PY) -m pytest -v --durations=40 -n $(TEST_WORKERS) tools/test test benchmarks/fusion/test $(PACKAGES:%=%/test)

# The main job: the fusion study of the default model set at CI shapes, on
# CUDA when a GPU is present, else on the CPU; the study writes reports/
# (study.json, summary.md, captures/) and prints the summary table, then the
# viewer package's command writes the pages (index.html, one page per model).
report: develop
	@sh tools/install_system_deps.sh
	$(PY) benchmarks/fusion/study.py --shapes ci --out reports --no-pages
	$(PY) -m fusion_viewer study reports

# The whole change as a git-am series against upstream's layout (an output:
# build/ is ignored and the series is committed nowhere).
export: develop
	$(PY) tools/fork.py export $(EXPORT_DIR)

clean:
	rm -rf build
