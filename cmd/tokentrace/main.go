// Command tokentrace explains why streamed LLM responses slowed down
// while they were generated, from the traces of the tokentrace middleware.
//
// Usage:
//
//	tokentrace demo                               # simulated engine + gateway + load, analysed in memory
//	tokentrace analyze --file spans.jsonl          # report on every request of trace files
//	tokentrace trace TRACE_ID --file spans.jsonl   # one request in depth
//	tokentrace stats --file spans.jsonl --by model,prompt_type,instance
//
// Trace files may be OTLP JSON (the Collector's file exporter, Jaeger's
// api_v3), OTLP protobuf, or Jaeger UI JSON ("Download JSON", /api/traces);
// the format is detected from the content. Run "tokentrace help COMMAND"
// for the flags of a command.
//
// Exit status: 0 success; 1 error; 2 bad usage; 3 a gate failed
// (--fail-on-degraded or --max-p99-tpot).
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(exitCode(err, os.Stderr))
}

// Exit codes.
const (
	exitOK    = 0
	exitError = 1
	exitUsage = 2
	exitGate  = 3
)

// usageError is a mistake in the command line.
type usageError struct{ msg string }

func (e usageError) Error() string { return e.msg }

// gateError is a --fail-on-* condition that held.
type gateError struct{ msg string }

func (e gateError) Error() string { return e.msg }

func exitCode(err error, stderr io.Writer) int {
	if err == nil {
		return exitOK
	}
	var ue usageError
	var ge gateError
	switch {
	case errors.As(err, &ue):
		fmt.Fprintf(stderr, "tokentrace: %v\nRun 'tokentrace help' for usage.\n", err)
		return exitUsage
	case errors.As(err, &ge):
		fmt.Fprintf(stderr, "tokentrace: %v\n", err)
		return exitGate
	case errors.Is(err, errHelp):
		return exitOK
	}
	fmt.Fprintf(stderr, "tokentrace: %v\n", err)
	return exitError
}
