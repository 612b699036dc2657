package jaegerquery

import (
	"context"
	"time"

	"github.com/tokentrace/tokentrace/analyzer/model"
)

// search is one FindTraces call: a Query with its defaults applied, over
// one time window.
type search struct {
	service, operation string
	attrs              map[string]string // full attribute names
	start, end         time.Time
	minDur, maxDur     time.Duration
	depth              int
}

// sink receives what a backend decodes. emit's span is only valid during
// the call.
type sink struct {
	emit func(*model.Span) error
	skip func(reason, example string)
}

// backend is one query API.
type backend interface {
	protocol() Protocol
	// probe makes a cheap call that succeeds only when the API is served.
	probe(ctx context.Context) error
	// find emits every span of the traces found and returns how many
	// distinct traces Jaeger answered with (before any client-side
	// filtering), which paging compares with the search depth.
	find(ctx context.Context, s search, k sink) (traces int, err error)
	// get emits the spans of one trace (id: 32 lowercase hex digits);
	// found is false when Jaeger does not have it. start and end, when
	// not zero, are hints of the trace's time range.
	get(ctx context.Context, id string, start, end time.Time, k sink) (found bool, err error)
	services(ctx context.Context) ([]string, error)
}

// Skip reasons counted by this package (the decoders add their own: see
// packages otlpproto, otlpjson and jaegerjson).
const (
	ReasonMalformedReply = "malformed Jaeger query reply (rest of the reply skipped)"
	ReasonMalformedMsg   = "malformed Jaeger query reply message"
	ReasonWindowFull     = "search window still full at the paging bound (some traces may be missing)"
)

// traceCounter counts the distinct trace ids of a reply.
type traceCounter struct {
	last string
	ids  map[string]struct{}
}

func (c *traceCounter) add(id string) {
	if id == c.last {
		return
	}
	c.last = id
	if c.ids == nil {
		c.ids = make(map[string]struct{})
	}
	c.ids[id] = struct{}{}
}

func (c *traceCounter) n() int { return len(c.ids) }

// counting wraps emit so that every span's trace is counted.
func (c *traceCounter) counting(emit func(*model.Span) error) func(*model.Span) error {
	return func(s *model.Span) error {
		c.add(s.TraceID)
		return emit(s)
	}
}
