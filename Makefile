# The set-up commands of README.md. Each makes its own virtual environment (.venv) from a fresh clone, needing only
# Python 3.11+ and pip, and says what it is doing while it does.
# Re-running is cheap: the installer only runs again when pyproject.toml changes.
PYTHON ?= python3
VENV   ?= .venv
BIN    := $(VENV)/bin
PORT   ?= 8000
LAB_PORT ?= 8888
DATA   ?= .hoglab-data
OUT    ?= hoglab-report
LAB_ARGS ?=
# uv (from PyPI, put into the venv by pip) installs in seconds what pip takes minutes over; INSTALLER=pip forces pip,
# and pip is the fallback wherever uv cannot be installed or fails. Their own lines are the progress.
INSTALLER ?= uv
PIP    := $(BIN)/python -m pip install --disable-pip-version-check
# $(call install,ARGS): install ARGS into the venv with uv, else pip.
define install
	@if [ "$(INSTALLER)" = uv ] && { [ -x $(BIN)/uv ] || { echo "make: putting the installer uv into $(VENV)..."; $(PIP) --quiet uv; }; }; then \
	  $(BIN)/uv pip install --python $(BIN)/python $(1) \
	    || { echo "make: uv failed; installing with pip instead (slower)"; $(PIP) $(1); }; \
	else \
	  [ "$(INSTALLER)" = pip ] || echo "make: uv could not be installed here; installing with pip instead (slower)"; \
	  $(PIP) $(1); \
	fi
endef
# What each target installs (in variables: make's $(call) would split a literal list at its commas).
APP_DEPS := -e '.[server,clickhouse,notebook]'
LAB_DEPS := -e '.[server,clickhouse,notebook,lab]'
DEV_DEPS := -e '.[dev]'
# uv installs without compiling bytecode, and containers often set PYTHONDONTWRITEBYTECODE: then every start of the
# service compiles its ~1,800 modules again (a later start serving at 6.9 s instead of 3.4). demo and lab keep their
# bytecode in .venv and src/__pycache__ (git ignores both); the first start writes it. (Not yet for test: its one
# run with it saw the tours' in-kernel services under libfaketime crawl, not understood.)
KEEP_BYTECODE := env -u PYTHONDONTWRITEBYTECODE
# The notebooks start their own demo service unless these point them at one: unset for deterministic outputs.
NO_SERVICE_ENV := env -u HOGLAB_HOST -u HOGLAB_API_KEY -u HOGLAB_PROJECT_ID

.PHONY: demo lab test notebooks bench clean

$(BIN)/python:
	@echo "make: creating the virtual environment $(VENV) with $(PYTHON) (once, a few seconds)..."
	$(PYTHON) -m venv $(VENV)

$(VENV)/.installed-app: pyproject.toml | $(BIN)/python
	@echo "make: installing hoglab with the service and notebook extras into $(VENV) (about 15 s the first time)..."
	$(call install,$(APP_DEPS))
	touch $@
	@echo "make: $(VENV) is ready"

$(VENV)/.installed-lab: pyproject.toml | $(BIN)/python
	@echo "make: installing hoglab, the notebook extras and JupyterLab into $(VENV) (about 20 s the first time)..."
	$(call install,$(LAB_DEPS))
	touch $@ $(VENV)/.installed-app
	@echo "make: $(VENV) is ready"

# PostHog's published OpenAPI document, the tests' oracle of request and answer shapes, comes in the PyPI package
# arcade-posthog-api; only its JSON file is read, so the package goes in without its (unrelated) dependencies.
$(VENV)/.installed-dev: pyproject.toml | $(BIN)/python
	@echo "make: installing hoglab with every extra and the test tools into $(VENV) (about 30 s the first time)..."
	$(call install,$(DEV_DEPS))
	@echo "make: installing PostHog's OpenAPI document (arcade-posthog-api, the tests' oracle)..."
	$(call install,--no-deps arcade-posthog-api==0.2.1)
	touch $@ $(VENV)/.installed-app $(VENV)/.installed-lab
	@echo "make: $(VENV) is ready"

## The main job: the service on the embedded engine with the demo project, its experiment analysed (verdict
## printed, report and figures in $(OUT)/), then serving for notebooks until Ctrl-C.
demo: $(VENV)/.installed-app
	$(KEEP_BYTECODE) $(BIN)/hoglab demo --data-dir $(DATA) --port $(PORT) --out $(OUT)

## JupyterLab on the tour notebooks, on $(LAB_PORT), every kernel pointed at the demo service: the one `make demo`
## serves on $(PORT) is reused, else one is started here. Until Ctrl-C. LAB_ARGS go to jupyter lab (e.g. --no-browser).
lab: $(VENV)/.installed-lab
	$(KEEP_BYTECODE) $(BIN)/hoglab lab --data-dir $(DATA) --port $(PORT) --lab-port $(LAB_PORT) -- $(LAB_ARGS)

## The whole test suite: lint, types, layer contracts, unit and integration tests, and the tour notebooks under
## nbval, twice, with the clock moved days ahead and TZ set off UTC (their checked outputs hold on any day).
test: $(VENV)/.installed-dev
	$(BIN)/ruff check src tests bench notebooks
	$(BIN)/mypy
	$(BIN)/lint-imports --no-cache  # the layer contracts of pyproject.toml [tool.importlinter]
	$(BIN)/pytest -n 2 --dist loadgroup --durations=25 tests  # the notebooks too: tests/test_notebooks_any_day.py

## Re-run the tour notebooks in place (after changing them): their stored outputs are what nbval checks.
notebooks: $(VENV)/.installed-dev
	cd notebooks && for nb in *.ipynb; do $(NO_SERVICE_ENV) ../$(BIN)/jupyter-execute --inplace $$nb || exit 1; done

bench: $(VENV)/.installed-dev
	for f in bench/bench_*.py; do echo "== $$f"; $(BIN)/python $$f || exit 1; done

clean:
	rm -rf $(VENV) $(DATA) $(OUT) .pytest_cache .mypy_cache .ruff_cache
