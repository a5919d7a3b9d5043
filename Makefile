# carve: make builds bin/carve and bin/libcarve.so; make test runs every test
# that needs no GPU (the shim is tested against a fake libcuda).
GO      ?= go
CC      ?= cc
CFLAGS  ?= -O2 -Wall -Wextra -Werror
VERSION ?= $(shell git describe --always --dirty 2>/dev/null || echo dev)

.PHONY: build test clean
build: bin/carve bin/libcarve.so

bin/carve: $(shell find cmd internal -name '*.go' -o -name '*.ptx') go.mod go.sum
	CGO_ENABLED=0 $(GO) build -ldflags "-X main.version=$(VERSION)" -o $@ ./cmd/carve

bin/libcarve.so: shim/carve.c shim/carve_ctl.h shim/carve_tmd.h
	@mkdir -p bin
	$(CC) $(CFLAGS) -fPIC -shared -o $@ shim/carve.c -ldl -pthread

test:
	CGO_ENABLED=0 $(GO) vet ./...
	CGO_ENABLED=0 $(GO) test -count=1 ./...

clean:
	rm -rf bin
