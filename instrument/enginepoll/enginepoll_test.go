package enginepoll_test

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"

	"github.com/tokentrace/tokentrace/instrument"
	"github.com/tokentrace/tokentrace/instrument/enginepoll"
	"github.com/tokentrace/tokentrace/internal/sim"
	"github.com/tokentrace/tokentrace/semconv"
)

func startSim(t *testing.T, cfg sim.Config) (*sim.Engine, *httptest.Server) {
	t.Helper()
	if cfg.Profile.Fixed == 0 {
		p, err := sim.LookupProfile("fast")
		if err != nil {
			t.Fatal(err)
		}
		cfg.Profile = p
	}
	e, err := sim.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go e.Run(ctx)
	srv := httptest.NewServer(sim.NewServer(e))
	t.Cleanup(func() { srv.Close(); cancel(); e.Wait() })
	return e, srv
}

// stream sends one streaming chat completion through client and reads it.
func stream(t *testing.T, client *http.Client, url string, maxTokens int) {
	t.Helper()
	body := fmt.Sprintf(`{"model":"sim-llama","stream":true,"max_tokens":%d,"messages":[{"role":"user","content":%q}]}`,
		maxTokens, strings.Repeat("word ", 200))
	resp, err := client.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		t.Error(err)
		return
	}
	defer resp.Body.Close()
	if _, err := io.Copy(io.Discard, resp.Body); err != nil {
		t.Error(err)
	}
	if resp.StatusCode != http.StatusOK {
		t.Errorf("status %d", resp.StatusCode)
	}
}

func eventAttr(e sdktrace.Event, key attribute.Key) (attribute.Value, bool) {
	for _, kv := range e.Attributes {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

// TestPollerPutsSimEnginePreemptionsAndGCOnInFlightSpans runs a real
// simulated engine whose KV cache is too small for the streams sent and
// whose Python-like GC runs every 60 ms, polls its /metrics, and checks the
// spans of the requests in flight got preemption and GC events from the
// metrics, spanning the poll window.
func TestPollerPutsSimEnginePreemptionsAndGCOnInFlightSpans(t *testing.T) {
	prof, err := sim.LookupProfile("fast")
	if err != nil {
		t.Fatal(err)
	}
	prof.MaxContext = 640
	_, srv := startSim(t, sim.Config{
		Profile: prof,
		KV:      sim.KVConfig{Blocks: 40, BlockSize: 16},
		GC:      sim.GCConfig{Period: 60 * time.Millisecond, MinPause: 5 * time.Millisecond, MaxPause: 10 * time.Millisecond},
		Seed:    3,
	})
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	tracker := instrument.NewTracker()
	client := &http.Client{Transport: instrument.Transport(nil, instrument.WithTracker(tracker), instrument.WithTracerProvider(tp))}

	var logs bytes.Buffer
	p, err := enginepoll.New(tracker, enginepoll.Config{
		URL:      srv.URL + "/metrics",
		Interval: 20 * time.Millisecond,
		Logger:   slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if want := strings.TrimPrefix(srv.URL, "http://"); p.Instance() != want {
		t.Fatalf("instance %q, want %q (the Transport's default)", p.Instance(), want)
	}
	stop := p.Start(context.Background())
	defer stop()

	var wg sync.WaitGroup
	for i := 0; i < 4; i++ {
		wg.Add(1)
		go func() { defer wg.Done(); stream(t, client, srv.URL, 300) }()
		time.Sleep(10 * time.Millisecond)
	}
	wg.Wait()
	stop()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := instrument.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	var preempt, gc int
	for _, s := range rec.Ended() {
		for _, e := range s.Events() {
			if e.Name != semconv.PreemptionEvent && e.Name != semconv.GCPauseEvent {
				continue
			}
			src, _ := eventAttr(e, semconv.EngineSource)
			unc, _ := eventAttr(e, semconv.EngineUncertaintyMillis)
			dur, _ := eventAttr(e, semconv.EngineDurationMillis)
			if src.AsString() != semconv.SourceMetrics {
				t.Errorf("%s: source %q, want %q", e.Name, src.AsString(), semconv.SourceMetrics)
			}
			// The window runs from one read to the next (the ticker's 20 ms,
			// give or take scheduling).
			if unc.AsFloat64() <= 0 || unc.AsFloat64() > 1000 || unc.AsFloat64() != dur.AsFloat64() {
				t.Errorf("%s: uncertainty %v ms, duration %v ms: want both the poll window", e.Name, unc.AsFloat64(), dur.AsFloat64())
			}
			if e.Time.Before(s.StartTime().Add(-time.Second)) || e.Time.After(s.EndTime()) {
				t.Errorf("%s at %v outside its span [%v, %v]", e.Name, e.Time, s.StartTime(), s.EndTime())
			}
			if e.Name == semconv.PreemptionEvent {
				preempt++
				if m, _ := eventAttr(e, semconv.PreemptionMode); m.AsString() != semconv.PreemptionRecompute {
					t.Errorf("preemption mode %q", m.AsString())
				}
			} else {
				gc++
			}
		}
	}
	if preempt == 0 || gc == 0 {
		t.Errorf("preemption events %d, GC events %d on %d spans: want both > 0", preempt, gc, len(rec.Ended()))
	}
	if logs.Len() != 0 {
		t.Errorf("a healthy endpoint logged: %s", logs.String())
	}
}

// TestPollerBadEndpointsLogOnceAndNeverTouchRequests polls an unreachable
// endpoint and one answering garbage while requests stream through the
// Transport: each is logged once, the requests succeed, no event appears.
func TestPollerBadEndpointsLogOnceAndNeverTouchRequests(t *testing.T) {
	_, engine := startSim(t, sim.Config{Seed: 1})
	garbage := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = w.Write([]byte("vllm:num_preemptions_total{ 12 garbage\n\x00\x01 not metrics {{{\n"))
	}))
	defer garbage.Close()
	dead := httptest.NewServer(http.NotFoundHandler())
	deadURL := dead.URL
	dead.Close() // nothing listens there now

	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	tracker := instrument.NewTracker()
	client := &http.Client{Transport: instrument.Transport(nil, instrument.WithTracker(tracker), instrument.WithTracerProvider(tp))}
	instance := strings.TrimPrefix(engine.URL, "http://")

	for _, tc := range []struct{ name, url string }{
		{"unreachable", deadURL + "/metrics"},
		{"garbage", garbage.URL + "/metrics"},
		{"html", engine.URL + "/v1/models"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var logs bytes.Buffer
			var mu sync.Mutex
			w := writerFunc(func(b []byte) (int, error) { mu.Lock(); defer mu.Unlock(); return logs.Write(b) })
			p, err := enginepoll.New(tracker, enginepoll.Config{
				URL: tc.url, Instance: instance, Interval: 5 * time.Millisecond,
				Logger: slog.New(slog.NewTextHandler(w, nil)),
			})
			if err != nil {
				t.Fatal(err)
			}
			if err := p.Poll(context.Background()); err == nil {
				t.Fatal("Poll succeeded on a bad endpoint")
			}
			stop := p.Start(context.Background())
			for i := 0; i < 3; i++ {
				stream(t, client, engine.URL, 20)
			}
			stop()
			mu.Lock()
			defer mu.Unlock()
			if n := strings.Count(logs.String(), "engine metrics unavailable"); n != 1 {
				t.Errorf("logged %d times, want once:\n%s", n, logs.String())
			}
		})
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := instrument.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	spans := rec.Ended()
	if len(spans) != 9 {
		t.Fatalf("%d spans, want 9", len(spans))
	}
	for _, s := range spans {
		for _, e := range s.Events() {
			if e.Name == semconv.PreemptionEvent || e.Name == semconv.GCPauseEvent || e.Name == semconv.KVCacheHighEvent {
				t.Errorf("event %s from a bad endpoint", e.Name)
			}
		}
		if v, _ := attrOf(s, semconv.StreamOutcome); v.AsString() != semconv.OutcomeComplete {
			t.Errorf("outcome %q, want complete", v.AsString())
		}
	}
}

// TestPollerEventsFromCounterChanges serves hand-made expositions and
// checks each change becomes the right event, and a reset none.
func TestPollerEventsFromCounterChanges(t *testing.T) {
	var mu sync.Mutex
	body := ""
	set := func(preempt, swapped, kv, gc2 float64) {
		mu.Lock()
		defer mu.Unlock()
		body = fmt.Sprintf(`# TYPE vllm:num_preemptions_total counter
vllm:num_preemptions_total{model_name="m"} %g
# TYPE vllm:num_requests_swapped gauge
vllm:num_requests_swapped{model_name="m"} %g
# TYPE vllm:kv_cache_usage_perc gauge
vllm:kv_cache_usage_perc{model_name="m"} %g
# TYPE python_gc_collections_total counter
python_gc_collections_total{generation="0"} 100
python_gc_collections_total{generation="2"} %g
`, preempt, swapped, kv, gc2)
	}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		defer mu.Unlock()
		w.Header().Set("Content-Type", "text/plain; version=0.0.4")
		_, _ = io.WriteString(w, body)
	}))
	defer srv.Close()

	// A request "in flight" on the instance: a Transport stream held open.
	hold := make(chan struct{})
	engine := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		_, _ = io.WriteString(w, `data: {"choices":[{"delta":{"content":"a"}}]}`+"\n\n")
		w.(http.Flusher).Flush()
		<-hold
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	}))
	defer engine.Close()
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	tracker := instrument.NewTracker()
	client := &http.Client{Transport: instrument.Transport(nil, instrument.WithTracker(tracker), instrument.WithTracerProvider(tp))}
	done := make(chan struct{})
	go func() { defer close(done); stream(t, client, engine.URL, 5) }()
	instance := strings.TrimPrefix(engine.URL, "http://")
	for tracker.InFlight(instance) == 0 {
		time.Sleep(time.Millisecond)
	}

	p, err := enginepoll.New(tracker, enginepoll.Config{URL: srv.URL, Instance: instance, KVThreshold: 0.9})
	if err != nil {
		t.Fatal(err)
	}
	poll := func(preempt, swapped, kv, gc2 float64) {
		t.Helper()
		set(preempt, swapped, kv, gc2)
		time.Sleep(2 * time.Millisecond)
		if err := p.Poll(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
	poll(5, 0, 0.5, 10) // baseline
	poll(8, 0, 0.5, 10) // 3 preemptions
	poll(8, 2, 0.5, 10) // 2 swapped
	poll(8, 2, 0.95, 10)
	poll(8, 2, 0.97, 11) // still high: no second kv event; one gen-2 GC
	poll(0, 0, 0.1, 0)   // engine restart: counters reset, nothing
	close(hold)
	<-done
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := instrument.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	spans := rec.Ended()
	if len(spans) != 1 {
		t.Fatalf("%d spans", len(spans))
	}
	var got []string
	for _, e := range spans[0].Events() {
		switch e.Name {
		case semconv.PreemptionEvent:
			mode, _ := eventAttr(e, semconv.PreemptionMode)
			n, _ := eventAttr(e, semconv.PreemptionCount)
			got = append(got, fmt.Sprintf("preemption %s x%d", mode.AsString(), n.AsInt64()))
		case semconv.KVCacheHighEvent:
			u, _ := eventAttr(e, semconv.KVCacheUsage)
			th, _ := eventAttr(e, semconv.KVCacheThreshold)
			got = append(got, fmt.Sprintf("kv %.2f/%.2f", u.AsFloat64(), th.AsFloat64()))
		case semconv.GCPauseEvent:
			got = append(got, "gc")
		}
	}
	want := []string{"preemption recompute x3", "preemption swap x2", "kv 0.95/0.90", "gc"}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("events %v, want %v", got, want)
	}
}

func attrOf(s sdktrace.ReadOnlySpan, key attribute.Key) (attribute.Value, bool) {
	for _, kv := range s.Attributes() {
		if kv.Key == key {
			return kv.Value, true
		}
	}
	return attribute.Value{}, false
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(b []byte) (int, error) { return f(b) }
