package otlpjson_test

import (
	"math"
	"os"
	"reflect"
	"strings"
	"testing"

	"github.com/tokentrace/tokentrace/analyzer/model"
	"github.com/tokentrace/tokentrace/analyzer/source/otlpjson"
)

type result struct {
	spans []model.Span
	skips []string
}

func decode(t testing.TB, in string) result {
	t.Helper()
	var r result
	err := otlpjson.Decode(strings.NewReader(in), "in", func(s *model.Span) error {
		c := *s
		c.Attrs = map[string]any{}
		for k, v := range s.Attrs {
			c.Attrs[k] = v
		}
		c.Events = append([]model.SpanEvent(nil), s.Events...)
		for i := range c.Events {
			m := map[string]any{}
			for k, v := range c.Events[i].Attrs {
				m[k] = v
			}
			c.Events[i].Attrs = m
		}
		r.spans = append(r.spans, c)
		return nil
	}, func(reason, example string) { r.skips = append(r.skips, reason+" @ "+example) })
	if err != nil {
		t.Fatal(err)
	}
	return r
}

const span = `{"traceId":"4bf92f3577b34da6a3ce929d0e0e4736","spanId":"00f067aa0ba902b7","name":"s","startTimeUnixNano":"1","endTimeUnixNano":"2"%s}`

func TestValues(t *testing.T) {
	in := `{"resourceSpans":[{"scopeSpans":[{"spans":[` + strings.Replace(span, "%s", `,"kind":"SPAN_KIND_CLIENT","status":{"code":"STATUS_CODE_ERROR","message":"boom"},"droppedEventsCount":"7","attributes":[
		{"key":"s","value":{"stringValue":""}},
		{"key":"i","value":{"intValue":-42}},
		{"key":"i2","value":{"intValue":"9007199254740993"}},
		{"key":"d","value":{"doubleValue":"NaN"}},
		{"key":"d2","value":{"doubleValue":2.5}},
		{"key":"b","value":{"boolValue":true}},
		{"key":"bytes","value":{"bytesValue":"AQID"}},
		{"key":"arr","value":{"arrayValue":{"values":[{"stringValue":"a"},{"stringValue":"b"}]}}},
		{"key":"mixed","value":{"arrayValue":{"values":[{"intValue":"1"},{"boolValue":false},{}]}}},
		{"key":"empty","value":{"arrayValue":{}}},
		{"key":"kv","value":{"kvlistValue":{"values":[{"key":"x","value":{"doubleValue":1}}]}}},
		{"key":"none","value":{}}
	]`, 1) + `]}],"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]}}]}`
	r := decode(t, in)
	if len(r.spans) != 1 || len(r.skips) != 0 {
		t.Fatalf("spans %d skips %v", len(r.spans), r.skips)
	}
	s := r.spans[0]
	if s.Kind != "client" || !s.StatusError || s.StatusMessage != "boom" || s.DroppedEvents != 7 || s.Service != "svc" {
		t.Errorf("span %+v", s)
	}
	if d, ok := s.Attrs["d"].(float64); !ok || !math.IsNaN(d) {
		t.Errorf("d = %v", s.Attrs["d"])
	}
	delete(s.Attrs, "d")
	want := map[string]any{
		"s": "", "i": int64(-42), "i2": int64(9007199254740993), "d2": 2.5, "b": true, "bytes": "AQID",
		"arr": []string{"a", "b"}, "mixed": []any{int64(1), false, nil}, "empty": []string{},
		"kv": map[string]any{"x": 1.0},
	}
	if !reflect.DeepEqual(s.Attrs, want) {
		t.Errorf("attrs\n got %#v\nwant %#v", s.Attrs, want)
	}
}

func TestShapes(t *testing.T) {
	line := `{"resourceSpans":[{"resource":{},"scopeSpans":[{"spans":[` + strings.Replace(span, "%s", "", 1) + `]}]}]}`
	for name, tc := range map[string]struct {
		in    string
		spans int
		skips int
	}{
		"line":                     {line, 1, 0},
		"two values on one line":   {line + " " + line, 2, 0},
		"array of TracesData":      {"[" + line + "," + line + "]", 2, 0},
		"api_v3 answer":            {`{"result":` + line + `}`, 1, 0},
		"api_v3 stream of answers": {`{"result":` + line + "}\n" + `{"result":` + line + "}\n", 2, 0},
		"pretty":                   {strings.ReplaceAll(line, ",", ",\n  "), 1, 0},
		"snake_case":               {strings.ReplaceAll(strings.ReplaceAll(line, "resourceSpans", "resource_spans"), "scopeSpans", "scope_spans"), 1, 0},
		"old name":                 {strings.ReplaceAll(line, "scopeSpans", "instrumentationLibrarySpans"), 1, 0},
		"resource after spans":     {`{"resourceSpans":[{"scopeSpans":[{"spans":[` + strings.Replace(span, "%s", "", 1) + `]}],"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"late"}}]}}]}`, 1, 0},
		"BOM":                      {"\xef\xbb\xbf" + line, 1, 0},
		"empty object":             {"{}", 0, 1},
		"unknown keys":             {`{"x":[1,{"y":2}],"resourceSpans":[{"z":null,"scopeSpans":[{"scope":{"name":"n"},"w":3,"spans":[]}]}]}`, 0, 0},
		"null":                     {"null", 0, 1},
	} {
		t.Run(name, func(t *testing.T) {
			r := decode(t, tc.in)
			if len(r.spans) != tc.spans || len(r.skips) != tc.skips {
				t.Errorf("spans %d skips %v; want %d, %d", len(r.spans), r.skips, tc.spans, tc.skips)
			}
			if name == "resource after spans" && r.spans[0].Service != "late" {
				t.Errorf("service %q", r.spans[0].Service)
			}
		})
	}
}

func TestSniff(t *testing.T) {
	for in, want := range map[string]bool{
		`{"resourceSpans":[]}`:            true,
		"  \n{\n  \"resourceSpans\": [":   true,
		`{"result":{"resourceSpans":[]}}`: true,
		`{"error":{"httpCode":404}}`:      true,
		`[{"resourceSpans":[]}]`:          true,
		`{"data":[]}`:                     false,
		`{"traceID":"x","spans":[]}`:      false,
		"\x00\x00\x01\x00\x0a":            false,
		"":                                false,
	} {
		if got := otlpjson.Sniff([]byte(in)); got != want {
			t.Errorf("Sniff(%q) = %t", in, got)
		}
	}
}

func TestFixtures(t *testing.T) {
	for _, name := range []string{"trace.otlp.jsonl", "trace.otlp.json", "trace.api-v3.json"} {
		b, err := os.ReadFile("../testdata/" + name)
		if err != nil {
			t.Fatal(err)
		}
		r := decode(t, string(b))
		if len(r.spans) != 3 || len(r.skips) != 0 {
			t.Errorf("%s: %d spans, skips %v", name, len(r.spans), r.skips)
		}
	}
}
