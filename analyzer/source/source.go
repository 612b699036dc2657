package source

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"maps"
	"strconv"
	"strings"

	"github.com/tokentrace/tokentrace/analyzer/model"
	du "github.com/tokentrace/tokentrace/analyzer/source/internal/decodeutil"
	"github.com/tokentrace/tokentrace/semconv"
)

// Visitor is called once per span decoded; the span is only valid during
// the call (sources reuse it for the next span: use Clone to keep one).
// Returning an error stops the Source, which returns that error.
type Visitor func(s *model.Span) error

// A Source yields spans. Problems with single records are reported to the
// Skips and skipped; only I/O errors (or a visitor error) stop it. The
// visitor is called from one goroutine at a time.
type Source interface {
	Spans(ctx context.Context, visit Visitor) error
}

// Func adapts a function to a Source.
type Func func(ctx context.Context, visit Visitor) error

// Spans calls f.
func (f Func) Spans(ctx context.Context, visit Visitor) error { return f(ctx, visit) }

// Skip reasons counted by this package; the decoders' own reasons are in
// packages otlpjson, otlpproto and jaegerjson.
const (
	ReasonNotTokentrace = "not a tokentrace span"
	ReasonUnusable      = "unusable tokentrace span"
	ReasonSchema        = "unsupported tokentrace schema version"
	ReasonDuplicate     = "duplicate span (trace and span id seen before)"
	ReasonEmpty         = "empty file"
	ReasonCorruptGzip   = "corrupt gzip data (rest of file skipped)"
)

// Skip reasons of the checks every decoder makes on every span.
const (
	ReasonNoTraceID = du.ReasonNoTraceID // "span without a valid trace id"
	ReasonNoSpanID  = du.ReasonNoSpanID  // "span without a valid span id"
	ReasonNoStart   = du.ReasonNoStart   // "span without a start time"
	ReasonNoEnd     = du.ReasonNoEnd     // "span without an end time"
	ReasonNegative  = du.ReasonNegative  // "negative span duration (ends before it starts)"
)

// Requests adapts a Source into model.Requests via model.FromSpan and
// calls fn for each. Spans of other instrumentation are counted as
// skipped ("not a tokentrace span"), as are spans of a newer schema major
// version and spans FromSpan rejects (with the trace id). Requests that
// have no token times (not streamed, failed before the first token) are
// passed on: they count in error rates and TTFT. The Request is fn's to
// keep. fn's error stops the Source and is returned.
func Requests(ctx context.Context, src Source, skips *Skips, fn func(*model.Request) error) error {
	return src.Spans(ctx, func(s *model.Span) error {
		if v := model.AttrString(s.Attrs, string(semconv.SchemaVersionKey)); v != "" && !SupportedSchema(v) {
			skips.Add(ReasonSchema, du.Example("", s.TraceID, v))
			return nil
		}
		r, err := model.FromSpan(s)
		switch {
		case errors.Is(err, model.ErrNotTokentrace):
			skips.Add(ReasonNotTokentrace, du.Example("", s.TraceID, s.Name))
			return nil
		case err != nil:
			skips.Add(ReasonUnusable, du.Example("", s.TraceID, err.Error()))
			return nil
		}
		return fn(r)
	})
}

// SupportedSchema reports whether a tokentrace.schema value is one this
// analyzer reads: "tokentrace/N" (or "tokentrace/N.M") with a major
// version N no newer than semconv.SchemaVersion's.
func SupportedSchema(v string) bool {
	major := func(s string) (int, bool) {
		rest, ok := strings.CutPrefix(s, "tokentrace/")
		if !ok {
			return 0, false
		}
		rest, _, _ = strings.Cut(rest, ".")
		n, err := strconv.Atoi(rest)
		return n, err == nil && n >= 1
	}
	have, ok := major(v)
	known, _ := major(semconv.SchemaVersion)
	return ok && have <= known
}

// Dedup returns a Source that passes on the spans of src but the repeats:
// a span whose trace and span id were already seen during the same call
// of Spans is counted in skips and dropped, the first one kept. It
// remembers a few dozen bytes per span. Files deduplicates by itself.
func Dedup(src Source, skips *Skips) Source {
	return Func(func(ctx context.Context, visit Visitor) error {
		seen := NewSeenSpans()
		return src.Spans(ctx, func(s *model.Span) error {
			if seen.Repeat(s) {
				skips.Add(ReasonDuplicate, du.Example("", s.TraceID, "span "+s.SpanID))
				return nil
			}
			return visit(s)
		})
	})
}

// SeenSpans remembers the (trace id, span id) pairs of spans, 24 bytes a
// span for the usual hex ids, to drop repeats: a span in two files, in
// two overlapping query windows or in a retried call. Not safe for
// concurrent use.
type SeenSpans struct {
	ids   map[[24]byte]struct{}
	other map[string]struct{} // ids that are not 16+8 bytes of hex
}

// NewSeenSpans returns an empty set.
func NewSeenSpans() *SeenSpans { return &SeenSpans{ids: make(map[[24]byte]struct{})} }

// Repeat records s and reports whether it was seen before.
func (t *SeenSpans) Repeat(s *model.Span) bool {
	var k [24]byte
	if len(s.TraceID) == 32 && len(s.SpanID) == 16 {
		_, err1 := hex.Decode(k[:16], []byte(s.TraceID))
		_, err2 := hex.Decode(k[16:], []byte(s.SpanID))
		if err1 == nil && err2 == nil {
			if _, ok := t.ids[k]; ok {
				return true
			}
			t.ids[k] = struct{}{}
			return false
		}
	}
	if t.other == nil {
		t.other = make(map[string]struct{})
	}
	key := s.TraceID + "/" + s.SpanID
	if _, ok := t.other[key]; ok {
		return true
	}
	t.other[key] = struct{}{}
	return false
}

// Clone returns a deep copy of s, for a visitor that keeps spans beyond
// its call.
func Clone(s *model.Span) *model.Span {
	c := *s
	c.Attrs = maps.Clone(s.Attrs)
	if s.Events != nil {
		c.Events = make([]model.SpanEvent, len(s.Events))
		for i, e := range s.Events {
			e.Attrs = maps.Clone(e.Attrs)
			c.Events[i] = e
		}
	}
	return &c
}

// FormatError reports a file whose format is not one Files reads.
type FormatError struct {
	Name   string // the file
	Start  []byte // its first bytes
	Detail string // what was recognised, if anything
}

func (e *FormatError) Error() string {
	start := e.Start
	if len(start) > 32 {
		start = start[:32]
	}
	detail := ""
	if e.Detail != "" {
		detail = e.Detail + "; "
	}
	return fmt.Sprintf("source: %s: unknown trace format (starts with %q): %sexpected OTLP JSON "+
		"(Collector file exporter lines, a TracesData document, or a Jaeger api_v3 answer), "+
		"OTLP protobuf (Collector file exporter proto format, or one TracesData message) "+
		"or Jaeger UI JSON (Download JSON, /api/traces), optionally gzip-compressed",
		e.Name, start, detail)
}
