package otlpjson

import (
	"strings"

	"github.com/tokentrace/tokentrace/analyzer/model"
	du "github.com/tokentrace/tokentrace/analyzer/source/internal/decodeutil"
)

// The OTLP JSON shapes this package reads. Fields it does not need
// (links, flags, traceState, dropped attribute counts) are ignored.

type jsonResource struct {
	Attributes []jsonKV `json:"attributes"`
}

func (r *jsonResource) service() string {
	for i := range r.Attributes {
		if r.Attributes[i].Key == "service.name" {
			if v, ok := r.Attributes[i].Value.value().(string); ok {
				return v
			}
		}
	}
	return ""
}

type jsonSpan struct {
	TraceID       string      `json:"traceId"`
	SpanID        string      `json:"spanId"`
	ParentSpanID  string      `json:"parentSpanId"`
	Name          string      `json:"name"`
	Kind          du.Enum     `json:"kind"`
	Start         du.Uint64   `json:"startTimeUnixNano"`
	End           du.Uint64   `json:"endTimeUnixNano"`
	Attributes    []jsonKV    `json:"attributes"`
	Events        []jsonEvent `json:"events"`
	DroppedEvents du.Int64    `json:"droppedEventsCount"`
	Status        struct {
		Code    du.Enum `json:"code"`
		Message string  `json:"message"`
	} `json:"status"`
}

type jsonEvent struct {
	Time       du.Uint64 `json:"timeUnixNano"`
	Name       du.Name   `json:"name"`
	Attributes []jsonKV  `json:"attributes"`
}

type jsonKV struct {
	Key   du.Name `json:"key"`
	Value jsonAny `json:"value"`
}

type jsonAny struct {
	StringValue du.Str   `json:"stringValue"`
	BoolValue   du.Bool  `json:"boolValue"`
	IntValue    du.Int64 `json:"intValue"`
	DoubleValue du.Float `json:"doubleValue"`
	BytesValue  du.Str   `json:"bytesValue"`
	ArrayValue  *struct {
		Values []jsonAny `json:"values"`
	} `json:"arrayValue"`
	KvlistValue *struct {
		Values []jsonKV `json:"values"`
	} `json:"kvlistValue"`
}

// value returns the model value of an AnyValue (nil when empty).
func (a *jsonAny) value() any {
	switch {
	case a.StringValue.Set:
		return a.StringValue.V
	case a.IntValue.Set:
		return a.IntValue.V
	case a.DoubleValue.Set:
		return a.DoubleValue.V
	case a.BoolValue.Set:
		return a.BoolValue.V
	case a.ArrayValue != nil:
		vals := make([]any, len(a.ArrayValue.Values))
		for i := range a.ArrayValue.Values {
			vals[i] = a.ArrayValue.Values[i].value()
		}
		return du.Array(vals)
	case a.KvlistValue != nil:
		m := make(map[string]any, len(a.KvlistValue.Values))
		putAttrs(m, a.KvlistValue.Values)
		return m
	case a.BytesValue.Set:
		return a.BytesValue.V // base64, as OTLP JSON writes bytes
	}
	return nil
}

func putAttrs(m map[string]any, kvs []jsonKV) {
	for i := range kvs {
		if v := kvs[i].Value.value(); v != nil {
			m[string(kvs[i].Key)] = v
		}
	}
}

// fill sets s (already reset) from the decoded span.
func (js *jsonSpan) fill(s *model.Span, service string) {
	s.TraceID, _ = du.HexID(js.TraceID, 16)
	s.SpanID, _ = du.HexID(js.SpanID, 8)
	s.ParentSpanID, _ = du.HexID(js.ParentSpanID, 8)
	s.Service = service
	s.Name = js.Name
	if js.Kind.S != "" {
		s.Kind = du.KindFromString(js.Kind.S)
	} else {
		s.Kind = du.KindFromOTLP(js.Kind.N)
	}
	s.Start = du.UnixNano(js.Start.V)
	s.End = du.UnixNano(js.End.V)
	putAttrs(s.Attrs, js.Attributes)
	for i := range js.Events {
		ev := &js.Events[i]
		e := du.AddEvent(s)
		e.Name = string(ev.Name)
		e.Time = du.UnixNano(ev.Time.V)
		putAttrs(e.Attrs, ev.Attributes)
	}
	if js.DroppedEvents.V > 0 && js.DroppedEvents.V < 1<<31 {
		s.DroppedEvents = int(js.DroppedEvents.V)
	}
	code := js.Status.Code
	up := strings.ToUpper(code.S)
	s.StatusError = code.N == 2 || up == "STATUS_CODE_ERROR" || up == "ERROR"
	s.StatusMessage = js.Status.Message
}
