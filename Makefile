# Parley: the two commands are `make run` and `make test`; each installs what it needs first.
SWIFT      ?= swift
HOST       ?= 127.0.0.1
PORT       ?= 8080
RELEASE    := .build/release
SERVE_ARGS ?=

.PHONY: run test build release deps autobahn bench fuzz clean

deps:
	@scripts/install-deps.sh

release: deps
	$(SWIFT) build -c release

build: deps
	$(SWIFT) build

run: release
	@echo "Parley: open http://$(HOST):$(PORT)/  (metrics at /metrics; Ctrl-C stops)"
	$(RELEASE)/parley serve --host $(HOST) --port $(PORT) $(SERVE_ARGS)

test: deps
	$(SWIFT) build --build-tests
	$(SWIFT) test --skip-build
	scripts/realtime-sdk-test.sh

# RFC 6455 conformance: Autobahn|Testsuite fuzzingclient, groups 1-10, against /echo.
autobahn: release
	scripts/autobahn.sh

# Load figures: idle connections held and echo throughput (see docs/benchmarks.md).
bench: release
	scripts/bench.sh

# The fuzz tests of make test, with many more seeds (random and mutated HTTP heads and frames).
fuzz: deps
	$(SWIFT) build --build-tests
	PARLEY_FUZZ_SEEDS=$${SEEDS:-5000} $(SWIFT) test --skip-build --filter FuzzTests

clean:
	rm -rf .build
