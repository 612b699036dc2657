//go:build unix

package instrument_test

// Benchmarks of the middleware's cost per streamed token (docs/benchmarks.md
// has the figures, the command and the targets).
//
// Every per-token figure divides by the stream's 1,000 token-bearing chunks
// (streamTokens); the role, finish, usage and [DONE] chunks the middleware
// also parses are part of the cost being divided, as in a real stream.
//
// The file is built on unix only: BenchmarkStream reads the process's CPU
// time with getrusage.

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strconv"
	"sync"
	"syscall"
	"testing"
	"time"

	"go.opentelemetry.io/contrib/instrumentation/net/http/otelhttp"
	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/proto"

	"github.com/tokentrace/tokentrace/instrument"
	"github.com/tokentrace/tokentrace/instrument/tokentimes"
	"github.com/tokentrace/tokentrace/semconv"
)

// streamTokens is the number of token-bearing chunks of the benchmark stream.
const streamTokens = 1000

// vllmStream returns the SSE events of a streamed chat completion shaped like
// vLLM's OpenAI server output (about 220 bytes per chunk): a role chunk,
// one content chunk per token, a finish chunk, a usage chunk
// (stream_options.include_usage) and [DONE]. Each element is one event, as a
// streaming gateway writes and flushes it.
func vllmStream(tokens int) [][]byte {
	const (
		id    = "chatcmpl-9c6f1a2b3d4e4f60a18293a4b5c6d7e8"
		model = "meta-llama/Llama-3.1-8B-Instruct"
	)
	head := `data: {"id":"` + id + `","object":"chat.completion.chunk","created":1718000000,"model":"` + model + `","choices":[{"index":0,"delta":{`
	words := []string{" The", " engine", " streams", " one", " token", " per", " chunk", ",", " and", " the", " gateway", " flushes", " each", " one", ".", "\n", " It", "'s", " \"fast\"", " enough"}
	out := make([][]byte, 0, tokens+4)
	out = append(out, []byte(head+`"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`+"\n\n"))
	for i := range tokens {
		out = append(out, []byte(head+`"content":`+strconv.Quote(words[i%len(words)])+`},"logprobs":null,"finish_reason":null}]}`+"\n\n"))
	}
	out = append(out,
		[]byte(head+`},"logprobs":null,"finish_reason":"stop","stop_reason":null}]}`+"\n\n"),
		[]byte(fmt.Sprintf(`data: {"id":"%s","object":"chat.completion.chunk","created":1718000000,"model":"%s","choices":[],"usage":{"prompt_tokens":143,"total_tokens":%d,"completion_tokens":%d}}`+"\n\n", id, model, 143+tokens, tokens)),
		[]byte("data: [DONE]\n\n"))
	return out
}

// benchRequestBody is a realistic streamed chat request (system + user
// message, include_usage).
var benchRequestBody = []byte(`{"model":"meta-llama/Llama-3.1-8B-Instruct","stream":true,"stream_options":{"include_usage":true},"max_tokens":1024,"temperature":0.7,"messages":[` +
	`{"role":"system","content":"You are a concise assistant for an internal engineering wiki. Answer in plain English, cite the page titles you used, and say so when you do not know."},` +
	`{"role":"user","content":"Summarise the on-call runbook for the inference gateway: how to tell a slow engine from a slow client, which dashboards to open first, and when to page the model-serving team. Keep it under a thousand tokens."}]}`)

var eventStream = []string{"text/event-stream"}

// sseHandler is the gateway's inner handler: it writes and flushes every
// event of a pre-built stream. It allocates nothing itself, so that every
// allocation measured around it belongs to the middleware. After flushing
// the last event it stores the time in last.
type sseHandler struct {
	events [][]byte
	last   time.Time
}

func (h *sseHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header()["Content-Type"] = eventStream
	w.WriteHeader(http.StatusOK)
	f, _ := w.(http.Flusher)
	for _, ev := range h.events {
		if _, err := w.Write(ev); err != nil {
			return
		}
		if f != nil {
			f.Flush()
		}
	}
	h.last = time.Now()
}

// discardWriter is an in-process http.ResponseWriter and http.Flusher that
// drops the body: the benchmarks measure the middleware, not a network.
type discardWriter struct {
	h       http.Header
	code    int
	written int64
}

func newDiscardWriter() *discardWriter { return &discardWriter{h: make(http.Header)} }

func (d *discardWriter) Header() http.Header  { return d.h }
func (d *discardWriter) WriteHeader(code int) { d.code = code }
func (d *discardWriter) Flush()               {}
func (d *discardWriter) Write(p []byte) (int, error) {
	d.written += int64(len(p))
	return len(p), nil
}

// replayableBody is a request body that can be rewound without allocating.
type replayableBody struct{ bytes.Reader }

func (*replayableBody) Close() error { return nil }

// benchRequest returns a request reused by every iteration; call rewind
// before each ServeHTTP (the middleware replaces r.Body).
func benchRequest() (r *http.Request, rewind func()) {
	r = httptest.NewRequest(http.MethodPost, "http://llm-gateway:8000/v1/chat/completions", nil)
	r.Header.Set("Content-Type", "application/json")
	body := new(replayableBody)
	return r, func() {
		body.Reset(benchRequestBody)
		r.Body = body
		r.ContentLength = int64(len(benchRequestBody))
	}
}

// discardExporter is a span exporter that drops what it is given, keeping
// only the last span so the benchmark can check what was recorded.
type discardExporter struct {
	mu    sync.Mutex
	spans int
	last  sdktrace.ReadOnlySpan
}

func (e *discardExporter) ExportSpans(_ context.Context, spans []sdktrace.ReadOnlySpan) error {
	e.mu.Lock()
	e.spans += len(spans)
	if len(spans) > 0 {
		e.last = spans[len(spans)-1]
	}
	e.mu.Unlock()
	return nil
}

func (e *discardExporter) Shutdown(context.Context) error { return nil }

func (e *discardExporter) lastSpan() (sdktrace.ReadOnlySpan, int) {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.last, e.spans
}

// benchProvider is a real SDK provider that samples everything, keeps up to
// instrument.DefaultEventCountLimit (2,048) events per span — as the
// project's NewTracerProvider does, so every one of the 1,000 token events
// is kept — and exports synchronously to a discarding exporter. The
// synchronous processor puts the export (a no-op here) on the goroutine that
// ends the span, so no export work is hidden in another goroutine.
func benchProvider(b *testing.B) (*sdktrace.TracerProvider, *discardExporter) {
	exp := &discardExporter{}
	limits := sdktrace.NewSpanLimits()
	limits.EventCountLimit = instrument.DefaultEventCountLimit
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithSampler(sdktrace.AlwaysSample()),
		sdktrace.WithRawSpanLimits(limits),
		sdktrace.WithSpanProcessor(sdktrace.NewSimpleSpanProcessor(exp)))
	b.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, exp
}

// flushFinisher waits for the middleware's background finisher to end every
// span handed to it.
func flushFinisher(b *testing.B) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := instrument.Flush(ctx); err != nil {
		b.Fatalf("instrument.Flush: %v", err)
	}
}

// BenchmarkStream measures the cost per token of serving the 1,000-token
// stream through each middleware, against the inner handler alone.
//
//   - bare: the inner handler alone (the baseline).
//   - tokentrace: instrument.Handler, request path only. The span's token
//     events are written by the background finisher after ServeHTTP
//     returns; that work is flushed with the timer stopped, after every
//     request, so it never overlaps a timed request.
//   - tokentrace+finish: the same with the finisher's work inside the timed
//     region (ServeHTTP, then instrument.Flush): total CPU per token,
//     including materialising 1,000 span events and ending the span.
//   - tokentrace-compact, tokentrace-compact+finish: the same with
//     WithTokenRecording(RecordCompact) (no token events).
//   - otelhttp-writeevents: otelhttp.NewHandler with WriteEvents, the nearest
//     peer: one "write" span event per Write, all on the request path.
//
// How the per-token figures are computed:
//
//   - ns/token is b.Elapsed() (timed regions only) / (b.N × 1,000 tokens).
//   - allocs/token and B/token are the growth of runtime.MemStats Mallocs and
//     TotalAlloc across exactly the timed region of each iteration (read
//     with the timer stopped just before StartTimer and just after
//     StopTimer), summed and divided by b.N × 1,000. They equal the
//     testing package's allocs/op and B/op divided by 1,000.
//   - cpu-ns/token is the process's CPU time (getrusage user+system) across
//     the timed regions / (b.N × 1,000). The machine the figures come from
//     is shared with other work; wall time (ns/token) then includes time
//     the thread waited for a core, CPU time does not. The two getrusage
//     calls sit inside the timed region (about 1 ns/token, the same in
//     every sub-benchmark, bare included).
//   - MemStats counts the whole process, so nothing else may allocate while
//     a request is timed. The sub-benchmarks therefore run with
//     GOMAXPROCS=1 (as testing.AllocsPerRun does): the finisher worker
//     that takes the span ServeHTTP queued cannot run before the
//     iteration's counters are read, and is then woken, untimed, by
//     instrument.Flush. It also keeps
//     garbage collection on the measured core instead of letting GC workers
//     absorb it on an idle one, so that on an otherwise idle machine
//     ns/token equals cpu-ns/token.
func BenchmarkStream(b *testing.B) {
	events := vllmStream(streamTokens)
	for _, bc := range []struct {
		name     string
		wrap     func(b *testing.B, inner http.Handler) (http.Handler, *discardExporter)
		finish   bool // instrument.Flush inside the timed region
		tokEvent int  // token events expected on the exported span; -1: not tokentrace
	}{
		{name: "bare", wrap: func(_ *testing.B, inner http.Handler) (http.Handler, *discardExporter) { return inner, nil }, tokEvent: -1},
		{name: "tokentrace", wrap: tokentraceWrap(), tokEvent: streamTokens},
		{name: "tokentrace+finish", wrap: tokentraceWrap(), finish: true, tokEvent: streamTokens},
		{name: "tokentrace-compact", wrap: tokentraceWrap(instrument.WithTokenRecording(instrument.RecordCompact))},
		{name: "tokentrace-compact+finish", wrap: tokentraceWrap(instrument.WithTokenRecording(instrument.RecordCompact)), finish: true},
		{name: "otelhttp-writeevents", wrap: otelhttpWrap, tokEvent: -1},
	} {
		b.Run(bc.name, func(b *testing.B) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
			inner := &sseHandler{events: events}
			h, exp := bc.wrap(b, inner)
			w := newDiscardWriter()
			r, rewind := benchRequest()
			var before, after runtime.MemStats
			var mallocs, allocBytes uint64
			var cpu time.Duration
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				flushFinisher(b)
				rewind()
				runtime.ReadMemStats(&before)
				b.StartTimer()
				cpu0 := processCPU()

				h.ServeHTTP(w, r)
				if bc.finish {
					flushFinisher(b)
				}

				cpu += processCPU() - cpu0
				b.StopTimer()
				runtime.ReadMemStats(&after)
				mallocs += after.Mallocs - before.Mallocs
				allocBytes += after.TotalAlloc - before.TotalAlloc
				b.StartTimer()
			}
			b.StopTimer()
			flushFinisher(b)
			tokens := float64(b.N) * streamTokens
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/tokens, "ns/token")
			b.ReportMetric(float64(cpu.Nanoseconds())/tokens, "cpu-ns/token")
			b.ReportMetric(float64(mallocs)/tokens, "allocs/token")
			b.ReportMetric(float64(allocBytes)/tokens, "B/token")

			if w.code != http.StatusOK || w.written == 0 {
				b.Fatalf("response: status %d, %d bytes", w.code, w.written)
			}
			if exp != nil {
				checkExported(b, exp, bc.tokEvent)
			}
		})
	}
}

func tokentraceWrap(opts ...instrument.Option) func(*testing.B, http.Handler) (http.Handler, *discardExporter) {
	return func(b *testing.B, inner http.Handler) (http.Handler, *discardExporter) {
		tp, exp := benchProvider(b)
		return instrument.Handler(inner, append([]instrument.Option{instrument.WithTracerProvider(tp)}, opts...)...), exp
	}
}

func otelhttpWrap(b *testing.B, inner http.Handler) (http.Handler, *discardExporter) {
	tp, exp := benchProvider(b)
	return otelhttp.NewHandler(inner, "chat",
		otelhttp.WithTracerProvider(tp),
		otelhttp.WithMessageEvents(otelhttp.WriteEvents)), exp
}

// checkExported verifies that the benchmark recorded what it claims to:
// for tokentrace, a complete span with 1,000 tokens, the compact times and
// tokEvents token events; for otelhttp (tokEvents < 0), one write event per
// SSE event.
func checkExported(b *testing.B, exp *discardExporter, tokEvents int) {
	b.Helper()
	s, n := exp.lastSpan()
	if s == nil || n < b.N {
		b.Fatalf("exported %d spans for %d requests", n, b.N)
	}
	if tokEvents < 0 {
		if got := len(s.Events()); got != streamTokens+4 {
			b.Fatalf("otelhttp span has %d events, want %d", got, streamTokens+4)
		}
		return
	}
	attrs := map[attribute.Key]attribute.Value{}
	for _, kv := range s.Attributes() {
		attrs[kv.Key] = kv.Value
	}
	if got := attrs[semconv.Tokens].AsInt64(); got != streamTokens {
		b.Fatalf("span has %d tokens, want %d", got, streamTokens)
	}
	if got := attrs[semconv.StreamOutcome].AsString(); got != semconv.OutcomeComplete {
		b.Fatalf("span outcome %q", got)
	}
	offs, err := tokentimes.Decode(attrs[semconv.TokenTimes].AsString())
	if err != nil || len(offs) != streamTokens {
		b.Fatalf("compact token times: %d entries, %v", len(offs), err)
	}
	got := 0
	for _, e := range s.Events() {
		if e.Name == semconv.TokenEvent {
			got++
		}
	}
	if got != tokEvents {
		b.Fatalf("span has %d token events, want %d", got, tokEvents)
	}
}

// BenchmarkLastTokenToReturn measures how long the middleware holds the
// response after the last byte was written: from the inner handler's
// time.Now() after flushing [DONE] to ServeHTTP's return (ns/return, the
// mean; p99-ns/return, the 99th percentile over the run). The finisher's
// background work is flushed with the timer stopped after each request.
// GOMAXPROCS is left as it is (run with -cpu 1 to see the return path
// with a single P): a finisher worker may run on another core while
// ServeHTTP returns, as it would in a gateway. For the
// same reason this benchmark's B/op and allocs/op include whatever the
// finisher allocated concurrently; BenchmarkStream has the request-path
// allocations.
func BenchmarkLastTokenToReturn(b *testing.B) {
	events := vllmStream(streamTokens)
	for _, bc := range []struct {
		name string
		wrap func(b *testing.B, inner http.Handler) (http.Handler, *discardExporter)
	}{
		{"bare", func(_ *testing.B, inner http.Handler) (http.Handler, *discardExporter) { return inner, nil }},
		{"tokentrace", tokentraceWrap()},
		{"tokentrace-compact", tokentraceWrap(instrument.WithTokenRecording(instrument.RecordCompact))},
		{"otelhttp-writeevents", otelhttpWrap},
	} {
		b.Run(bc.name, func(b *testing.B) {
			inner := &sseHandler{events: events}
			h, _ := bc.wrap(b, inner)
			w := newDiscardWriter()
			r, rewind := benchRequest()
			gaps := make([]time.Duration, 0, b.N)
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				flushFinisher(b)
				rewind()
				b.StartTimer()
				h.ServeHTTP(w, r)
				gaps = append(gaps, time.Since(inner.last))
			}
			b.StopTimer()
			flushFinisher(b)
			var sum time.Duration
			for _, g := range gaps {
				sum += g
			}
			slices.Sort(gaps)
			b.ReportMetric(float64(sum.Nanoseconds())/float64(len(gaps)), "ns/return")
			b.ReportMetric(float64(gaps[(len(gaps)-1)*99/100].Nanoseconds()), "p99-ns/return")
		})
	}
}

// BenchmarkOTLPBytesPerToken measures what the token times add to the OTLP
// protobuf encoding of a span (B/token = bytes / tokens), for a span
// recorded through Handler:
//
//   - events: the token events, each encoded as an OTLP Span.Event (fixed64
//     time, name, tokentrace.token.index), as the difference between the
//     span's encoded size with and without them;
//   - compact: the tokentrace.token_times attribute alone, likewise.
//
// A benchmark writes its stream in microseconds, so the recorded times are
// replaced by realistic ones: a 180 ms TTFT, then the given gap between
// tokens (constant, or ±20% uniform jitter from a fixed seed). An event's
// size does not depend on its time (fixed64); the compact encoding's does
// (2 varint bytes per gap below 16.384 ms, 3 below 2.1 s). The timed loop
// is proto.Marshal of the span with that part.
func BenchmarkOTLPBytesPerToken(b *testing.B) {
	for _, tokens := range []int{1000, 2000} {
		stub := recordSpan(b, tokens)
		for _, gap := range []struct {
			name   string
			mean   time.Duration
			jitter float64
		}{
			{"1.6ms", 1600 * time.Microsecond, 0},
			{"15ms", 15 * time.Millisecond, 0},
			{"15ms-jitter20pct", 15 * time.Millisecond, 0.2},
			{"30ms", 30 * time.Millisecond, 0},
		} {
			offs := syntheticOffsets(tokens, 180*time.Millisecond, gap.mean, gap.jitter)
			base, withEvents, withCompact := otlpSpans(b, stub, offs)
			for _, part := range []struct {
				name string
				span *tracepb.Span
			}{{"events", withEvents}, {"compact", withCompact}} {
				b.Run(fmt.Sprintf("%s/tokens=%d/gap=%s", part.name, tokens, gap.name), func(b *testing.B) {
					added := proto.Size(part.span) - proto.Size(base)
					b.ReportAllocs()
					for b.Loop() {
						if _, err := proto.Marshal(part.span); err != nil {
							b.Fatal(err)
						}
					}
					b.ReportMetric(float64(added)/float64(tokens), "B/token")
				})
			}
		}
	}
}

// recordSpan serves a tokens-token stream through Handler into an in-memory
// exporter and returns the span, checked to hold every token event and the
// compact times.
func recordSpan(b *testing.B, tokens int) tracetest.SpanStub {
	b.Helper()
	exp := tracetest.NewInMemoryExporter()
	limits := sdktrace.NewSpanLimits()
	limits.EventCountLimit = 2 * tokens
	tp := sdktrace.NewTracerProvider(sdktrace.WithSyncer(exp), sdktrace.WithRawSpanLimits(limits))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	h := instrument.Handler(&sseHandler{events: vllmStream(tokens)}, instrument.WithTracerProvider(tp))
	r, rewind := benchRequest()
	rewind()
	h.ServeHTTP(newDiscardWriter(), r)
	flushFinisher(b)
	spans := exp.GetSpans()
	if len(spans) != 1 {
		b.Fatalf("recorded %d spans, want 1", len(spans))
	}
	s := spans[0]
	n := 0
	for _, e := range s.Events {
		if e.Name == semconv.TokenEvent {
			n++
		}
	}
	var enc string
	for _, kv := range s.Attributes {
		if kv.Key == semconv.TokenTimes {
			enc = kv.Value.AsString()
		}
	}
	if offs, err := tokentimes.Decode(enc); n != tokens || err != nil || len(offs) != tokens {
		b.Fatalf("span has %d token events and %d compact times (%v), want %d", n, len(offs), err, tokens)
	}
	return s
}

// syntheticOffsets returns token times since the span start: ttft, then
// gaps of mean ± jitter×mean (uniform, fixed seed).
func syntheticOffsets(n int, ttft, mean time.Duration, jitter float64) []time.Duration {
	rng := rand.New(rand.NewPCG(1, 2))
	offs := make([]time.Duration, n)
	at := ttft
	for i := range offs {
		if i > 0 {
			at += time.Duration(float64(mean) * (1 + jitter*(2*rng.Float64()-1)))
		}
		offs[i] = at
	}
	return offs
}

// otlpSpans converts stub to OTLP protobuf three times: base (without token
// events and without the compact attribute), withEvents (base plus the token
// events, re-stamped at start+offs) and withCompact (base plus the
// tokentrace.token_times attribute encoding offs).
func otlpSpans(b *testing.B, stub tracetest.SpanStub, offs []time.Duration) (base, withEvents, withCompact *tracepb.Span) {
	b.Helper()
	tid, sid := stub.SpanContext.TraceID(), stub.SpanContext.SpanID()
	newSpan := func() *tracepb.Span {
		s := &tracepb.Span{
			TraceId:           tid[:],
			SpanId:            sid[:],
			Name:              stub.Name,
			Kind:              tracepb.Span_SpanKind(stub.SpanKind),
			StartTimeUnixNano: uint64(stub.StartTime.UnixNano()),
			EndTimeUnixNano:   uint64(stub.StartTime.Add(offs[len(offs)-1] + time.Millisecond).UnixNano()),
		}
		for _, kv := range stub.Attributes {
			if kv.Key != semconv.TokenTimes {
				s.Attributes = append(s.Attributes, otlpKeyValue(kv))
			}
		}
		return s
	}
	base, withEvents, withCompact = newSpan(), newSpan(), newSpan()
	i := 0
	for _, e := range stub.Events {
		if e.Name != semconv.TokenEvent {
			continue
		}
		ev := &tracepb.Span_Event{
			TimeUnixNano: uint64(stub.StartTime.Add(offs[i]).UnixNano()),
			Name:         e.Name,
		}
		for _, kv := range e.Attributes {
			ev.Attributes = append(ev.Attributes, otlpKeyValue(kv))
		}
		withEvents.Events = append(withEvents.Events, ev)
		i++
	}
	if i != len(offs) {
		b.Fatalf("%d token events for %d offsets", i, len(offs))
	}
	withCompact.Attributes = append(withCompact.Attributes,
		otlpKeyValue(semconv.TokenTimes.String(tokentimes.Encode(offs))))
	return base, withEvents, withCompact
}

// otlpKeyValue converts an attribute as the OTLP exporter does.
func otlpKeyValue(kv attribute.KeyValue) *commonpb.KeyValue {
	av := &commonpb.AnyValue{}
	switch kv.Value.Type() {
	case attribute.BOOL:
		av.Value = &commonpb.AnyValue_BoolValue{BoolValue: kv.Value.AsBool()}
	case attribute.INT64:
		av.Value = &commonpb.AnyValue_IntValue{IntValue: kv.Value.AsInt64()}
	case attribute.FLOAT64:
		av.Value = &commonpb.AnyValue_DoubleValue{DoubleValue: kv.Value.AsFloat64()}
	case attribute.STRINGSLICE:
		vals := make([]*commonpb.AnyValue, 0, len(kv.Value.AsStringSlice()))
		for _, s := range kv.Value.AsStringSlice() {
			vals = append(vals, &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: s}})
		}
		av.Value = &commonpb.AnyValue_ArrayValue{ArrayValue: &commonpb.ArrayValue{Values: vals}}
	default:
		av.Value = &commonpb.AnyValue_StringValue{StringValue: kv.Value.Emit()}
	}
	return &commonpb.KeyValue{Key: string(kv.Key), Value: av}
}

// BenchmarkTokenTimesEncode and BenchmarkTokenTimesDecode measure the
// compact encoding of 1,000 token times 15 ms ±20% apart (ns/token,
// allocs/token and B/token from the testing package's counts / 1,000).
func BenchmarkTokenTimesEncode(b *testing.B) {
	offs := syntheticOffsets(streamTokens, 180*time.Millisecond, 15*time.Millisecond, 0.2)
	b.Run("string", func(b *testing.B) {
		perToken(b, streamTokens, func() { sinkString = tokentimes.Encode(offs) })
	})
	b.Run("append-reused-buffer", func(b *testing.B) {
		buf := tokentimes.Append(nil, offs)
		perToken(b, streamTokens, func() { buf = tokentimes.Append(buf[:0], offs) })
	})
}

func BenchmarkTokenTimesDecode(b *testing.B) {
	enc := tokentimes.Encode(syntheticOffsets(streamTokens, 180*time.Millisecond, 15*time.Millisecond, 0.2))
	perToken(b, streamTokens, func() {
		offs, err := tokentimes.Decode(enc)
		if err != nil || len(offs) != streamTokens {
			b.Fatalf("decoded %d, %v", len(offs), err)
		}
	})
}

var sinkString string

// perToken runs op in the benchmark loop and reports ns/token,
// allocs/token and B/token. The allocations are MemStats growth across the
// whole loop (nothing else runs meanwhile: the finisher is flushed first).
func perToken(b *testing.B, tokens int, op func()) {
	flushFinisher(b)
	var before, after runtime.MemStats
	b.ReportAllocs()
	runtime.ReadMemStats(&before)
	b.ResetTimer()
	for range b.N {
		op()
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	n := float64(b.N) * float64(tokens)
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/n, "ns/token")
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/n, "allocs/token")
	b.ReportMetric(float64(after.TotalAlloc-before.TotalAlloc)/n, "B/token")
}

// processCPU returns the user+system CPU time the process has used.
func processCPU() time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
