package instrument_test

import (
	"net/http"
	"runtime"
	"sync"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/tokentrace/tokentrace/instrument"
	"github.com/tokentrace/tokentrace/semconv"
)

func eventsNamed(s sdktrace.ReadOnlySpan, name string) []sdktrace.Event {
	var out []sdktrace.Event
	for _, e := range s.Events() {
		if e.Name == name {
			out = append(out, e)
		}
	}
	return out
}

func spanByInstance(t *testing.T, spans []sdktrace.ReadOnlySpan, inst string) sdktrace.ReadOnlySpan {
	t.Helper()
	for _, s := range spans {
		if v, _ := attrOf(s, semconv.Instance); v.AsString() == inst {
			return s
		}
	}
	t.Fatalf("no span on instance %q", inst)
	return nil
}

func TestTrackerEngineEventsReachOverlappingSpansOfTheirInstance(t *testing.T) {
	// The SDK default limit (128 events) with 300 tokens: engine events
	// must survive because they are written last.
	tp, rec := newProvider(t, 0)
	tr := instrument.NewTracker()
	var midway sync.WaitGroup
	midway.Add(2)
	release := make(chan struct{})
	eng := func(w http.ResponseWriter, r *http.Request) {
		e := &engine{Tokens: 300, Usage: true, Gap: func(i int) time.Duration {
			if i == 150 {
				midway.Done()
				<-release
			}
			return 0
		}}
		e.ServeHTTP(w, r)
	}
	h := instrument.Handler(http.HandlerFunc(eng),
		instrument.WithTracerProvider(tp),
		instrument.WithTracker(tr),
		instrument.WithInstance(func(r *http.Request) string { return r.Header.Get("X-Engine") }))

	var done sync.WaitGroup
	for _, inst := range []string{"gpu-a:8000", "gpu-b:8000"} {
		done.Add(1)
		go func() {
			defer done.Done()
			req := newChatRequest("http://gw", chatBody("m", true, true))
			req.Header.Set("X-Engine", inst)
			h.ServeHTTP(sinkResponseWriter{header: http.Header{}}, req)
		}()
	}
	midway.Wait()
	if n := tr.InFlight("gpu-a:8000"); n != 1 {
		t.Errorf("InFlight(gpu-a) = %d, want 1", n)
	}
	if n := tr.InFlight(""); n != 2 {
		t.Errorf("InFlight(all) = %d, want 2", n)
	}
	now := time.Now()
	victim := trace.TraceID{1, 2, 3}
	tr.RecordPrefill("gpu-a:8000", instrument.Prefill{TraceID: victim, PromptTokens: 3100, Start: now.Add(-40 * time.Millisecond), Duration: 40 * time.Millisecond})
	tr.RecordPreemption("gpu-b:8000", instrument.Preemption{Mode: semconv.PreemptionSwap, Start: now.Add(-5 * time.Millisecond), Duration: 5 * time.Millisecond})
	tr.RecordGCPause("", instrument.GCPause{Start: now.Add(-time.Millisecond), Duration: 200 * time.Millisecond})
	// An event on an instance with nothing in flight lands nowhere.
	tr.RecordGCPause("gpu-z:1", instrument.GCPause{Start: now, Duration: time.Millisecond})
	close(release)
	done.Wait()

	spans := endedSpans(t, rec)
	if len(spans) != 2 {
		t.Fatalf("%d spans", len(spans))
	}
	a, b := spanByInstance(t, spans, "gpu-a:8000"), spanByInstance(t, spans, "gpu-b:8000")
	if got := eventsNamed(a, semconv.PrefillEvent); len(got) != 1 {
		t.Errorf("gpu-a prefill events = %d, want 1", len(got))
	} else {
		tok, _ := eventAttr(got[0], semconv.PrefillPromptTokens)
		tid, _ := eventAttr(got[0], semconv.PrefillTraceID)
		dur, _ := eventAttr(got[0], semconv.EngineDurationMillis)
		if tok.AsInt64() != 3100 || tid.AsString() != victim.String() || dur.AsFloat64() != 40 || !got[0].Time.Equal(now.Add(-40*time.Millisecond)) {
			t.Errorf("prefill event = %v at %v", got[0].Attributes, got[0].Time)
		}
	}
	if n := len(eventsNamed(b, semconv.PrefillEvent)); n != 0 {
		t.Errorf("gpu-b got %d prefill events of gpu-a", n)
	}
	if got := eventsNamed(b, semconv.PreemptionEvent); len(got) != 1 {
		t.Errorf("gpu-b preemption events = %d, want 1", len(got))
	} else if m, _ := eventAttr(got[0], semconv.PreemptionMode); m.AsString() != "swap" {
		t.Errorf("mode %q", m.AsString())
	}
	if n := len(eventsNamed(a, semconv.PreemptionEvent)); n != 0 {
		t.Errorf("gpu-a got gpu-b's preemption")
	}
	for _, s := range []sdktrace.ReadOnlySpan{a, b} {
		gc := eventsNamed(s, semconv.GCPauseEvent)
		if len(gc) != 1 {
			t.Errorf("%s: %d gc events, want 1 (instance \"\" = all, gpu-z = none)", s.Name(), len(gc))
		}
		if s.DroppedEvents() == 0 {
			t.Errorf("expected the default 128-event limit to drop token events")
		}
	}
	if tr.InFlight("") != 0 {
		t.Errorf("requests still in flight after they ended")
	}
}

func TestPreemptionMarksTheVictim(t *testing.T) {
	tp, rec := newProvider(t, 10000)
	tr := instrument.NewTracker()
	started := make(chan string, 2)
	release := make(chan struct{})
	eng := func(w http.ResponseWriter, r *http.Request) {
		(&engine{Tokens: 20, Model: r.Header.Get("X-Model"), Gap: func(i int) time.Duration {
			if i == 10 {
				started <- r.Header.Get("X-Model")
				<-release
			}
			return 0
		}}).ServeHTTP(w, r)
	}
	h := instrument.Handler(http.HandlerFunc(eng), instrument.WithTracerProvider(tp), instrument.WithTracker(tr),
		instrument.WithInstance(func(*http.Request) string { return "gpu:1" }))
	var done sync.WaitGroup
	for _, m := range []string{"m1", "m2"} {
		done.Add(1)
		go func() {
			defer done.Done()
			req := newChatRequest("http://gw", chatBody(m, true, false))
			req.Header.Set("X-Model", m)
			h.ServeHTTP(sinkResponseWriter{header: http.Header{}}, req)
		}()
	}
	<-started
	<-started
	// The engine names its request by the response id.
	tr.RecordPreemption("gpu:1", instrument.Preemption{RequestID: "chatcmpl-1", Start: time.Now(), Duration: 30 * time.Millisecond})
	close(release)
	done.Wait()
	for _, s := range endedSpans(t, rec) {
		ev := eventsNamed(s, semconv.PreemptionEvent)
		if len(ev) != 1 {
			t.Fatalf("%s: %d preemption events", s.Name(), len(ev))
		}
		// Both test streams answer with id chatcmpl-1, so both are victims.
		if v, ok := eventAttr(ev[0], semconv.PreemptionVictim); !ok || !v.AsBool() {
			t.Errorf("%s: victim flag missing", s.Name())
		}
	}
}

func TestWatchGoGCRecordsGatewayPauses(t *testing.T) {
	tp, rec := newProvider(t, 10000)
	tr := instrument.NewTracker()
	stop := tr.WatchGoGC(5*time.Millisecond, time.Nanosecond)
	defer stop()
	eng := &engine{Tokens: 30, Gap: func(i int) time.Duration {
		if i%10 == 5 {
			runtime.GC()
			return 20 * time.Millisecond // let the watcher poll
		}
		return 0
	}}
	h := instrument.Handler(eng, instrument.WithTracerProvider(tp), instrument.WithTracker(tr))
	h.ServeHTTP(sinkResponseWriter{header: http.Header{}}, newChatRequest("http://gw", chatBody("m", true, false)))
	stop()
	s := endedSpans(t, rec)[0]
	gc := eventsNamed(s, semconv.GCPauseEvent)
	if len(gc) < 3 {
		t.Fatalf("%d gc events, want ≥ 3 (three forced collections)", len(gc))
	}
	for _, e := range gc {
		src, _ := eventAttr(e, semconv.EngineSource)
		d, _ := eventAttr(e, semconv.EngineDurationMillis)
		if src.AsString() != semconv.SourceGatewayGoGC || d.AsFloat64() <= 0 {
			t.Errorf("gc event %v", e.Attributes)
		}
		if e.Time.Before(s.StartTime().Add(-time.Second)) || e.Time.After(s.EndTime()) {
			t.Errorf("gc pause at %v outside the request [%v, %v]", e.Time, s.StartTime(), s.EndTime())
		}
	}
}

// sinkResponseWriter is a ResponseWriter that keeps nothing.
type sinkResponseWriter struct{ header http.Header }

func (d sinkResponseWriter) Header() http.Header         { return d.header }
func (d sinkResponseWriter) Write(p []byte) (int, error) { return len(p), nil }
func (d sinkResponseWriter) WriteHeader(int)             {}
func (d sinkResponseWriter) Flush()                      {}
