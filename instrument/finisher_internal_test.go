package instrument

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/tokentrace/tokentrace/semconv"
)

// finisherState returns an ended SSE request with three timed tokens.
func finisherState(t *testing.T, tr trace.Tracer) *reqState {
	t.Helper()
	st := newState(newConfig(nil), trace.SpanKindServer, time.Now())
	_, st.span = tr.Start(context.Background(), "chat m")
	st.sse, st.decided, st.done = true, true, true
	for i := range 3 {
		st.nowOff = time.Duration(i+1) * time.Millisecond
		st.token(1)
	}
	return st
}

func TestFinisherBoundsPendingAndFlushWaits(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	tr := tp.Tracer("test")

	f := newFinisher(2, 3, time.Millisecond, 4*time.Millisecond, 20*time.Millisecond)
	// Pretend a worker is alive but busy: submissions only queue.
	f.workers = 1
	for range 5 {
		f.submit(finisherState(t, tr), time.Now(), nil)
	}
	// The first 3 wait; the last 2 were completed inline, compact only.
	if f.pending != 3 || len(f.queue) != 3 {
		t.Fatalf("pending %d, queued %d; want 3, 3", f.pending, len(f.queue))
	}
	ended := rec.Ended()
	if len(ended) != 2 {
		t.Fatalf("%d spans ended inline, want 2", len(ended))
	}
	for _, s := range ended {
		if got := tokenEvents(s); got != 0 {
			t.Errorf("inline span has %d token events, want 0", got)
		}
		if !hasAttr(s, semconv.TokenEventsDropped) || !hasAttr(s, semconv.TokenTimes) {
			t.Errorf("inline span lacks %s or %s", semconv.TokenEventsDropped, semconv.TokenTimes)
		}
	}

	// Flush waits for the queued ones, once a worker runs.
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Millisecond)
	if err := f.flush(ctx); err == nil {
		t.Error("flush returned with 3 spans pending and no worker")
	}
	cancel()
	go f.work()
	ctx, cancel = context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	ended = rec.Ended()
	if len(ended) != 5 {
		t.Fatalf("%d spans ended, want 5", len(ended))
	}
	for _, s := range ended[2:] {
		if got := tokenEvents(s); got != 3 || hasAttr(s, semconv.TokenEventsDropped) {
			t.Errorf("background span has %d token events (want 3), dropped flag %v", got, hasAttr(s, semconv.TokenEventsDropped))
		}
	}

	// The idle worker goes away, and the next submission starts one.
	waitWorkers(t, f, 0)
	f.submit(finisherState(t, tr), time.Now(), nil)
	if err := f.flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	if n := len(rec.Ended()); n != 6 {
		t.Fatalf("%d spans ended, want 6", n)
	}
	waitWorkers(t, f, 0)
}

func TestFinisherStartsWorkersForABacklog(t *testing.T) {
	rec := tracetest.NewSpanRecorder()
	tp := sdktrace.NewTracerProvider(sdktrace.WithSpanProcessor(rec))
	defer func() { _ = tp.Shutdown(context.Background()) }()
	tr := tp.Tracer("test")

	f := newFinisher(3, 1000, time.Millisecond, 4*time.Millisecond, 20*time.Millisecond)
	f.workers = 1 // a worker that is not running yet
	for range 50 {
		f.submit(finisherState(t, tr), time.Now(), nil)
	}
	go f.work()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := f.flush(ctx); err != nil {
		t.Fatalf("flush: %v", err)
	}
	f.mu.Lock()
	w := f.workers
	f.mu.Unlock()
	if w > 3 {
		t.Errorf("%d workers, want at most 3", w)
	}
	if n := len(rec.Ended()); n != 50 {
		t.Fatalf("%d spans ended, want 50", n)
	}
	waitWorkers(t, f, 0)
}

func waitWorkers(t *testing.T, f *finisher, want int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		f.mu.Lock()
		n := f.workers
		f.mu.Unlock()
		if n == want {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d finisher workers alive, want %d", n, want)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

func tokenEvents(s sdktrace.ReadOnlySpan) int {
	n := 0
	for _, e := range s.Events() {
		if e.Name == semconv.TokenEvent {
			n++
		}
	}
	return n
}

func hasAttr(s sdktrace.ReadOnlySpan, k attribute.Key) bool {
	for _, kv := range s.Attributes() {
		if kv.Key == k {
			return true
		}
	}
	return false
}
