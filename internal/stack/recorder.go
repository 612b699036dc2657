package stack

import (
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/tokentrace/tokentrace/instrument"
)

// Recorder returns an in-memory span recorder and the tracer provider
// options that feed it, with the event limit instrument.NewTracerProvider
// sets for Jaeger, so that spans kept in memory look as exported ones do.
func Recorder() (*tracetest.SpanRecorder, []sdktrace.TracerProviderOption) {
	rec := tracetest.NewSpanRecorder()
	limits := sdktrace.NewSpanLimits()
	limits.EventCountLimit = instrument.DefaultEventCountLimit
	return rec, []sdktrace.TracerProviderOption{sdktrace.WithSpanProcessor(rec), sdktrace.WithRawSpanLimits(limits)}
}
