package model

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"

	"github.com/tokentrace/tokentrace/instrument/tokentimes"
	"github.com/tokentrace/tokentrace/semconv"
)

// Span is a backend-neutral span: what every trace source decodes to
// before FromSpan turns it into a Request. Attribute values are string,
// int64, float64, bool or []string (other array types as []any).
type Span struct {
	TraceID, SpanID, ParentSpanID string // lowercase hex
	Service                       string
	Name                          string
	Kind                          string
	Start, End                    time.Time
	Attrs                         map[string]any
	Events                        []SpanEvent
	DroppedEvents                 int
	StatusError                   bool
	StatusMessage                 string
}

// SpanEvent is a span event (a log in Jaeger's words).
type SpanEvent struct {
	Name  string
	Time  time.Time
	Attrs map[string]any
}

// ErrNotTokentrace means the span was not written by tokentrace's
// instrument package (no tokentrace.schema attribute): not an error, just
// not ours (e.g. an engine's own llm_request span).
var ErrNotTokentrace = errors.New("not a tokentrace span")

// AttrString returns a string attribute ("" when absent or not a string).
func AttrString(m map[string]any, k string) string {
	switch v := m[k].(type) {
	case string:
		return v
	case nil:
		return ""
	default:
		return fmt.Sprint(v)
	}
}

// AttrInt returns an integer attribute; strings holding integers and
// whole floats count (Jaeger's legacy JSON and OTLP JSON write int64 as
// strings).
func AttrInt(m map[string]any, k string) (int64, bool) {
	switch v := m[k].(type) {
	case int64:
		return v, true
	case int:
		return int64(v), true
	case float64:
		if v == float64(int64(v)) {
			return int64(v), true
		}
	case string:
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			return n, true
		}
	}
	return 0, false
}

// AttrFloat returns a float attribute.
func AttrFloat(m map[string]any, k string) (float64, bool) {
	switch v := m[k].(type) {
	case float64:
		return v, true
	case int64:
		return float64(v), true
	case int:
		return float64(v), true
	case string:
		if f, err := strconv.ParseFloat(v, 64); err == nil {
			return f, true
		}
	}
	return 0, false
}

// AttrBool returns a boolean attribute.
func AttrBool(m map[string]any, k string) bool {
	switch v := m[k].(type) {
	case bool:
		return v
	case string:
		b, _ := strconv.ParseBool(v)
		return b
	}
	return false
}

// maxTokens bounds the token timeline rebuilt from one span.
const maxTokens = tokentimes.MaxEntries

// FromSpan builds the Request of a tokentrace span. It prefers the token
// events when all of them are there, else the compact token times, and
// says which in TimesFrom. Duplicate token events are dropped and
// out-of-order ones sorted, with a warning each. It returns
// ErrNotTokentrace for spans of other instrumentation.
func FromSpan(s *Span) (*Request, error) {
	a := s.Attrs
	if AttrString(a, string(semconv.SchemaVersionKey)) == "" {
		return nil, ErrNotTokentrace
	}
	if s.End.Before(s.Start) {
		return nil, fmt.Errorf("span %s/%s ends before it starts", s.TraceID, s.SpanID)
	}
	r := &Request{
		TraceID: s.TraceID, SpanID: s.SpanID, Service: s.Service, Name: s.Name, Kind: s.Kind,
		Instance:     AttrString(a, string(semconv.Instance)),
		Model:        AttrString(a, string(semconv.GenAIRequestModel)),
		PromptType:   AttrString(a, string(semconv.PromptType)),
		ModelVersion: AttrString(a, string(semconv.ModelVersion)),
		Start:        s.Start, End: s.End,
		Stream:        AttrBool(a, string(semconv.GenAIRequestStream)),
		Outcome:       AttrString(a, string(semconv.StreamOutcome)),
		Error:         s.StatusError,
		ErrorType:     AttrString(a, string(semconv.ErrorType)),
		DroppedEvents: s.DroppedEvents,
	}
	if r.Model == "" {
		r.Model = AttrString(a, string(semconv.GenAIResponseModel))
	}
	r.Ordinal, _ = AttrInt(a, string(semconv.Ordinal))
	r.InstanceOrdinal, _ = AttrInt(a, string(semconv.InstanceOrdinal))
	if n, ok := AttrInt(a, string(semconv.Tokens)); ok {
		r.OutputTokens = int(n)
	} else if n, ok := AttrInt(a, string(semconv.GenAIUsageOutputTokens)); ok {
		r.OutputTokens = int(n)
	}
	r.Estimated = AttrBool(a, string(semconv.TokensEstimated))
	if n, ok := AttrInt(a, string(semconv.GenAIUsageInputTokens)); ok {
		r.PromptTokens = int(n)
	}
	if n, ok := AttrInt(a, string(semconv.PromptChars)); ok {
		r.PromptChars = int(n)
	}

	chunks, _ := AttrInt(a, string(semconv.Chunks))
	fromEvents, evWarn := tokensFromEvents(s)
	compact, compactErr := tokensFromCompact(s)
	switch {
	case len(fromEvents) > 0 && (chunks == 0 || int64(len(fromEvents)) >= chunks) && (compact == nil || len(fromEvents) >= len(compact)):
		r.Tokens, r.TimesFrom = fromEvents, TimesEvents
		r.Warnings = append(r.Warnings, evWarn...)
	case compact != nil:
		r.Tokens, r.TimesFrom = compact, TimesCompact
		if len(fromEvents) > 0 {
			r.Warnings = append(r.Warnings, fmt.Sprintf("token times rebuilt from the compact encoding: %d of %d token events kept", len(fromEvents), len(compact)))
		}
	case len(fromEvents) > 0:
		r.Tokens, r.TimesFrom = fromEvents, TimesEvents
		r.Warnings = append(r.Warnings, evWarn...)
		if chunks > int64(len(fromEvents)) {
			r.Warnings = append(r.Warnings, fmt.Sprintf("only %d of %d token times recoverable (events capped, no compact encoding)", len(fromEvents), chunks))
		}
	default:
		r.TimesFrom = TimesNone
	}
	if compactErr != nil {
		r.Warnings = append(r.Warnings, compactErr.Error())
	}
	r.Events = engineEvents(s)
	return r, nil
}

func tokensFromEvents(s *Span) ([]Token, []string) {
	var toks []Token
	for i := range s.Events {
		e := &s.Events[i]
		if e.Name != semconv.TokenEvent {
			continue
		}
		idx, ok := AttrInt(e.Attrs, string(semconv.TokenIndex))
		if !ok {
			continue
		}
		c, ok := AttrInt(e.Attrs, string(semconv.TokenCount))
		if !ok || c < 1 {
			c = 1
		}
		toks = append(toks, Token{Time: e.Time, Index: int(idx), Count: int(c)})
		if len(toks) >= maxTokens {
			break
		}
	}
	var warn []string
	if !slices.IsSortedFunc(toks, func(a, b Token) int { return a.Index - b.Index }) {
		slices.SortStableFunc(toks, func(a, b Token) int { return a.Index - b.Index })
		warn = append(warn, "token events out of order: sorted by index")
	}
	n := len(toks)
	toks = slices.CompactFunc(toks, func(a, b Token) bool { return a.Index == b.Index })
	if d := n - len(toks); d > 0 {
		warn = append(warn, fmt.Sprintf("%d duplicate token events dropped", d))
	}
	return toks, warn
}

func tokensFromCompact(s *Span) ([]Token, error) {
	enc := AttrString(s.Attrs, string(semconv.TokenTimes))
	if enc == "" {
		return nil, nil
	}
	offs, err := tokentimes.Decode(enc)
	if err != nil {
		return nil, fmt.Errorf("compact token times unreadable: %w", err)
	}
	var counts []uint32
	if c := AttrString(s.Attrs, string(semconv.TokenCounts)); c != "" {
		if counts, err = tokentimes.DecodeCounts(c); err != nil || len(counts) != len(offs) {
			counts = nil
		}
	}
	toks := make([]Token, len(offs))
	idx := 0
	for i, off := range offs {
		c := 1
		if counts != nil && counts[i] > 0 {
			c = int(counts[i])
		}
		toks[i] = Token{Time: s.Start.Add(off), Index: idx, Count: c}
		idx += c
	}
	return toks, nil
}

func engineEvents(s *Span) []Event {
	var out []Event
	for i := range s.Events {
		e := &s.Events[i]
		var kind string
		switch e.Name {
		case semconv.PrefillEvent:
			kind = KindPrefill
		case semconv.PreemptionEvent:
			kind = KindPreemption
		case semconv.GCPauseEvent:
			kind = KindGCPause
		default:
			continue
		}
		a := e.Attrs
		ev := Event{Kind: kind, Start: e.Time, Source: AttrString(a, string(semconv.EngineSource)),
			TraceID:   AttrString(a, string(semconv.PrefillTraceID)),
			SpanID:    AttrString(a, string(semconv.PrefillSpanID)),
			RequestID: AttrString(a, string(semconv.PrefillRequestID)),
			Mode:      AttrString(a, string(semconv.PreemptionMode)),
			Victim:    AttrBool(a, string(semconv.PreemptionVictim)),
		}
		if ev.RequestID == "" {
			ev.RequestID = AttrString(a, string(semconv.PreemptionRequestID))
		}
		if d, ok := AttrFloat(a, string(semconv.EngineDurationMillis)); ok && d > 0 {
			ev.Duration = time.Duration(d * float64(time.Millisecond))
		}
		if d, ok := AttrFloat(a, string(semconv.EngineUncertaintyMillis)); ok && d > 0 {
			ev.Uncertainty = time.Duration(d * float64(time.Millisecond))
		}
		if n, ok := AttrInt(a, string(semconv.PrefillPromptTokens)); ok {
			ev.PromptTokens = int(n)
		}
		if n, ok := AttrInt(a, string(semconv.PrefillPromptChars)); ok {
			ev.PromptChars = int(n)
		}
		if n, ok := AttrInt(a, string(semconv.PreemptionCount)); ok {
			ev.Count = int(n)
		}
		out = append(out, ev)
	}
	slices.SortStableFunc(out, func(a, b Event) int { return a.Start.Compare(b.Start) })
	return out
}
