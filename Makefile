# markerwave: `make run` runs the demo, `make test` runs the tests.
GO ?= go
TLA2TOOLS ?=

.PHONY: run test vet tlc tlc-trace fifo soak bench fmt

run:
	$(GO) run ./cmd/markerwave demo

test: vet
	$(GO) test -count=1 ./...

vet:
	@test -z "$$(gofmt -l $$(git ls-files '*.go' 2>/dev/null || find . -name '*.go'))" || { echo "gofmt needed on:"; gofmt -l .; exit 1; }
	$(GO) vet ./...

# Model-check every model in tla/manifest.json with TLC and compare the
# counts. TLA2TOOLS must name tla2tools.jar.
tlc:
	$(GO) run ./cmd/tlcrun -jar "$(TLA2TOOLS)" -manifest tla/manifest.json

# Validate a recorded trace against tla/ChandyLamport.tla with TLC:
#   make tlc-trace TRACE=traces/conforms/token-ring.jsonl TLA2TOOLS=/path/to/tla2tools.jar
tlc-trace:
	@test -n "$(TRACE)" || { echo "usage: make tlc-trace TRACE=trace.jsonl TLA2TOOLS=/path/to/tla2tools.jar"; exit 2; }
	@test -n "$(TLA2TOOLS)" || { $(GO) run ./cmd/tlcrun -jar ""; exit 2; }
	$(GO) run ./cmd/markerwave export --tlc out/tlc-trace --run-tlc "$(TLA2TOOLS)" $(TRACE)

# Porcupine: the transports' channels are linearizable FIFO queues.
fifo:
	$(GO) test -count=1 ./conformance/fifo/

# A long lockstep soak of the core against the model (about a minute on 2 cores).
soak:
	$(GO) test -count=1 ./conformance -run TestLockstep -rapid.checks=20000 -rapid.steps=200

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

fmt:
	gofmt -w $$(git ls-files '*.go')
