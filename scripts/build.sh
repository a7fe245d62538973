#!/bin/sh
# The one build command. CI and the Dockerfile both run exactly this, so what CI builds and
# tests is what the image ships: a static binary (pure Go, SQLite included), no cgo.
# -buildvcs=auto stamps the commit ("tollgate version") even where GOFLAGS turns it off.
set -eu
out="${1:-tollgate}"
CGO_ENABLED=0 go build -trimpath -buildvcs=auto -ldflags="-s -w" -o "$out" ./cmd/tollgate
