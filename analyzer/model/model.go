// Package model is the analyzer's view of a traced request: its identity
// and labels, its token timeline and the engine events recorded on it.
// Nothing in it depends on where the trace came from; the source packages
// convert OTLP, Jaeger and in-memory spans into it (see FromSpan).
package model

import (
	"time"
)

// Times says where a request's token times came from.
type Times string

const (
	// TimesEvents: every token-bearing chunk had its span event.
	TimesEvents Times = "events"
	// TimesCompact: rebuilt from the compact tokentrace.token_times
	// attribute because events were dropped, capped or never written.
	TimesCompact Times = "compact"
	// TimesNone: the span has no token times (not streamed, or no token).
	TimesNone Times = "none"
)

// Token is one token-bearing chunk of the response.
type Token struct {
	Time time.Time
	// Index is the 0-based index of the chunk's first output token.
	Index int
	// Count is the number of tokens in the chunk (≥ 1).
	Count int
}

// Event kinds.
const (
	KindPrefill    = "prefill"
	KindPreemption = "preemption"
	KindGCPause    = "gc_pause"
)

// Event is something an engine instance (or the gateway) did while the
// request was in flight.
type Event struct {
	Kind     string // KindPrefill, KindPreemption or KindGCPause
	Start    time.Time
	Duration time.Duration
	// Uncertainty is how imprecise Start and Duration are (0 = exact).
	Uncertainty time.Duration
	Source      string // gateway, gateway_go_gc, engine, metrics

	// Prefill: the request whose prompt was processed.
	TraceID, SpanID, RequestID string
	PromptTokens, PromptChars  int

	// Preemption.
	Mode   string // recompute | swap
	Victim bool   // this request was the one preempted
	Count  int
}

// End is Start + Duration.
func (e Event) End() time.Time { return e.Start.Add(e.Duration) }

// Request is one traced LLM request (one span).
type Request struct {
	TraceID, SpanID string // lowercase hex
	Service         string
	Name            string // span name, e.g. "chat llama-3-8b"
	Kind            string // server, client, ...
	Instance        string
	Model           string // requested model (else the response's)
	PromptType      string
	ModelVersion    string
	Ordinal         int64 // since the gateway started (0 unknown)
	InstanceOrdinal int64

	Start, End time.Time
	Stream     bool

	// Tokens are the token-bearing chunks in time order.
	Tokens []Token
	// OutputTokens is the true count (usage) when known, else the sum of
	// chunk counts; Estimated says which.
	OutputTokens int
	Estimated    bool
	PromptTokens int
	PromptChars  int
	TimesFrom    Times
	// DroppedEvents is what the SDK said it dropped (api_v3, OTLP files).
	DroppedEvents int

	Outcome   string // tokentrace.stream.outcome
	Error     bool   // span status error
	ErrorType string

	Events []Event

	// Warnings say what was odd about the span and what was done about
	// it (duplicate token events dropped, times from compact, ...).
	Warnings []string
}

// TTFT is the time from the span start to the first token, or 0.
func (r *Request) TTFT() time.Duration {
	if len(r.Tokens) == 0 {
		return 0
	}
	return r.Tokens[0].Time.Sub(r.Start)
}

// TokenCount is the number of output tokens: OutputTokens when set, else
// the sum of chunk counts.
func (r *Request) TokenCount() int {
	if r.OutputTokens > 0 {
		return r.OutputTokens
	}
	n := 0
	for _, t := range r.Tokens {
		n += t.Count
	}
	return n
}

// TPOT is the mean time per output token excluding the first:
// (last − first token time) / (tokens − 1). ok is false with < 2 tokens.
func (r *Request) TPOT() (time.Duration, bool) {
	n := r.TokenCount()
	if len(r.Tokens) < 2 || n < 2 {
		return 0, false
	}
	return r.Tokens[len(r.Tokens)-1].Time.Sub(r.Tokens[0].Time) / time.Duration(n-1), true
}

// Gaps appends to dst the per-token gap of every chunk after the first, in
// milliseconds: chunk i's gap (t_i − t_{i−1}) divided by its token count,
// so a chunk of k tokens counts as k tokens at the same pace.
func (r *Request) Gaps(dst []float64) []float64 {
	for i := 1; i < len(r.Tokens); i++ {
		g := float64(r.Tokens[i].Time.Sub(r.Tokens[i-1].Time)) / float64(time.Millisecond)
		if c := r.Tokens[i].Count; c > 1 {
			g /= float64(c)
		}
		dst = append(dst, g)
	}
	return dst
}
