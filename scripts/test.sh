#!/usr/bin/env bash
# Runs every test of tokentrace on a machine that has only Go:
#   1. builds Jaeger v2 from the tools/ module (cached in tools/bin; the
#      first build takes several minutes) — the end-to-end tests start it
#      on loopback ports of their own;
#   2. gofmt and go vet;
#   3. go test -race ./... (unit, integration, fuzz seed corpora, end-to-end
#      through a real Jaeger);
#   4. the accuracy runs (real-engine replays and simulator scenarios),
#      without -race because they measure real timing;
#   5. every benchmark once, so benchmarks keep compiling and running.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)

echo "== building Jaeger (tools/)"
(cd tools && go build -o bin/jaeger github.com/jaegertracing/jaeger/cmd/jaeger)
export TOKENTRACE_JAEGER="$root/tools/bin/jaeger"

echo "== gofmt"
unformatted=$(gofmt -l $(find . -name '*.go' -not -path './tools/*'))
if [ -n "$unformatted" ]; then
  echo "gofmt would change:"; echo "$unformatted"; exit 1
fi

echo "== go vet"
go vet ./...

echo "== go test -race"
go test -race -count=1 -timeout 20m ./...

echo "== accuracy (real timing, no -race)"
go test -count=1 -timeout 20m -run 'Accuracy' -v ./internal/accuracy/ | grep -E '^(---|ok|FAIL|PASS)|accuracy_run_test|ALL|baseline'

echo "== benchmarks, one iteration each"
go test -run '^$' -bench . -benchtime 1x ./...
