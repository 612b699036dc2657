package jaegerquery

import (
	"encoding/base64"
	"strings"

	jmodel "github.com/jaegertracing/jaeger-idl/model/v1"

	"github.com/tokentrace/tokentrace/analyzer/model"
	du "github.com/tokentrace/tokentrace/analyzer/source/internal/decodeutil"
)

// FromV2Span converts a span of Jaeger's api_v2 model (what the api_v2
// gRPC QueryService streams) into a model.Span. Jaeger's mapping of
// OpenTelemetry is undone as package jaegerjson does for the UI's JSON:
// the span.kind tag gives the kind; error=true or otel.status_code=ERROR
// the error status, otel.status_description its message; logs become
// events, named by their "event" field, with nanosecond times; tags keep
// their types (string, bool, int64, float64; binary as base64 text);
// arrays arrive as the JSON text Jaeger made of them and stay strings; the
// process gives the service. api_v2 has no dropped-event count: it is 0
// unless an otel.dropped_events_count tag says otherwise.
func FromV2Span(s *jmodel.Span) *model.Span {
	var out model.Span
	fillV2(&out, s)
	return &out
}

// fillV2 converts s into out, reusing out's maps (see du.Reset).
func fillV2(out *model.Span, s *jmodel.Span) {
	du.Reset(out)
	out.TraceID, _ = du.HexID(s.TraceID.String(), 16)
	out.SpanID, _ = du.BytesID(spanIDBytes(s.SpanID), 8)
	if p := s.ParentSpanID(); p != 0 {
		out.ParentSpanID, _ = du.BytesID(spanIDBytes(p), 8)
	}
	out.Name = s.OperationName
	if s.Process != nil {
		out.Service = s.Process.ServiceName
	}
	if !s.StartTime.IsZero() && s.StartTime.Unix() > 0 {
		out.Start = s.StartTime
		out.End = s.StartTime.Add(s.Duration)
	}
	for i := range s.Tags {
		t := &s.Tags[i]
		switch t.Key {
		case "span.kind":
			out.Kind = du.KindFromString(t.VStr)
		case "otel.status_code":
			if strings.Contains(strings.ToUpper(t.AsString()), "ERROR") {
				out.StatusError = true
			}
		case "error":
			if t.VType == jmodel.ValueType_BOOL && t.VBool || t.VType == jmodel.ValueType_STRING && t.VStr == "true" {
				out.StatusError = true
			}
		case "otel.status_description":
			out.StatusMessage = t.AsString()
		case "otel.dropped_events_count":
			if t.VType == jmodel.ValueType_INT64 && t.VInt64 > 0 && t.VInt64 < 1<<31 {
				out.DroppedEvents = int(t.VInt64)
			}
		case "otel.scope.name", "otel.scope.version", "otel.library.name", "otel.library.version",
			"w3c.tracestate", "internal.span.format":
			// Jaeger's own bookkeeping, not span attributes.
		default:
			out.Attrs[t.Key] = v2Value(t)
		}
	}
	for i := range s.Logs {
		l := &s.Logs[i]
		e := du.AddEvent(out)
		if !l.Timestamp.IsZero() && l.Timestamp.Unix() > 0 {
			e.Time = l.Timestamp
		}
		for j := range l.Fields {
			f := &l.Fields[j]
			if f.Key == "event" && e.Name == "" && f.VType == jmodel.ValueType_STRING {
				e.Name = f.VStr
				continue
			}
			e.Attrs[f.Key] = v2Value(f)
		}
	}
}

func spanIDBytes(id jmodel.SpanID) []byte {
	u := uint64(id)
	return []byte{byte(u >> 56), byte(u >> 48), byte(u >> 40), byte(u >> 32), byte(u >> 24), byte(u >> 16), byte(u >> 8), byte(u)}
}

// v2Value returns a tag's value with its type.
func v2Value(kv *jmodel.KeyValue) any {
	switch kv.VType {
	case jmodel.ValueType_BOOL:
		return kv.VBool
	case jmodel.ValueType_INT64:
		return kv.VInt64
	case jmodel.ValueType_FLOAT64:
		return kv.VFloat64
	case jmodel.ValueType_BINARY:
		return base64.StdEncoding.EncodeToString(kv.VBinary)
	}
	return kv.VStr
}
