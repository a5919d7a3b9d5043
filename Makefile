# carve: make builds bin/carve and bin/libcarve.so; make test runs every test
# that needs no GPU (the shim is tested against a fake libcuda).
GO      ?= go
CC      ?= cc
CFLAGS  ?= -O2 -Wall -Wextra -Werror
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)

.PHONY: build test lint clean
build: bin/carve bin/libcarve.so

bin/carve: $(shell find cmd internal -name '*.go' -o -name '*.ptx') go.mod go.sum
	CGO_ENABLED=0 $(GO) build -ldflags "-X main.version=$(VERSION)" -o $@ ./cmd/carve

# internal/shimtest builds the shim the same way for tests.
bin/libcarve.so: $(wildcard shim/*.c shim/*.h)
	@mkdir -p bin
	$(CC) $(CFLAGS) -fPIC -fvisibility=hidden -shared -o $@ $(wildcard shim/*.c) -ldl -pthread

test:
	CGO_ENABLED=0 $(GO) vet ./...
	CGO_ENABLED=0 $(GO) test -count=1 ./...

# staticcheck at the version go.mod pins (its tool directive)
lint:
	CGO_ENABLED=0 $(GO) tool staticcheck ./...

clean:
	rm -rf bin
