package stack_test

import (
	"context"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/tokentrace/tokentrace/internal/scenario"
	"github.com/tokentrace/tokentrace/internal/stack"
	"github.com/tokentrace/tokentrace/semconv"
)

func TestScenarioRunsThroughTheInstrumentedGateway(t *testing.T) {
	sc, err := scenario.Builtin("prefill-chunked")
	if err != nil {
		t.Fatal(err)
	}
	sc.TimeScale = 0.25
	sc.Load.Requests = 12
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	st, err := stack.Start(ctx, stack.Options{Scenario: sc, TracerProvider: tp, EngineEvents: true})
	if err != nil {
		t.Fatal(err)
	}
	res, err := st.RunLoad(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(ctx); err != nil {
		t.Fatal(err)
	}
	sum := res.Summary()
	for _, r := range res.Records {
		if r.Err != "" {
			t.Logf("request %d (%s): %s", r.Index, r.Type, r.Err)
		}
	}
	if sum.Failed != 0 || sum.Successful != 12 {
		t.Fatalf("load: %d ok, %d failed", sum.Successful, sum.Failed)
	}
	spans := rec.Ended()
	if len(spans) != 12 {
		t.Fatalf("%d spans, want 12", len(spans))
	}
	truth := st.Truth.Records()
	if len(truth) != 12 {
		t.Fatalf("%d truth records, want 12", len(truth))
	}
	traced := map[string]bool{}
	prefillEvents := 0
	for _, s := range spans {
		traced[s.SpanContext().TraceID().String()] = true
		for _, e := range s.Events() {
			if e.Name == semconv.PrefillEvent {
				prefillEvents++
			}
		}
	}
	segments := 0
	for _, r := range truth {
		if !traced[r.TraceID] {
			t.Errorf("truth record %s has trace id %q that no span has", r.RequestID, r.TraceID)
		}
		segments += len(r.Segments)
	}
	if segments == 0 || prefillEvents == 0 {
		t.Errorf("no injected slow-down seen: %d truth segments, %d prefill events", segments, prefillEvents)
	}
}
