package instrument_test

import (
	"context"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/tokentrace/tokentrace/instrument"
	"github.com/tokentrace/tokentrace/instrument/tokentimes"
	"github.com/tokentrace/tokentrace/semconv"
)

// A gateway in front of an OpenAI-compatible engine: the reverse proxy is
// wrapped with Handler, its transport with Transport, and both share one
// Tracker so that engine events reach the right spans.
func Example() {
	engineSrv := newStandInEngine() // streams three tokens, as vLLM would
	defer engineSrv.Close()

	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))

	upstream, _ := url.Parse(engineSrv.URL)
	tracker := instrument.NewTracker()
	proxy := httputil.NewSingleHostReverseProxy(upstream)
	proxy.Transport = instrument.Transport(http.DefaultTransport, instrument.WithTracker(tracker), instrument.WithTracerProvider(tp))
	gateway := httptest.NewServer(instrument.Handler(proxy, instrument.WithTracker(tracker), instrument.WithTracerProvider(tp)))
	defer gateway.Close()

	resp, err := http.Post(gateway.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"llama","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		log.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	_ = instrument.Flush(context.Background()) // token events are written in the background
	span := rec.Ended()[0]
	events := 0
	for _, e := range span.Events() {
		if e.Name == semconv.TokenEvent {
			events++
		}
	}
	for _, kv := range span.Attributes() {
		switch kv.Key {
		case semconv.Tokens, semconv.StreamOutcome:
			fmt.Printf("%s=%s\n", kv.Key, kv.Value.Emit())
		}
	}
	fmt.Println("span:", span.Name(), "token events:", events)
	// Output:
	// tokentrace.stream.outcome=complete
	// tokentrace.tokens=3
	// span: chat llama token events: 3
}

// An in-process engine (or a poller of an engine's metrics) reports what
// it did; every request in flight on that instance gets the event.
func ExampleTracker_RecordPrefill() {
	tracker := instrument.NewTracker()
	// ... Handler and Transport built WithTracker(tracker) ...
	tracker.RecordPrefill("10.0.0.7:8000", instrument.Prefill{
		RequestID:    "chatcmpl-4f2a",
		PromptTokens: 3100,
		Start:        time.Now().Add(-210 * time.Millisecond),
		Duration:     210 * time.Millisecond,
	})
	fmt.Println("in flight:", tracker.InFlight("10.0.0.7:8000"))
	// Output: in flight: 0
}

// The gateway's own Go GC pauses, on every request in flight.
func ExampleTracker_WatchGoGC() {
	tracker := instrument.NewTracker()
	stop := tracker.WatchGoGC(instrument.DefaultGCPollInterval, instrument.DefaultMinGCPause)
	defer stop()
	// ... serve with instrument.Handler(h, instrument.WithTracker(tracker)) ...
}

// Export to a local Jaeger over OTLP gRPC with limits that keep per-token
// spans whole, and flush the last spans on shutdown.
func ExampleNewTracerProvider() {
	ctx := context.Background()
	tp, err := instrument.NewTracerProvider(ctx,
		instrument.WithEndpoint("localhost:4317"),
		instrument.WithServiceName("llm-gateway"))
	if err != nil {
		log.Fatal(err)
	}
	defer func() {
		ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		_ = tp.Shutdown(ctx) // waits for pending request spans, then exports them
	}()
	handler := instrument.Handler(http.NotFoundHandler(), instrument.WithTracerProvider(tp))
	_ = handler
}

// Reading the compact token times back: offsets from the span start.
func ExampleWithTokenRecording() {
	_ = instrument.WithTokenRecording(instrument.RecordCompact) // a few bytes per token, no events

	offsets, _ := tokentimes.Decode(tokentimes.Encode([]time.Duration{
		12 * time.Millisecond, 27 * time.Millisecond, 112 * time.Millisecond,
	}))
	fmt.Println(offsets)
	// Output: [12ms 27ms 112ms]
}

// Metrics for dashboards and alerts: the per-request histograms come from
// the meter provider, the per-token ones (inter-token latency) from a
// TokenHistograms that the same reader produces from. With the
// OpenTelemetry Prometheus exporter, pass it as otelprom.WithProducer(th).
func ExampleNewTokenHistograms() {
	engineSrv := newStandInEngine()
	defer engineSrv.Close()

	th := instrument.NewTokenHistograms()
	reader := sdkmetric.NewManualReader(sdkmetric.WithProducer(th))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	classify := func(*http.Request, instrument.RequestInfo) instrument.Classification {
		return instrument.Classification{ModelVersion: "llama-3.1", PromptType: "chat"}
	}
	upstream, _ := url.Parse(engineSrv.URL)
	gateway := httptest.NewServer(instrument.Handler(httputil.NewSingleHostReverseProxy(upstream),
		instrument.WithMeterProvider(mp), instrument.WithTokenHistograms(th), instrument.WithClassifier(classify)))
	defer gateway.Close()

	resp, err := http.Post(gateway.URL+"/v1/chat/completions", "application/json",
		strings.NewReader(`{"model":"llama","stream":true,"messages":[{"role":"user","content":"hi"}]}`))
	if err != nil {
		log.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()

	_ = instrument.Flush(context.Background()) // metrics are recorded as each span completes
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		log.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if h, ok := m.Data.(metricdata.Histogram[float64]); ok && (m.Name == semconv.MetricLLMTPOT || m.Name == semconv.MetricInterTokenLatency) {
				p := h.DataPoints[0]
				v, _ := p.Attributes.Value(semconv.MetricModelVersion)
				fmt.Printf("%s{model_version=%q} count %d\n", m.Name, v.Emit(), p.Count)
			}
		}
	}
	// Unordered output:
	// llm_tpot{model_version="llama-3.1"} count 1
	// tokentrace.inter_token_latency{model_version="llama-3.1"} count 2
}

// newStandInEngine serves an OpenAI-compatible stream of three tokens, as
// vLLM would, in place of a real engine.
func newStandInEngine() *httptest.Server {
	return httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, tok := range []string{"Hello", " there", "!"} {
			fmt.Fprintf(w, "data: {\"id\":\"c1\",\"model\":\"llama\",\"choices\":[{\"index\":0,\"delta\":{\"content\":%q}}]}\n\n", tok)
			w.(http.Flusher).Flush()
		}
		fmt.Fprint(w, "data: {\"id\":\"c1\",\"choices\":[{\"index\":0,\"delta\":{},\"finish_reason\":\"stop\"}]}\n\ndata: [DONE]\n\n")
	}))
}
