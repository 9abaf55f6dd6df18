# elicit: `make setup && make test`. Everything runs inside .venv.
PYTHON ?= python3
VENV   ?= .venv
BIN     = $(VENV)/bin
JOBS   ?= 2
SEED   ?= 0
OUT    ?= results

.PHONY: setup test test-fast test-cmdstan lint typecheck bench reproduce reproduce-quick dist clean

setup:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --upgrade pip
	$(BIN)/pip install -e ".[dev,test]"

# Every other target runs the tools of $(VENV): without it, say what makes it (the shell's
# "not found" did not).
$(BIN)/python:
	@echo "make: $@ not found: run 'make setup' first (or give VENV=<a virtual environment>)" >&2
	@exit 1

# The tests keep Python's bytecode cache (__pycache__, ignored by git) even where
# PYTHONDONTWRITEBYTECODE is set: without it pytest rewrites every test module again and
# every process a test starts compiles elicit again (half of the fast tests' collection).
TEST_ENV = PYTHONDONTWRITEBYTECODE=

# Everything, as CI runs it (the slow tests included). Stan programs are compiled once per
# machine, before the first test that needs them (tests/conftest.py); tests whose
# requirement is missing (CmdStan, PyStan, the data directory) are skipped with the reason.
test: $(BIN)/python
	$(TEST_ENV) $(BIN)/python -m pytest -q

# The development loop: everything but the tests marked slow (Stan builds and fits, fault
# injection, browser, end-to-end sweeps). CPU time: docs/benchmarks.md, "The fast tests".
test-fast: $(BIN)/python
	$(TEST_ENV) $(BIN)/python -m pytest -q -m "not slow"

# The CmdStan engine against the numpy twin, the compile lock, cmdstanpy's logging and the
# command line (docs/stan.md): needs CMDSTAN; the first run compiles the shipped program.
test-cmdstan: $(BIN)/python
	$(BIN)/python -m pytest -q -m cmdstan

lint: $(BIN)/python
	$(BIN)/ruff check elicit tests experiments
	$(BIN)/mypy elicit

typecheck: $(BIN)/python
	$(BIN)/mypy elicit

# The recorded speed figures (docs/benchmarks.md): a table with the targets, written to
# docs/bench/<commit>.json and compared with the most recent earlier record (figures more
# than 20% slower are named). About 2 CPU-minutes; a benchmark, not a test.
bench: $(BIN)/python
	OPENBLAS_NUM_THREADS=1 $(BIN)/elicit bench --suite --record docs/bench

# The paper's settings: 100 answers per run, 50 runs of every step: the synthetic experiment,
# the seven pair-question sweeps (Amazon, Yelp, the kitchen corpus, Amazon and Yelp with
# --paper, Amazon and Yelp with --recommended), the three sweeps with relevance and pair
# questions (--questions both) and Table 1. REPORT.md gives the measured wall and CPU time
# of every step. Sweeps resume where they stopped, so a rerun with more runs only adds runs.
RUNS         ?= 50
REAL_RUNS    ?= $(RUNS)
MIXED_RUNS   ?= $(RUNS)
MIXED_ROUNDS ?= 100
# OUT is quoted (a folder name may hold spaces) and never empty (that would be the current folder)
CHECK_OUT = $(if $(strip $(OUT)),,$(error OUT is empty: give the results folder, e.g. OUT=results))
reproduce: $(BIN)/python
	$(CHECK_OUT)$(BIN)/python experiments/reproduce.py --out "$(OUT)" --runs $(RUNS) --real-runs $(REAL_RUNS) --mixed-runs $(MIXED_RUNS) --mixed-rounds $(MIXED_ROUNDS) --jobs $(JOBS) --seed $(SEED) $(if $(CLUSTER),--cluster $(CLUSTER))

# The same pipeline on a few runs, for a quick look (a few minutes).
reproduce-quick: $(BIN)/python
	$(CHECK_OUT)$(BIN)/python experiments/reproduce.py --out "$(OUT)/quick" --runs 4 --rounds 30 --mixed-runs 2 --mixed-rounds 10 --jobs $(JOBS) --seed $(SEED)

# A wheel of this checkout in dist/ (pip install dist/elicit-*.whl). `clean` first: setuptools
# copies the modules into build/lib and keeps what is already there, so a module deleted or
# renamed since an earlier build would be packed into the wheel again.
dist: clean $(BIN)/python
	$(BIN)/python -m pip wheel --no-deps -w dist .

clean:
	rm -rf build dist *.egg-info .pytest_cache
