package source_test

import (
	"context"
	"encoding/binary"
	"flag"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"

	"github.com/tokentrace/tokentrace/analyzer/model"
	"github.com/tokentrace/tokentrace/analyzer/source"
)

var update = flag.Bool("update", false, "rewrite the generated OTLP fixtures in testdata")

// t0 is the start of the fixture trace: 2023-11-14T22:13:20Z.
var t0 = time.Unix(1700000000, 0)

func str(k, v string) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}}}
}
func i64(k string, v int64) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_IntValue{IntValue: v}}}
}
func f64(k string, v float64) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_DoubleValue{DoubleValue: v}}}
}
func boolean(k string, v bool) *commonpb.KeyValue {
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_BoolValue{BoolValue: v}}}
}
func strs(k string, vs ...string) *commonpb.KeyValue {
	arr := &commonpb.ArrayValue{}
	for _, v := range vs {
		arr.Values = append(arr.Values, &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: v}})
	}
	return &commonpb.KeyValue{Key: k, Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_ArrayValue{ArrayValue: arr}}}
}
func ns(d time.Duration) uint64 { return uint64(t0.Add(d).UnixNano()) }
func mustHex(s string) []byte {
	b := make([]byte, len(s)/2)
	for i := range b {
		var v byte
		for _, c := range s[2*i : 2*i+2] {
			v <<= 4
			switch {
			case c >= 'a':
				v |= byte(c-'a') + 10
			default:
				v |= byte(c - '0')
			}
		}
		b[i] = v
	}
	return b
}

func tokenEvent(at time.Duration, idx int64) *tracepb.Span_Event {
	return &tracepb.Span_Event{TimeUnixNano: ns(at), Name: "tokentrace.token", Attributes: []*commonpb.KeyValue{i64("tokentrace.token.index", idx)}}
}

// fixtureTD is the trace every testdata/trace.* file holds: request A
// (4 token events, slow from token 2 to 3 while request B's prefill ran
// on the same instance), request B (events capped: times from the compact
// attribute only; the client went away), and vLLM's own span in A's trace.
func fixtureTD() *tracepb.TracesData {
	const ms = time.Millisecond
	a := &tracepb.Span{
		TraceId: mustHex("4bf92f3577b34da6a3ce929d0e0e4736"), SpanId: mustHex("00f067aa0ba902b7"),
		Name: "chat llama-3-8b", Kind: tracepb.Span_SPAN_KIND_SERVER, StartTimeUnixNano: ns(0), EndTimeUnixNano: ns(500 * ms),
		Attributes: []*commonpb.KeyValue{
			str("tokentrace.schema", "tokentrace/1"), str("gen_ai.operation.name", "chat"), str("gen_ai.provider.name", "openai"),
			str("gen_ai.request.model", "llama-3-8b"), str("gen_ai.response.model", "llama-3-8b"), boolean("gen_ai.request.stream", true),
			i64("gen_ai.usage.input_tokens", 512), i64("gen_ai.usage.output_tokens", 4), strs("gen_ai.response.finish_reasons", "stop"),
			str("tokentrace.instance", "10.0.0.7:8000"), str("tokentrace.prompt_type", "qa"),
			i64("tokentrace.ordinal", 17), i64("tokentrace.instance.ordinal", 9),
			f64("tokentrace.ttft_ms", 120), f64("tokentrace.tpot_ms", 93.333), i64("tokentrace.tokens", 4), boolean("tokentrace.tokens.estimated", false),
			i64("tokentrace.chunks", 4), str("tokentrace.token_times", "v1:wKkHmHWYdZChDw"), str("tokentrace.stream.outcome", "complete"),
			str("http.request.method", "POST"), str("url.path", "/v1/chat/completions"), i64("http.response.status_code", 200),
		},
		Events: []*tracepb.Span_Event{
			tokenEvent(120*ms, 0), tokenEvent(135*ms, 1), tokenEvent(150*ms, 2), tokenEvent(400*ms, 3),
			{TimeUnixNano: ns(150 * ms), Name: "tokentrace.engine.prefill", Attributes: []*commonpb.KeyValue{
				str("tokentrace.engine.source", "gateway"), f64("tokentrace.engine.duration_ms", 200),
				str("tokentrace.prefill.trace_id", "5b8efff798038103d269b633813fc60c"), str("tokentrace.prefill.span_id", "eee19b7ec3c1b174"),
				i64("tokentrace.prefill.prompt_chars", 9000)}},
		},
		Status: &tracepb.Status{},
	}
	b := &tracepb.Span{
		TraceId: mustHex("5b8efff798038103d269b633813fc60c"), SpanId: mustHex("eee19b7ec3c1b174"),
		Name: "chat llama-3-8b", Kind: tracepb.Span_SPAN_KIND_SERVER, StartTimeUnixNano: ns(150 * ms), EndTimeUnixNano: ns(380 * ms),
		Attributes: []*commonpb.KeyValue{
			str("tokentrace.schema", "tokentrace/1"), str("gen_ai.operation.name", "chat"), str("gen_ai.request.model", "llama-3-8b"),
			boolean("gen_ai.request.stream", true), str("tokentrace.instance", "10.0.0.7:8000"),
			i64("tokentrace.ordinal", 18), i64("tokentrace.instance.ordinal", 10), i64("tokentrace.prompt_chars", 9000),
			f64("tokentrace.ttft_ms", 200), f64("tokentrace.tpot_ms", 15), i64("tokentrace.tokens", 2), boolean("tokentrace.tokens.estimated", true),
			i64("tokentrace.chunks", 2), str("tokentrace.token_times", "v1:wJoMmHU"),
			str("tokentrace.stream.outcome", "client_disconnect"), str("error.type", "client_disconnect"),
		},
		DroppedEventsCount: 2,
		Status:             &tracepb.Status{Code: tracepb.Status_STATUS_CODE_ERROR, Message: "client went away"},
	}
	c := &tracepb.Span{
		TraceId: mustHex("4bf92f3577b34da6a3ce929d0e0e4736"), SpanId: mustHex("b7ad6b7169203331"), ParentSpanId: mustHex("00f067aa0ba902b7"),
		Name: "llm_request", Kind: tracepb.Span_SPAN_KIND_INTERNAL, StartTimeUnixNano: ns(2 * ms), EndTimeUnixNano: ns(498 * ms),
		Attributes: []*commonpb.KeyValue{str("gen_ai.request.id", "chatcmpl-1"), f64("gen_ai.latency.time_to_first_token", 0.117)},
		Status:     &tracepb.Status{},
	}
	scope := &commonpb.InstrumentationScope{Name: "github.com/tokentrace/tokentrace/instrument", Version: "0.1.0"}
	return &tracepb.TracesData{ResourceSpans: []*tracepb.ResourceSpans{
		{
			Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{
				str("service.name", "llm-gateway"), str("host.name", "gw-1"),
				str("telemetry.sdk.language", "go"), str("telemetry.sdk.name", "opentelemetry"), str("telemetry.sdk.version", "1.47.0")}},
			ScopeSpans: []*tracepb.ScopeSpans{{Scope: scope, Spans: []*tracepb.Span{a, b}}},
		},
		{
			Resource:   &resourcepb.Resource{Attributes: []*commonpb.KeyValue{str("service.name", "vllm")}},
			ScopeSpans: []*tracepb.ScopeSpans{{Scope: &commonpb.InstrumentationScope{Name: "vllm.tracing"}, Spans: []*tracepb.Span{c}}},
		},
	}}
}

// fixtureFiles are the fixtures and their formats. trace.jaeger.json is
// written by hand (a Jaeger UI download); the others come from fixtureTD
// with -update.
var fixtureFiles = []struct {
	name   string
	format source.Format
	jaeger bool
}{
	{"trace.otlp.jsonl", source.FormatOTLPJSON, false},
	{"trace.otlp.json", source.FormatOTLPJSON, false},
	{"trace.api-v3.json", source.FormatOTLPJSON, false},
	{"trace.otlp.binpb", source.FormatOTLPProto, false},
	{"trace.otlp.pb", source.FormatOTLPProto, false},
	{"trace.jaeger.json", source.FormatJaegerJSON, true},
}

func writeFixtures(t *testing.T) {
	td := fixtureTD()
	perResource := func() []*tracepb.TracesData {
		var out []*tracepb.TracesData
		for _, rs := range td.ResourceSpans {
			out = append(out, &tracepb.TracesData{ResourceSpans: []*tracepb.ResourceSpans{rs}})
		}
		return out
	}
	var lines, delimited []byte
	for _, part := range perResource() {
		lines = append(append(lines, mustJSON(t, toX(part), false)...), '\n')
		m := protoMessage(t, part)
		delimited = append(binary.BigEndian.AppendUint32(delimited, uint32(len(m))), m...)
	}
	files := map[string][]byte{
		"trace.otlp.jsonl":  lines,
		"trace.otlp.json":   append(mustJSON(t, toX(td), true), '\n'),
		"trace.api-v3.json": append(append(append([]byte(`{"result":`), mustJSON(t, toX(td), false)...), '}'), '\n'),
		"trace.otlp.binpb":  delimited,
		"trace.otlp.pb":     protoMessage(t, td),
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join("testdata", name), data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// wantFixture is the fixture trace's requests, worked out by hand.
func wantFixture(jaeger bool) map[string]*model.Request {
	const ms = time.Millisecond
	at := func(d time.Duration) time.Time { return t0.Add(d) }
	b := &model.Request{
		TraceID: "5b8efff798038103d269b633813fc60c", SpanID: "eee19b7ec3c1b174", Service: "llm-gateway",
		Name: "chat llama-3-8b", Kind: "server", Instance: "10.0.0.7:8000", Model: "llama-3-8b",
		Ordinal: 18, InstanceOrdinal: 10, Start: at(150 * ms), End: at(380 * ms), Stream: true,
		Tokens:       []model.Token{{Time: at(350 * ms), Index: 0, Count: 1}, {Time: at(365 * ms), Index: 1, Count: 1}},
		OutputTokens: 2, Estimated: true, PromptChars: 9000, TimesFrom: model.TimesCompact, DroppedEvents: 2,
		Outcome: "client_disconnect", Error: true, ErrorType: "client_disconnect",
	}
	return map[string]*model.Request{
		"00f067aa0ba902b7": {
			TraceID: "4bf92f3577b34da6a3ce929d0e0e4736", SpanID: "00f067aa0ba902b7", Service: "llm-gateway",
			Name: "chat llama-3-8b", Kind: "server", Instance: "10.0.0.7:8000", Model: "llama-3-8b", PromptType: "qa",
			Ordinal: 17, InstanceOrdinal: 9, Start: t0, End: at(500 * ms), Stream: true,
			Tokens: []model.Token{
				{Time: at(120 * ms), Index: 0, Count: 1}, {Time: at(135 * ms), Index: 1, Count: 1},
				{Time: at(150 * ms), Index: 2, Count: 1}, {Time: at(400 * ms), Index: 3, Count: 1},
			},
			OutputTokens: 4, PromptTokens: 512, TimesFrom: model.TimesEvents, Outcome: "complete",
			Events: []model.Event{{Kind: model.KindPrefill, Start: at(150 * ms), Duration: 200 * ms, Source: "gateway",
				TraceID: "5b8efff798038103d269b633813fc60c", SpanID: "eee19b7ec3c1b174", PromptChars: 9000}},
		},
		"eee19b7ec3c1b174": b,
	}
}

func TestFixtures(t *testing.T) {
	if *update {
		writeFixtures(t)
	}
	for _, fx := range fixtureFiles {
		t.Run(fx.name, func(t *testing.T) {
			path := filepath.Join("testdata", fx.name)
			data, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if got := source.Detect(data); got != fx.format {
				t.Errorf("Detect = %v, want %v", got, fx.format)
			}
			skips := &source.Skips{}
			got := map[string]*model.Request{}
			err = source.Requests(context.Background(), source.Files([]string{path}, skips), skips, func(r *model.Request) error {
				got[r.SpanID] = r
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			want := wantFixture(fx.jaeger)
			if len(got) != len(want) {
				t.Fatalf("got %d requests, want %d", len(got), len(want))
			}
			for id, w := range want {
				g := got[id]
				if g == nil {
					t.Fatalf("request %s missing", id)
				}
				// Times compare with Equal, not ==: drop them after checking.
				w2, g2 := *w, *g
				if !g.Start.Equal(w.Start) || !g.End.Equal(w.End) {
					t.Errorf("%s: %v..%v, want %v..%v", id, g.Start, g.End, w.Start, w.End)
				}
				if len(g.Tokens) != len(w.Tokens) {
					t.Fatalf("%s: %d tokens, want %d", id, len(g.Tokens), len(w.Tokens))
				}
				for i := range w.Tokens {
					if !g.Tokens[i].Time.Equal(w.Tokens[i].Time) || g.Tokens[i].Index != w.Tokens[i].Index || g.Tokens[i].Count != w.Tokens[i].Count {
						t.Errorf("%s: token %d = %+v, want %+v", id, i, g.Tokens[i], w.Tokens[i])
					}
				}
				if len(g.Events) != len(w.Events) {
					t.Fatalf("%s: %d events, want %d", id, len(g.Events), len(w.Events))
				}
				for i := range w.Events {
					we, ge := w.Events[i], g.Events[i]
					if !ge.Start.Equal(we.Start) {
						t.Errorf("%s: event %d at %v, want %v", id, i, ge.Start, we.Start)
					}
					we.Start, ge.Start = time.Time{}, time.Time{}
					if we != ge {
						t.Errorf("%s: event %d = %+v, want %+v", id, i, ge, we)
					}
				}
				w2.Start, w2.End, w2.Tokens, w2.Events = time.Time{}, time.Time{}, nil, nil
				g2.Start, g2.End, g2.Tokens, g2.Events = time.Time{}, time.Time{}, nil, nil
				if !reflect.DeepEqual(g2, w2) {
					t.Errorf("%s:\ngot  %+v\nwant %+v", id, g2, w2)
				}
			}
			if s := skips.List(); len(s) != 1 || s[0].Reason != source.ReasonNotTokentrace || s[0].Count != 1 ||
				s[0].Example != "trace 4bf92f3577b34da6a3ce929d0e0e4736: llm_request" {
				t.Errorf("skips = %+v, want vLLM's llm_request as not a tokentrace span", s)
			}
			if ttft := got["00f067aa0ba902b7"].TTFT(); ttft != 120*time.Millisecond {
				t.Errorf("TTFT = %v, want 120ms", ttft)
			}
			if tpot, _ := got["00f067aa0ba902b7"].TPOT(); tpot != 280*time.Millisecond/3 {
				t.Errorf("TPOT = %v, want 93.333ms", tpot)
			}
		})
	}
}
