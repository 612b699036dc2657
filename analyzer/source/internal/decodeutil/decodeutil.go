package decodeutil

import (
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/tokentrace/tokentrace/analyzer/model"
)

// MaxValueBytes bounds what one decoded unit may take: a line of OTLP JSON
// lines, a span of a pretty-printed OTLP document, a trace of Jaeger JSON,
// a protobuf message. It is a variable so tests can lower it.
var MaxValueBytes int64 = 256 << 20

// PeekBytes is how much of a file is looked at to recognise its format.
const PeekBytes = 64 << 10

// MaxExample bounds the length of a skip example.
const MaxExample = 240

// SizeString formats a byte count for a skip reason ("256 MiB").
func SizeString(n int64) string {
	switch {
	case n >= 1<<20 && n%(1<<20) == 0:
		return fmt.Sprintf("%d MiB", n>>20)
	case n >= 1<<10 && n%(1<<10) == 0:
		return fmt.Sprintf("%d KiB", n>>10)
	}
	return fmt.Sprintf("%d bytes", n)
}

// Where formats a location: "name:line", or name alone when line ≤ 0.
func Where(name string, line int) string {
	if line > 0 {
		return fmt.Sprintf("%s:%d", name, line)
	}
	return name
}

// Example joins a location, an optional trace id and a detail into one
// skip example, bounded to MaxExample bytes.
func Example(where, traceID, detail string) string {
	var b strings.Builder
	b.WriteString(where)
	if traceID != "" {
		if b.Len() > 0 {
			b.WriteString(": ")
		}
		b.WriteString("trace ")
		b.WriteString(traceID)
	}
	if detail != "" {
		if b.Len() > 0 {
			b.WriteString(": ")
		}
		b.WriteString(detail)
	}
	return Truncate(b.String(), MaxExample)
}

// Truncate shortens s to at most n bytes on a rune boundary, marking the cut.
func Truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - 3
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// HexID normalises an identifier written as hex to lowercase hex of
// exactly size bytes (2*size digits), left-padding shorter ids with zeros
// (Jaeger writes 64-bit trace ids as 16 digits). Ids written as base64 of
// exactly size bytes (protojson's encoding of bytes) are accepted too.
// ok is false for anything else and for the all-zero id, which OTLP
// reserves for "invalid".
func HexID(s string, size int) (id string, ok bool) {
	if s == "" {
		return "", false
	}
	if len(s) <= 2*size && isHex(s) {
		if allZero(s) {
			return "", false
		}
		id = strings.ToLower(s)
		if len(id) < 2*size {
			id = strings.Repeat("0", 2*size-len(id)) + id
		}
		return id, true
	}
	if b, err := base64.StdEncoding.DecodeString(s); err == nil && len(b) == size {
		return BytesID(b, size)
	}
	if b, err := base64.RawURLEncoding.DecodeString(strings.TrimRight(s, "=")); err == nil && len(b) == size {
		return BytesID(b, size)
	}
	return "", false
}

// BytesID returns the lowercase hex of b when it has exactly size bytes
// and is not all zero.
func BytesID(b []byte, size int) (string, bool) {
	if len(b) != size {
		return "", false
	}
	zero := true
	for _, c := range b {
		if c != 0 {
			zero = false
			break
		}
	}
	if zero {
		return "", false
	}
	return hex.EncodeToString(b), true
}

func isHex(s string) bool {
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

func allZero(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '0' {
			return false
		}
	}
	return true
}

// Span kinds as model.Span.Kind holds them.
const (
	KindInternal = "internal"
	KindServer   = "server"
	KindClient   = "client"
	KindProducer = "producer"
	KindConsumer = "consumer"
)

// KindFromOTLP maps the OTLP SpanKind enum to a word ("" for unspecified
// or unknown values).
func KindFromOTLP(k int64) string {
	switch k {
	case 1:
		return KindInternal
	case 2:
		return KindServer
	case 3:
		return KindClient
	case 4:
		return KindProducer
	case 5:
		return KindConsumer
	}
	return ""
}

// KindFromString maps a kind written as a word — "server", "SERVER",
// "SPAN_KIND_SERVER" (protojson) — to the lowercase word; "" when unknown.
func KindFromString(s string) string {
	s = strings.ToLower(strings.TrimSpace(s))
	s = strings.TrimPrefix(s, "span_kind_")
	switch s {
	case KindInternal, KindServer, KindClient, KindProducer, KindConsumer:
		return s
	}
	return ""
}

// UnixNano converts nanoseconds since the epoch to a time; 0 (unset) is
// the zero time.
func UnixNano(ns uint64) time.Time {
	if ns == 0 || ns > 1<<63-1 {
		return time.Time{}
	}
	return time.Unix(0, int64(ns))
}

// Skip reasons shared by every decoder: what Check finds.
const (
	ReasonNoTraceID = "span without a valid trace id"
	ReasonNoSpanID  = "span without a valid span id"
	ReasonNoStart   = "span without a start time"
	ReasonNoEnd     = "span without an end time"
	ReasonNegative  = "negative span duration (ends before it starts)"
)

// Check returns why a decoded span cannot be used, or "" when it can.
func Check(s *model.Span) string {
	switch {
	case s.TraceID == "":
		return ReasonNoTraceID
	case s.SpanID == "":
		return ReasonNoSpanID
	case s.Start.IsZero():
		return ReasonNoStart
	case s.End.IsZero():
		return ReasonNoEnd
	case s.End.Before(s.Start):
		return ReasonNegative
	}
	return ""
}

// Reset clears s for reuse by the next span of a decoder, keeping the
// attribute map and the event slice (with their event attribute maps) so
// that decoding many spans does not allocate them again.
func Reset(s *model.Span) {
	attrs := s.Attrs
	if attrs == nil {
		attrs = make(map[string]any, 32)
	} else {
		clear(attrs)
	}
	*s = model.Span{Attrs: attrs, Events: s.Events[:0]}
}

// AddEvent appends an empty event to s, reusing an attribute map left in
// the slice's capacity by an earlier span, and returns it.
func AddEvent(s *model.Span) *model.SpanEvent {
	n := len(s.Events)
	if n < cap(s.Events) {
		s.Events = s.Events[:n+1]
		e := &s.Events[n]
		m := e.Attrs
		if m == nil {
			m = make(map[string]any, 2)
		} else {
			clear(m)
		}
		*e = model.SpanEvent{Attrs: m}
		return e
	}
	s.Events = append(s.Events, model.SpanEvent{Attrs: make(map[string]any, 2)})
	return &s.Events[n]
}

// Array returns the model value of an array attribute: []string when every
// element is a string (or the array is empty), else []any.
func Array(vals []any) any {
	strs := make([]string, 0, len(vals))
	for _, v := range vals {
		s, ok := v.(string)
		if !ok {
			return vals
		}
		strs = append(strs, s)
	}
	return strs
}
