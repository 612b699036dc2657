package sdkspan_test

import (
	"context"
	"reflect"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/tokentrace/tokentrace/analyzer/model"
	"github.com/tokentrace/tokentrace/analyzer/source"
	"github.com/tokentrace/tokentrace/analyzer/source/sdkspan"
	"github.com/tokentrace/tokentrace/semconv"
)

func TestFromReadOnly(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	l := sdktrace.NewSpanLimits()
	l.EventCountLimit = 2
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithRawSpanLimits(l),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "gw"))))
	defer tp.Shutdown(context.Background())
	tr := tp.Tracer("t")
	ctx, parent := tr.Start(context.Background(), "parent")
	start := time.Unix(1700000000, 123456789)
	_, s := tr.Start(ctx, "chat m", trace.WithSpanKind(trace.SpanKindClient), trace.WithTimestamp(start))
	s.SetAttributes(
		semconv.SchemaVersionKey.String(semconv.SchemaVersion),
		attribute.Int64Slice("ints", []int64{1, 2}), attribute.StringSlice("strs", []string{"a"}),
		attribute.StringSlice("nostrs", nil), attribute.BoolSlice("bools", []bool{true}),
		attribute.Float64("f", 0.5), attribute.Int("i", 7), attribute.Bool("b", true),
	)
	for i := 0; i < 3; i++ {
		s.AddEvent(semconv.TokenEvent, trace.WithTimestamp(start.Add(time.Duration(i+1)*time.Millisecond+7)),
			trace.WithAttributes(semconv.TokenIndex.Int(i)))
	}
	s.SetStatus(codes.Error, "bad")
	s.End(trace.WithTimestamp(start.Add(time.Second)))
	parent.End()

	spans := rec.Ended()
	m := sdkspan.FromReadOnly(spans[0])
	if m.Service != "gw" || m.Kind != "client" || m.ParentSpanID != parent.SpanContext().SpanID().String() ||
		!m.StatusError || m.StatusMessage != "bad" || m.DroppedEvents != 1 || !m.Start.Equal(start) || len(m.Events) != 2 {
		t.Errorf("span %+v", m)
	}
	if got := m.Events[1].Time.Sub(start); got != 3*time.Millisecond+7 {
		t.Errorf("event time offset %v: nanoseconds lost", got)
	}
	want := map[string]any{"tokentrace.schema": "tokentrace/1", "ints": []any{int64(1), int64(2)}, "strs": []string{"a"},
		"nostrs": []string{}, "bools": []any{true}, "f": 0.5, "i": int64(7), "b": true}
	if !reflect.DeepEqual(m.Attrs, want) {
		t.Errorf("attrs\n got %#v\nwant %#v", m.Attrs, want)
	}
	var n int
	skips := &source.Skips{}
	err := source.Requests(context.Background(), sdkspan.Spans(spans), skips, func(r *model.Request) error {
		n++
		if len(r.Tokens) != 2 || r.Tokens[0].Index != 1 {
			t.Errorf("tokens %+v", r.Tokens)
		}
		return nil
	})
	if err != nil || n != 1 || skips.Count(source.ReasonNotTokentrace) != 1 {
		t.Errorf("Requests: %v, %d requests, skips %+v", err, n, skips.List())
	}
}
