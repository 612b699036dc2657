package source_test

import (
	"bytes"
	"context"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/tokentrace/tokentrace/analyzer/model"
	"github.com/tokentrace/tokentrace/analyzer/source"
	"github.com/tokentrace/tokentrace/analyzer/source/sdkspan"
	"github.com/tokentrace/tokentrace/instrument"
	"github.com/tokentrace/tokentrace/instrument/tokentimes"
	"github.com/tokentrace/tokentrace/semconv"
)

const (
	benchRequests = 200
	benchTokens   = 500
)

var bench struct {
	once  sync.Once
	spans []sdktrace.ReadOnlySpan
	encs  []encoded
}

// benchData records 200 requests of 500 tokens each — one event per
// token plus the compact attribute, as the middleware writes them — and
// encodes them in every format.
func benchData(b *testing.B) ([]sdktrace.ReadOnlySpan, []encoded) {
	bench.once.Do(func() {
		rec := tracetest.NewSpanRecorder()
		l := sdktrace.NewSpanLimits()
		l.EventCountLimit = 2 * benchTokens
		tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec), sdktrace.WithRawSpanLimits(l),
			sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "llm-gateway"))))
		tr := tp.Tracer(instrument.ScopeName)
		base := time.Unix(1700000000, 0)
		for i := 0; i < benchRequests; i++ {
			start := base.Add(time.Duration(i) * 137 * time.Millisecond)
			_, s := tr.Start(context.Background(), "chat llama-3-8b", trace.WithSpanKind(trace.SpanKindServer), trace.WithTimestamp(start),
				trace.WithAttributes(semconv.SchemaVersionKey.String(semconv.SchemaVersion), semconv.GenAIOperationName.String("chat"),
					semconv.GenAIRequestModel.String("llama-3-8b"), semconv.GenAIRequestStream.Bool(true), semconv.Instance.String("10.0.0.7:8000"),
					semconv.Tokens.Int(benchTokens), semconv.Chunks.Int(benchTokens), semconv.Ordinal.Int(i+1),
					semconv.StreamOutcome.String(semconv.OutcomeComplete)))
			offs := make([]time.Duration, benchTokens)
			at := 80 * time.Millisecond
			for j := range offs {
				at += 15*time.Millisecond + time.Duration((i*7919+j*104729)%5000)*time.Microsecond
				offs[j] = at
				s.AddEvent(semconv.TokenEvent, trace.WithTimestamp(start.Add(at)), trace.WithAttributes(semconv.TokenIndex.Int(j)))
			}
			s.SetAttributes(semconv.TokenTimes.String(tokentimes.Encode(offs)))
			s.End(trace.WithTimestamp(start.Add(at + time.Millisecond)))
		}
		_ = tp.Shutdown(context.Background())
		bench.spans = rec.Ended()
		bench.encs = encodeAll(b, bench.spans)
	})
	return bench.spans, bench.encs
}

// BenchmarkDecode measures decoding alone: file bytes to model.Spans.
func BenchmarkDecode(b *testing.B) {
	_, encs := benchData(b)
	for _, enc := range encs {
		b.Run(enc.name, func(b *testing.B) {
			b.SetBytes(int64(len(enc.data)))
			b.ReportAllocs()
			tokens := 0
			for b.Loop() {
				err := source.Reader(enc.name, bytes.NewReader(enc.data), nil).Spans(context.Background(), func(s *model.Span) error {
					tokens += len(s.Events)
					return nil
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			if want := b.N * benchRequests * benchTokens; tokens != want {
				b.Fatalf("decoded %d token events, want %d", tokens, want)
			}
			b.ReportMetric(float64(tokens)/b.Elapsed().Seconds(), "tokens/s")
		})
	}
}

// BenchmarkRequests measures decoding and conversion to model.Requests.
func BenchmarkRequests(b *testing.B) {
	spans, encs := benchData(b)
	run := func(b *testing.B, size int, src func() source.Source) {
		if size > 0 {
			b.SetBytes(int64(size))
		}
		b.ReportAllocs()
		tokens := 0
		for b.Loop() {
			err := source.Requests(context.Background(), src(), nil, func(r *model.Request) error {
				tokens += len(r.Tokens)
				return nil
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		if want := b.N * benchRequests * benchTokens; tokens != want {
			b.Fatalf("got %d tokens, want %d", tokens, want)
		}
		b.ReportMetric(float64(tokens)/b.Elapsed().Seconds(), "tokens/s")
	}
	b.Run("sdkspan", func(b *testing.B) { run(b, 0, func() source.Source { return sdkspan.Spans(spans) }) })
	for _, enc := range encs {
		b.Run(enc.name, func(b *testing.B) {
			run(b, len(enc.data), func() source.Source { return source.Reader(enc.name, bytes.NewReader(enc.data), nil) })
		})
	}
}
