#!/usr/bin/env bash
# Runs every test of tokentrace: formatting, vet, the race-enabled unit and
# integration tests (fuzz seed corpora included), and each benchmark once so
# that benchmarks keep compiling and running. Needs only Go.
set -euo pipefail
cd "$(dirname "$0")/.."

echo "== gofmt"
unformatted=$(gofmt -l $(find . -name '*.go' -not -path './tools/*'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

echo "== go vet"
go vet ./...

echo "== go test -race"
go test -race -count=1 ./...

echo "== benchmarks, one iteration each"
go test -run '^$' -bench . -benchtime 1x ./...
