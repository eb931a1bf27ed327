# markerwave: `make run` runs the demo, `make test` runs the tests.
GO ?= go
TLA2TOOLS ?=

.PHONY: run test vet tlc tlc-trace bench fmt

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

bench:
	$(GO) test -run '^$$' -bench . -benchmem ./...

fmt:
	gofmt -w $$(git ls-files '*.go')
