package sdkspan

import (
	"context"
	"encoding/base64"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/tokentrace/tokentrace/analyzer/model"
	"github.com/tokentrace/tokentrace/analyzer/source"
	du "github.com/tokentrace/tokentrace/analyzer/source/internal/decodeutil"
)

// FromReadOnly converts one SDK span. Attribute values become string,
// int64, float64, bool, []string, or []any for other arrays (as every
// source decodes them); an empty value is left out.
func FromReadOnly(s sdktrace.ReadOnlySpan) *model.Span {
	sc := s.SpanContext()
	m := &model.Span{
		TraceID:       sc.TraceID().String(),
		SpanID:        sc.SpanID().String(),
		Name:          s.Name(),
		Kind:          kind(s.SpanKind()),
		Start:         s.StartTime(),
		End:           s.EndTime(),
		Attrs:         make(map[string]any, len(s.Attributes())),
		DroppedEvents: s.DroppedEvents(),
		StatusError:   s.Status().Code == codes.Error,
		StatusMessage: s.Status().Description,
	}
	if p := s.Parent(); p.SpanID().IsValid() {
		m.ParentSpanID = p.SpanID().String()
	}
	if r := s.Resource(); r != nil {
		if v, ok := r.Set().Value("service.name"); ok {
			m.Service = v.AsString()
		}
	}
	putAttrs(m.Attrs, s.Attributes())
	if evs := s.Events(); len(evs) > 0 {
		m.Events = make([]model.SpanEvent, len(evs))
		for i, e := range evs {
			m.Events[i] = model.SpanEvent{Name: e.Name, Time: e.Time, Attrs: make(map[string]any, len(e.Attributes))}
			putAttrs(m.Events[i].Attrs, e.Attributes)
		}
	}
	return m
}

// Spans returns a Source of the given spans, in order.
func Spans(spans []sdktrace.ReadOnlySpan) source.Source {
	return source.Func(func(ctx context.Context, visit source.Visitor) error {
		for _, s := range spans {
			if err := ctx.Err(); err != nil {
				return err
			}
			if err := visit(FromReadOnly(s)); err != nil {
				return err
			}
		}
		return nil
	})
}

func kind(k trace.SpanKind) string {
	switch k {
	case trace.SpanKindInternal:
		return du.KindInternal
	case trace.SpanKindServer:
		return du.KindServer
	case trace.SpanKindClient:
		return du.KindClient
	case trace.SpanKindProducer:
		return du.KindProducer
	case trace.SpanKindConsumer:
		return du.KindConsumer
	}
	return ""
}

func putAttrs(m map[string]any, kvs []attribute.KeyValue) {
	for _, kv := range kvs {
		if v := value(kv.Value); v != nil {
			m[string(kv.Key)] = v
		}
	}
}

func value(v attribute.Value) any {
	switch v.Type() {
	case attribute.BOOL:
		return v.AsBool()
	case attribute.INT64:
		return v.AsInt64()
	case attribute.FLOAT64:
		return v.AsFloat64()
	case attribute.STRING:
		return v.AsString()
	case attribute.STRINGSLICE:
		return du.Array(anySlice(v.AsStringSlice()))
	case attribute.BOOLSLICE:
		return du.Array(anySlice(v.AsBoolSlice()))
	case attribute.INT64SLICE:
		return du.Array(anySlice(v.AsInt64Slice()))
	case attribute.FLOAT64SLICE:
		return du.Array(anySlice(v.AsFloat64Slice()))
	case attribute.BYTESLICE:
		return base64.StdEncoding.EncodeToString(v.AsByteSlice())
	case attribute.SLICE:
		in := v.AsSlice()
		out := make([]any, len(in))
		for i, e := range in {
			out[i] = value(e)
		}
		return du.Array(out)
	case attribute.MAP:
		in := v.AsMap()
		out := make(map[string]any, len(in))
		putAttrs(out, in)
		return out
	}
	return nil
}

func anySlice[T any](in []T) []any {
	out := make([]any, len(in))
	for i, e := range in {
		out[i] = e
	}
	return out
}
