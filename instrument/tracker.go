package instrument

import (
	"sync"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/trace"

	"github.com/tokentrace/tokentrace/semconv"
)

// Tracker knows which requests are in flight on which engine instance, so
// that what an engine did (a prefill inserted into the batch, a KV-cache
// preemption, a GC pause) can be written onto the span of every request
// whose generation it overlapped.
//
// One Tracker serves a whole gateway: pass it with [WithTracker] to the
// Handler and the Transport, and call its Record methods from the code that
// learns about engine activity (an in-process engine, a metrics poller).
// Its methods are safe for concurrent use and never block on the network.
type Tracker struct {
	mu        sync.Mutex
	instances map[string]*instanceState
	ordinal   atomic.Int64
}

type instanceState struct {
	admitted int64
	inflight map[*reqState]struct{}
}

// NewTracker returns an empty tracker.
func NewTracker() *Tracker {
	return &Tracker{instances: make(map[string]*instanceState)}
}

// nextOrdinal returns the 1-based ordinal of a new request.
func (t *Tracker) nextOrdinal() int64 { return t.ordinal.Add(1) }

// admit registers st as in flight on instance and returns its ordinal on
// that instance.
func (t *Tracker) admit(st *reqState, instance string) int64 {
	t.mu.Lock()
	defer t.mu.Unlock()
	is := t.instances[instance]
	if is == nil {
		is = &instanceState{inflight: make(map[*reqState]struct{})}
		t.instances[instance] = is
	}
	is.admitted++
	is.inflight[st] = struct{}{}
	return is.admitted
}

// remove unregisters st.
func (t *Tracker) remove(st *reqState, instance string) {
	t.mu.Lock()
	if is := t.instances[instance]; is != nil {
		delete(is.inflight, st)
	}
	t.mu.Unlock()
}

// InFlight returns the number of requests in flight on instance, or on all
// instances when instance is "".
func (t *Tracker) InFlight(instance string) int {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := 0
	for name, is := range t.instances {
		if instance == "" || name == instance {
			n += len(is.inflight)
		}
	}
	return n
}

// deliver adds ev to every request in flight on instance ("" = all) that
// started before the event ended, except skip.
func (t *Tracker) deliver(instance string, ev engineEvent, skip *reqState, victim func(*reqState) bool) {
	var buf [8]*reqState
	targets := t.targets(buf[:0], instance, ev.at.Add(ev.dur), skip)
	for _, st := range targets {
		e := ev
		if victim != nil && victim(st) {
			e.attrs = append(append([]attribute.KeyValue(nil), ev.attrs...), semconv.PreemptionVictim.Bool(true))
		}
		st.addEngineEvent(e)
	}
}

// targets appends to dst the requests in flight on instance ("" = all)
// that started before end, except skip.
func (t *Tracker) targets(dst []*reqState, instance string, end time.Time, skip *reqState) []*reqState {
	t.mu.Lock()
	defer t.mu.Unlock()
	for name, is := range t.instances {
		if instance != "" && name != instance {
			continue
		}
		for st := range is.inflight {
			if st != skip && st.start.Before(end) {
				dst = append(dst, st)
			}
		}
	}
	return dst
}

// Prefill describes another request's prompt processing on an engine
// instance.
type Prefill struct {
	// TraceID and SpanID name the request whose prefill ran, when it is
	// traced; RequestID is the engine's id for it otherwise.
	TraceID   trace.TraceID
	SpanID    trace.SpanID
	RequestID string
	// PromptTokens is the prompt size in tokens (0 if unknown).
	PromptTokens int
	Start        time.Time
	Duration     time.Duration
}

// RecordPrefill writes a prefill event on every request in flight on
// instance that started before the prefill ended, except the request that
// was prefilled.
func (t *Tracker) RecordPrefill(instance string, p Prefill) {
	attrs := []attribute.KeyValue{
		semconv.EngineSource.String(semconv.SourceEngine),
		semconv.EngineDurationMillis.Float64(millis(p.Duration)),
	}
	if p.TraceID.IsValid() {
		attrs = append(attrs, semconv.PrefillTraceID.String(p.TraceID.String()))
	}
	if p.SpanID.IsValid() {
		attrs = append(attrs, semconv.PrefillSpanID.String(p.SpanID.String()))
	}
	if p.RequestID != "" {
		attrs = append(attrs, semconv.PrefillRequestID.String(p.RequestID))
	}
	if p.PromptTokens > 0 {
		attrs = append(attrs, semconv.PrefillPromptTokens.Int(p.PromptTokens))
	}
	ev := engineEvent{name: semconv.PrefillEvent, at: p.Start, dur: p.Duration, attrs: attrs}
	t.deliverSkippingSelf(instance, ev, p.TraceID, p.RequestID)
}

func (t *Tracker) deliverSkippingSelf(instance string, ev engineEvent, tid trace.TraceID, rid string) {
	// The prefilled request's own span is skipped: its prefill is its TTFT.
	var self *reqState
	if tid.IsValid() || rid != "" {
		t.mu.Lock()
		if is := t.instances[instance]; is != nil {
			for st := range is.inflight {
				if st.matches(tid, rid) {
					self = st
					break
				}
			}
		}
		t.mu.Unlock()
	}
	t.deliver(instance, ev, self, nil)
}

// Preemption describes a KV-cache preemption (recompute) or swap on an
// engine instance.
type Preemption struct {
	// TraceID or RequestID name the preempted request when known; its span
	// gets the event with tokentrace.preemption.victim=true.
	TraceID   trace.TraceID
	RequestID string
	Mode      string // semconv.PreemptionRecompute or semconv.PreemptionSwap
	Start     time.Time
	Duration  time.Duration
	// Count is how many preemptions the event stands for (0 means 1).
	Count int
	// Uncertainty is how imprecise Start and Duration are (e.g. a poll
	// interval); 0 when exact.
	Uncertainty time.Duration
	// Source is who reported it (default semconv.SourceEngine).
	Source string
}

// RecordPreemption writes a preemption event on every request in flight on
// instance that started before it ended.
func (t *Tracker) RecordPreemption(instance string, p Preemption) {
	attrs := []attribute.KeyValue{
		semconv.EngineSource.String(orDefault(p.Source, semconv.SourceEngine)),
		semconv.EngineDurationMillis.Float64(millis(p.Duration)),
		semconv.PreemptionMode.String(orDefault(p.Mode, semconv.PreemptionRecompute)),
	}
	if p.RequestID != "" {
		attrs = append(attrs, semconv.PreemptionRequestID.String(p.RequestID))
	}
	if p.Count > 1 {
		attrs = append(attrs, semconv.PreemptionCount.Int(p.Count))
	}
	if p.Uncertainty > 0 {
		attrs = append(attrs, semconv.EngineUncertaintyMillis.Float64(millis(p.Uncertainty)))
	}
	ev := engineEvent{name: semconv.PreemptionEvent, at: p.Start, dur: p.Duration, attrs: attrs}
	var victim func(*reqState) bool
	if p.TraceID.IsValid() || p.RequestID != "" {
		victim = func(st *reqState) bool { return st.matches(p.TraceID, p.RequestID) }
	}
	t.deliver(instance, ev, nil, victim)
}

// GCPause describes a stop-the-world pause: in the engine (e.g. Python's
// generation-2 collection) or in the gateway's own Go runtime.
type GCPause struct {
	Source      string // semconv.SourceEngine (default) or semconv.SourceGatewayGoGC
	Start       time.Time
	Duration    time.Duration
	Uncertainty time.Duration
}

// RecordGCPause writes a GC pause event on every request in flight on
// instance, or on every instance when instance is "" (a gateway pause
// delays all of its streams).
func (t *Tracker) RecordGCPause(instance string, g GCPause) {
	attrs := []attribute.KeyValue{
		semconv.EngineSource.String(orDefault(g.Source, semconv.SourceEngine)),
		semconv.EngineDurationMillis.Float64(millis(g.Duration)),
	}
	if g.Uncertainty > 0 {
		attrs = append(attrs, semconv.EngineUncertaintyMillis.Float64(millis(g.Uncertainty)))
	}
	t.deliver(instance, engineEvent{name: semconv.GCPauseEvent, at: g.Start, dur: g.Duration, attrs: attrs}, nil, nil)
}

// prefillDone is called once when st's first token arrives, first after
// st's start: st's prefill ran from its admission until then, on its
// instance, inside the batch of every other request in flight there.
func (t *Tracker) prefillDone(st *reqState, first time.Duration) {
	var buf [8]*reqState
	targets := t.targets(buf[:0], st.instance, st.start.Add(first), st)
	if len(targets) == 0 {
		return // alone on its instance: no event to build
	}
	sc := st.spanCtx
	attrs := []attribute.KeyValue{
		semconv.EngineSource.String(semconv.SourceGateway),
		semconv.EngineDurationMillis.Float64(millis(first)),
		semconv.PrefillTraceID.String(sc.TraceID().String()),
		semconv.PrefillSpanID.String(sc.SpanID().String()),
	}
	if st.info.PromptChars > 0 {
		attrs = append(attrs, semconv.PrefillPromptChars.Int(st.info.PromptChars))
	}
	ev := engineEvent{name: semconv.PrefillEvent, at: st.start, dur: first, attrs: attrs}
	for _, target := range targets {
		target.addEngineEvent(ev)
	}
}

// engineEvent is an engine event waiting to be written onto a span.
type engineEvent struct {
	name  string
	at    time.Time
	dur   time.Duration
	attrs []attribute.KeyValue
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
