package jaegerjson_test

import (
	"math"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/tokentrace/tokentrace/analyzer/model"
	"github.com/tokentrace/tokentrace/analyzer/source/jaegerjson"
)

type result struct {
	spans []*model.Span
	skips []string
}

func decode(t testing.TB, in string) result {
	t.Helper()
	var r result
	err := jaegerjson.Decode(strings.NewReader(in), "in", func(s *model.Span) error {
		c := *s
		c.Attrs = map[string]any{}
		for k, v := range s.Attrs {
			c.Attrs[k] = v
		}
		c.Events = nil
		for _, e := range s.Events {
			m := map[string]any{}
			for k, v := range e.Attrs {
				m[k] = v
			}
			c.Events = append(c.Events, model.SpanEvent{Name: e.Name, Time: e.Time, Attrs: m})
		}
		r.spans = append(r.spans, &c)
		return nil
	}, func(reason, example string) { r.skips = append(r.skips, reason+" @ "+example) })
	if err != nil {
		t.Fatal(err)
	}
	return r
}

func TestTags(t *testing.T) {
	in := `{"traceID":"a3ce929d0e0e4736","spans":[{"spanID":"f067aa0ba902b7","operationName":"op","startTime":"1700000000000001","duration":2,
	"references":[{"refType":"FOLLOWS_FROM","traceID":"a3ce929d0e0e4736","spanID":"1"},{"refType":"CHILD_OF","traceID":"a3ce929d0e0e4736","spanID":"2"}],
	"process":{"serviceName":"embedded","tags":[]},
	"tags":[
		{"key":"i","type":"int64","value":"-7"},
		{"key":"big","type":"int64","value":9007199254740993},
		{"key":"f","type":"float64","value":"NaN"},
		{"key":"f2","type":"float64","value":1e-9},
		{"key":"b","type":"bool","value":"true"},
		{"key":"bin","type":"binary","value":"AQID"},
		{"key":"s","type":"string","value":"x"},
		{"key":"untyped","value":12.5},
		{"key":"obj","type":"string","value":{"a":1}},
		{"key":"null","type":"string","value":null},
		{"key":"span.kind","type":"string","value":"CLIENT"},
		{"key":"otel.status_code","type":"string","value":"ERROR"},
		{"key":"otel.scope.name","type":"string","value":"lib"}
	],
	"logs":[{"timestamp":1700000000000002,"fields":[{"key":"message","type":"string","value":"no event field"}]}]}]}`
	r := decode(t, in)
	if len(r.spans) != 1 || len(r.skips) != 0 {
		t.Fatalf("spans %d skips %v", len(r.spans), r.skips)
	}
	s := r.spans[0]
	if s.TraceID != "0000000000000000a3ce929d0e0e4736" || s.SpanID != "00f067aa0ba902b7" || s.ParentSpanID != "0000000000000002" ||
		s.Service != "embedded" || s.Kind != "client" || !s.StatusError {
		t.Errorf("span %+v", s)
	}
	if !s.Start.Equal(time.UnixMicro(1700000000000001)) || s.End.Sub(s.Start) != 2*time.Microsecond {
		t.Errorf("times %v %v", s.Start, s.End)
	}
	if f, ok := s.Attrs["f"].(float64); !ok || !math.IsNaN(f) {
		t.Errorf("f = %v", s.Attrs["f"])
	}
	delete(s.Attrs, "f")
	want := map[string]any{"i": int64(-7), "big": int64(9007199254740993), "f2": 1e-9, "b": true, "bin": "AQID", "s": "x", "untyped": 12.5, "obj": `{"a":1}`}
	if !reflect.DeepEqual(s.Attrs, want) {
		t.Errorf("attrs\n got %#v\nwant %#v", s.Attrs, want)
	}
	if len(s.Events) != 1 || s.Events[0].Name != "" || s.Events[0].Attrs["message"] != "no event field" {
		t.Errorf("events %+v", s.Events)
	}
}

func TestShapes(t *testing.T) {
	tr := `{"traceID":"1","spans":[{"traceID":"1","spanID":"2","startTime":1,"duration":1,"processID":"p1"}],"processes":{"p1":{"serviceName":"svc"}}}`
	for name, tc := range map[string]struct {
		in           string
		spans, skips int
	}{
		"answer":                   {`{"data":[` + tr + `,` + tr + `],"total":2,"limit":0,"offset":0,"errors":null}`, 2, 0},
		"answer with data last":    {`{"total":1,"errors":null,"data":[` + tr + `]}`, 1, 0},
		"bare array":               {`[` + tr + `]`, 1, 0},
		"single trace":             {tr, 1, 0},
		"data holds one trace":     {`{"data":` + tr + `}`, 1, 0},
		"concatenated answers":     {`{"data":[` + tr + "]}\n" + `{"data":[` + tr + "]}\n", 2, 0},
		"processes before spans":   {`{"processes":{"p1":{"serviceName":"svc"}},"traceID":"1","spans":[{"spanID":"2","startTime":1,"duration":1,"processID":"p1"}]}`, 1, 0},
		"unknown process":          {strings.Replace(tr, `"processID":"p1"`, `"processID":"p9"`, 1), 1, 0},
		"bad process":              {strings.Replace(tr, `{"serviceName":"svc"}`, `{"serviceName":7}`, 1), 1, 1},
		"data is a string":         {`{"data":"x"}`, 0, 1},
		"a trace is a number":      {`[5,` + tr + `]`, 1, 1},
		"errors":                   {`{"data":null,"errors":[{"code":500,"msg":"boom"},{"code":404,"msg":"gone"}]}`, 0, 2},
		"errors of another shape":  {`{"data":null,"errors":"boom"}`, 0, 1},
		"empty":                    {`{}`, 0, 0},
		"top-level scalar":         {`"x"`, 0, 1},
		"trace without a trace id": {strings.Replace(tr, `"traceID":"1","spans":[{"traceID":"1",`, `"spans":[{`, 1), 0, 1},
	} {
		t.Run(name, func(t *testing.T) {
			r := decode(t, tc.in)
			if len(r.spans) != tc.spans || len(r.skips) != tc.skips {
				t.Errorf("spans %d skips %v; want %d, %d", len(r.spans), r.skips, tc.spans, tc.skips)
			}
			for _, s := range r.spans {
				if want := map[bool]string{true: "", false: "svc"}[name == "unknown process" || name == "bad process"]; s.Service != want {
					t.Errorf("service %q, want %q", s.Service, want)
				}
			}
		})
	}
}

func TestSniff(t *testing.T) {
	for in, want := range map[string]bool{
		`{"data":[{"traceID":"1"}]}`:   true,
		`[{"traceID":"1","spans":[]}]`: true,
		`{"spans":[]}`:                 true,
		`{"resourceSpans":[]}`:         false,
		`{"result":{}}`:                false,
		"":                             false,
	} {
		if got := jaegerjson.Sniff([]byte(in)); got != want {
			t.Errorf("Sniff(%q) = %t", in, got)
		}
	}
}

func TestFixture(t *testing.T) {
	b, err := os.ReadFile("../testdata/trace.jaeger.json")
	if err != nil {
		t.Fatal(err)
	}
	r := decode(t, string(b))
	if len(r.spans) != 3 || len(r.skips) != 0 {
		t.Fatalf("%d spans, skips %v", len(r.spans), r.skips)
	}
	b0 := r.spans[2]
	if b0.DroppedEvents != 2 || !b0.StatusError || b0.StatusMessage != "client went away" || b0.Attrs["otel.scope.name"] != nil {
		t.Errorf("span B %+v", b0)
	}
}
