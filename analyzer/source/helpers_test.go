package source_test

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"
	collectorpb "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/protobuf/proto"

	"github.com/tokentrace/tokentrace/instrument"
	"github.com/tokentrace/tokentrace/internal/openaitest"
)

// ---------------------------------------------------------------------
// Recording real spans with the instrument middleware.

// newProvider returns an SDK provider recording into a SpanRecorder, with
// a service name; eventLimit 0 keeps the SDK default of 128 events.
func newProvider(t testing.TB, eventLimit int) (*sdktrace.TracerProvider, *tracetest.SpanRecorder) {
	t.Helper()
	rec := tracetest.NewSpanRecorder()
	opts := []sdktrace.TracerProviderOption{
		sdktrace.WithSpanProcessor(rec),
		sdktrace.WithResource(resource.NewSchemaless(attribute.String("service.name", "llm-gateway"), attribute.String("host.name", "gw-1"))),
	}
	if eventLimit > 0 {
		l := sdktrace.NewSpanLimits()
		l.EventCountLimit = eventLimit
		opts = append(opts, sdktrace.WithRawSpanLimits(l))
	}
	tp := sdktrace.NewTracerProvider(opts...)
	t.Cleanup(func() { _ = tp.Shutdown(context.Background()) })
	return tp, rec
}

func post(t testing.TB, url, body string, fail bool) {
	t.Helper()
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	if fail {
		req.Header.Set("X-Fail", "1")
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
}

// recordScenario serves, through the real instrument.Handler:
//   - a 40-token stream whose engine reports a prefill, a KV swap
//     preemption and a GC pause mid-stream, with extra attributes of
//     every type set on the span;
//   - a non-streamed request; a request the engine fails (503);
//   - a 2,000-token stream under the SDK's default 128-event limit when
//     eventLimit is 0;
//
// and adds one span of other instrumentation. It returns the ended spans.
func recordScenario(t testing.TB, eventLimit int) []sdktrace.ReadOnlySpan {
	t.Helper()
	tp, rec := newProvider(t, eventLimit)
	tracker := instrument.NewTracker()
	intruder := trace.TraceID{0xab, 0xcd, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}
	eng := &openaitest.Engine{Usage: true, Tokens: 40, Gap: func(i int) time.Duration {
		if i >= 20 && i < 25 {
			return 3 * time.Millisecond
		}
		return 0
	}, OnToken: func(r *http.Request, i int) {
		now := time.Now()
		switch i {
		case 1:
			trace.SpanFromContext(r.Context()).SetAttributes(
				attribute.StringSlice("test.strings", []string{"a", "b"}),
				attribute.Int64Slice("test.ints", []int64{1, -2, 1 << 40}),
				attribute.Float64Slice("test.floats", []float64{0.5, 1e-9}),
				attribute.BoolSlice("test.bools", []bool{true, false}),
				attribute.Float64("test.float", 3.25),
				attribute.Int64("test.big", 1<<53+1),
				attribute.String("test.unicode", "é\"\\\n€"),
			)
		case 10:
			tracker.RecordPrefill("engine-0", instrument.Prefill{TraceID: intruder, PromptTokens: 3100, Start: now.Add(-4 * time.Millisecond), Duration: 4 * time.Millisecond})
		case 20:
			tracker.RecordPreemption("engine-0", instrument.Preemption{Mode: "swap", Start: now, Duration: 1500 * time.Microsecond, Count: 2, Uncertainty: 250 * time.Microsecond})
		case 30:
			tracker.RecordGCPause("engine-0", instrument.GCPause{Start: now.Add(-time.Millisecond), Duration: 1234567 * time.Nanosecond})
		}
	}}
	opts := []instrument.Option{
		instrument.WithTracerProvider(tp), instrument.WithTracker(tracker),
		instrument.WithInstance(func(*http.Request) string { return "engine-0" }),
		instrument.WithClassifier(func(*http.Request, instrument.RequestInfo) instrument.Classification {
			return instrument.Classification{PromptType: "qa", ModelVersion: "v7"}
		}),
	}
	srv := httptest.NewServer(instrument.Handler(eng, opts...))
	post(t, srv.URL, `{"model":"m","stream":true,"stream_options":{"include_usage":true},"max_tokens":64,"messages":[{"role":"user","content":"hello"}]}`, false)
	post(t, srv.URL, `{"model":"m","stream":false,"messages":[{"role":"user","content":"hello"}]}`, false)
	post(t, srv.URL, `{"model":"m","stream":true,"messages":[{"role":"user","content":"hello"}]}`, true)
	srv.Close()

	long := &openaitest.Engine{Usage: true, Tokens: 2000, Gap: func(i int) time.Duration {
		if i%500 == 499 {
			return 2 * time.Millisecond
		}
		return 0
	}}
	srv2 := httptest.NewServer(instrument.Handler(long, opts...))
	post(t, srv2.URL, `{"model":"m","stream":true,"messages":[{"role":"user","content":"write a lot"}]}`, false)
	srv2.Close()

	_, other := tp.Tracer("vllm").Start(context.Background(), "llm_request", trace.WithSpanKind(trace.SpanKindInternal),
		trace.WithAttributes(attribute.String("gen_ai.request.model", "m")))
	other.AddEvent("scheduled")
	other.End()

	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := instrument.Flush(ctx); err != nil {
		t.Fatalf("Flush: %v", err)
	}
	spans := rec.Ended()
	if len(spans) != 5 {
		t.Fatalf("recorded %d spans, want 5", len(spans))
	}
	return spans
}

// ---------------------------------------------------------------------
// OTLP protobuf as the SDK's own exporter writes it.

type captureCollector struct {
	collectorpb.UnimplementedTraceServiceServer
	mu  sync.Mutex
	got []*tracepb.ResourceSpans
}

func (c *captureCollector) Export(_ context.Context, req *collectorpb.ExportTraceServiceRequest) (*collectorpb.ExportTraceServiceResponse, error) {
	c.mu.Lock()
	c.got = append(c.got, req.GetResourceSpans()...)
	c.mu.Unlock()
	return &collectorpb.ExportTraceServiceResponse{}, nil
}

// exportOTLP sends spans through the real otlptracegrpc exporter to an
// in-process collector on loopback and returns what it received.
func exportOTLP(t testing.TB, spans []sdktrace.ReadOnlySpan) *tracepb.TracesData {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	col := &captureCollector{}
	srv := grpc.NewServer(grpc.MaxRecvMsgSize(256 << 20))
	collectorpb.RegisterTraceServiceServer(srv, col)
	go func() { _ = srv.Serve(lis) }()
	defer srv.Stop()

	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	exp, err := otlptracegrpc.New(ctx, otlptracegrpc.WithEndpoint(lis.Addr().String()), otlptracegrpc.WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	if err := exp.ExportSpans(ctx, spans); err != nil {
		t.Fatal(err)
	}
	if err := exp.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	return &tracepb.TracesData{ResourceSpans: col.got}
}

// protoMessage is one TracesData message.
func protoMessage(t testing.TB, td *tracepb.TracesData) []byte {
	b, err := proto.Marshal(td)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// protoDelimited writes the Collector file exporter's proto format, one
// message per span (so that a file has several messages).
func protoDelimited(t testing.TB, td *tracepb.TracesData) []byte {
	var out []byte
	for _, part := range splitPerSpan(td) {
		b := protoMessage(t, part)
		out = binary.BigEndian.AppendUint32(out, uint32(len(b)))
		out = append(out, b...)
	}
	return out
}

// splitPerSpan returns one TracesData per span, keeping resource and scope.
func splitPerSpan(td *tracepb.TracesData) []*tracepb.TracesData {
	var out []*tracepb.TracesData
	for _, rs := range td.ResourceSpans {
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				out = append(out, &tracepb.TracesData{ResourceSpans: []*tracepb.ResourceSpans{{
					Resource: rs.Resource, SchemaUrl: rs.SchemaUrl,
					ScopeSpans: []*tracepb.ScopeSpans{{Scope: ss.Scope, SchemaUrl: ss.SchemaUrl, Spans: []*tracepb.Span{sp}}},
				}}})
			}
		}
	}
	return out
}

// ---------------------------------------------------------------------
// OTLP JSON as the Collector writes it (pdata's JSON marshaller: hex ids,
// 64-bit integers as strings, enums as numbers, empty fields left out).

type xTracesData struct {
	ResourceSpans []xResourceSpans `json:"resourceSpans"`
}
type xResourceSpans struct {
	Resource   xResource     `json:"resource"`
	ScopeSpans []xScopeSpans `json:"scopeSpans"`
	SchemaURL  string        `json:"schemaUrl,omitempty"`
}
type xResource struct {
	Attributes []xKV `json:"attributes,omitempty"`
}
type xScopeSpans struct {
	Scope struct {
		Name    string `json:"name,omitempty"`
		Version string `json:"version,omitempty"`
	} `json:"scope"`
	Spans     []xSpan `json:"spans"`
	SchemaURL string  `json:"schemaUrl,omitempty"`
}
type xSpan struct {
	TraceID            string   `json:"traceId"`
	SpanID             string   `json:"spanId"`
	ParentSpanID       string   `json:"parentSpanId"`
	Flags              uint32   `json:"flags,omitempty"`
	Name               string   `json:"name"`
	Kind               int32    `json:"kind,omitempty"`
	Start              string   `json:"startTimeUnixNano"`
	End                string   `json:"endTimeUnixNano"`
	Attributes         []xKV    `json:"attributes,omitempty"`
	Events             []xEvent `json:"events,omitempty"`
	DroppedEventsCount uint32   `json:"droppedEventsCount,omitempty"`
	Status             struct {
		Message string `json:"message,omitempty"`
		Code    int32  `json:"code,omitempty"`
	} `json:"status"`
}
type xEvent struct {
	Time       string `json:"timeUnixNano"`
	Name       string `json:"name"`
	Attributes []xKV  `json:"attributes,omitempty"`
}
type xKV struct {
	Key   string `json:"key"`
	Value xAny   `json:"value"`
}
type xAny struct {
	StringValue *string  `json:"stringValue,omitempty"`
	BoolValue   *bool    `json:"boolValue,omitempty"`
	IntValue    *string  `json:"intValue,omitempty"`
	DoubleValue *float64 `json:"doubleValue,omitempty"`
	ArrayValue  *struct {
		Values []xAny `json:"values"`
	} `json:"arrayValue,omitempty"`
	KvlistValue *struct {
		Values []xKV `json:"values"`
	} `json:"kvlistValue,omitempty"`
	BytesValue *string `json:"bytesValue,omitempty"`
}

func xValue(v *commonpb.AnyValue) xAny {
	var a xAny
	switch x := v.GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		a.StringValue = &x.StringValue
	case *commonpb.AnyValue_BoolValue:
		a.BoolValue = &x.BoolValue
	case *commonpb.AnyValue_IntValue:
		s := strconv.FormatInt(x.IntValue, 10)
		a.IntValue = &s
	case *commonpb.AnyValue_DoubleValue:
		a.DoubleValue = &x.DoubleValue
	case *commonpb.AnyValue_ArrayValue:
		a.ArrayValue = &struct {
			Values []xAny `json:"values"`
		}{}
		for _, e := range x.ArrayValue.Values {
			a.ArrayValue.Values = append(a.ArrayValue.Values, xValue(e))
		}
	case *commonpb.AnyValue_KvlistValue:
		a.KvlistValue = &struct {
			Values []xKV `json:"values"`
		}{Values: xKVs(x.KvlistValue.Values)}
	case *commonpb.AnyValue_BytesValue:
		s := base64.StdEncoding.EncodeToString(x.BytesValue)
		a.BytesValue = &s
	}
	return a
}

func xKVs(kvs []*commonpb.KeyValue) []xKV {
	var out []xKV
	for _, kv := range kvs {
		out = append(out, xKV{Key: kv.Key, Value: xValue(kv.Value)})
	}
	return out
}

func toX(td *tracepb.TracesData) xTracesData {
	var x xTracesData
	for _, rs := range td.ResourceSpans {
		xr := xResourceSpans{Resource: xResource{Attributes: xKVs(rs.GetResource().GetAttributes())}, SchemaURL: rs.SchemaUrl}
		for _, ss := range rs.ScopeSpans {
			xs := xScopeSpans{SchemaURL: ss.SchemaUrl}
			xs.Scope.Name, xs.Scope.Version = ss.GetScope().GetName(), ss.GetScope().GetVersion()
			for _, sp := range ss.Spans {
				o := xSpan{
					TraceID: hex.EncodeToString(sp.TraceId), SpanID: hex.EncodeToString(sp.SpanId),
					ParentSpanID: hex.EncodeToString(sp.ParentSpanId), Flags: sp.Flags, Name: sp.Name,
					Kind:  int32(sp.Kind),
					Start: strconv.FormatUint(sp.StartTimeUnixNano, 10), End: strconv.FormatUint(sp.EndTimeUnixNano, 10),
					Attributes: xKVs(sp.Attributes), DroppedEventsCount: sp.DroppedEventsCount,
				}
				for _, e := range sp.Events {
					o.Events = append(o.Events, xEvent{Time: strconv.FormatUint(e.TimeUnixNano, 10), Name: e.Name, Attributes: xKVs(e.Attributes)})
				}
				o.Status.Code, o.Status.Message = int32(sp.GetStatus().GetCode()), sp.GetStatus().GetMessage()
				xs.Spans = append(xs.Spans, o)
			}
			xr.ScopeSpans = append(xr.ScopeSpans, xs)
		}
		x.ResourceSpans = append(x.ResourceSpans, xr)
	}
	return x
}

func mustJSON(t testing.TB, v any, indent bool) []byte {
	var b []byte
	var err error
	if indent {
		b, err = json.MarshalIndent(v, "", "  ")
	} else {
		b, err = json.Marshal(v)
	}
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// otlpJSONLines writes the Collector file exporter's JSON: one TracesData
// per line, here one per span.
func otlpJSONLines(t testing.TB, td *tracepb.TracesData) []byte {
	var out []byte
	for _, part := range splitPerSpan(td) {
		out = append(out, mustJSON(t, toX(part), false)...)
		out = append(out, '\n')
	}
	return out
}

// ---------------------------------------------------------------------
// Jaeger UI JSON as Jaeger v2 answers /api/traces: OpenTelemetry spans
// mapped to Jaeger's model (span.kind, error, otel.scope.name tags; event
// names in the "event" field; arrays as JSON text; times in µs, truncated).

type jTrace struct {
	TraceID   string              `json:"traceID"`
	Spans     []jSpan             `json:"spans"`
	Processes map[string]jProcess `json:"processes"`
	Warnings  []string            `json:"warnings"`
}
type jSpan struct {
	TraceID       string   `json:"traceID"`
	SpanID        string   `json:"spanID"`
	OperationName string   `json:"operationName"`
	References    []jRef   `json:"references"`
	StartTime     int64    `json:"startTime"`
	Duration      int64    `json:"duration"`
	Tags          []jKV    `json:"tags"`
	Logs          []jLog   `json:"logs"`
	ProcessID     string   `json:"processID"`
	Warnings      []string `json:"warnings"`
	Flags         int      `json:"flags,omitempty"`
}
type jRef struct {
	RefType string `json:"refType"`
	TraceID string `json:"traceID"`
	SpanID  string `json:"spanID"`
}
type jKV struct {
	Key   string `json:"key"`
	Type  string `json:"type"`
	Value any    `json:"value"`
}
type jLog struct {
	Timestamp int64 `json:"timestamp"`
	Fields    []jKV `json:"fields"`
}
type jProcess struct {
	ServiceName string `json:"serviceName"`
	Tags        []jKV  `json:"tags"`
}

func jTag(kv *commonpb.KeyValue) jKV {
	switch x := kv.GetValue().GetValue().(type) {
	case *commonpb.AnyValue_StringValue:
		return jKV{kv.Key, "string", x.StringValue}
	case *commonpb.AnyValue_BoolValue:
		return jKV{kv.Key, "bool", x.BoolValue}
	case *commonpb.AnyValue_IntValue:
		return jKV{kv.Key, "int64", x.IntValue}
	case *commonpb.AnyValue_DoubleValue:
		return jKV{kv.Key, "float64", x.DoubleValue}
	case *commonpb.AnyValue_BytesValue:
		return jKV{kv.Key, "binary", base64.StdEncoding.EncodeToString(x.BytesValue)}
	}
	// Arrays and maps: their JSON text, as pcommon.Value.AsString makes it.
	var vals []any
	for _, e := range kv.GetValue().GetArrayValue().GetValues() {
		switch y := e.GetValue().(type) {
		case *commonpb.AnyValue_StringValue:
			vals = append(vals, y.StringValue)
		case *commonpb.AnyValue_BoolValue:
			vals = append(vals, y.BoolValue)
		case *commonpb.AnyValue_IntValue:
			vals = append(vals, y.IntValue)
		case *commonpb.AnyValue_DoubleValue:
			vals = append(vals, y.DoubleValue)
		}
	}
	b, _ := json.Marshal(vals)
	return jKV{kv.Key, "string", string(b)}
}

// jaegerJSON returns the /api/traces answer for td: {"data": [traces]}.
func jaegerJSON(t testing.TB, td *tracepb.TracesData) []byte {
	traces := map[string]*jTrace{}
	var order []string
	for _, rs := range td.ResourceSpans {
		proc := jProcess{ServiceName: "OTLPResourceNoServiceName"}
		for _, kv := range rs.GetResource().GetAttributes() {
			if kv.Key == "service.name" {
				proc.ServiceName = kv.GetValue().GetStringValue()
				continue
			}
			proc.Tags = append(proc.Tags, jTag(kv))
		}
		for _, ss := range rs.ScopeSpans {
			for _, sp := range ss.Spans {
				tid := hex.EncodeToString(sp.TraceId)
				tr := traces[tid]
				if tr == nil {
					tr = &jTrace{TraceID: tid, Processes: map[string]jProcess{}}
					traces[tid] = tr
					order = append(order, tid)
				}
				pid := ""
				for k, p := range tr.Processes {
					if p.ServiceName == proc.ServiceName {
						pid = k
					}
				}
				if pid == "" {
					pid = fmt.Sprintf("p%d", len(tr.Processes)+1)
					tr.Processes[pid] = proc
				}
				start := time.Unix(0, int64(sp.StartTimeUnixNano))
				end := time.Unix(0, int64(sp.EndTimeUnixNano))
				js := jSpan{TraceID: tid, SpanID: hex.EncodeToString(sp.SpanId), OperationName: sp.Name,
					StartTime: start.UnixNano() / 1000, Duration: int64(end.Sub(start) / time.Microsecond),
					ProcessID: pid, References: []jRef{}, Logs: []jLog{}, Flags: 1}
				if len(sp.ParentSpanId) > 0 {
					js.References = append(js.References, jRef{"CHILD_OF", tid, hex.EncodeToString(sp.ParentSpanId)})
				}
				if n := ss.GetScope().GetName(); n != "" {
					js.Tags = append(js.Tags, jKV{"otel.scope.name", "string", n})
				}
				if v := ss.GetScope().GetVersion(); v != "" {
					js.Tags = append(js.Tags, jKV{"otel.scope.version", "string", v})
				}
				for _, kv := range sp.Attributes {
					js.Tags = append(js.Tags, jTag(kv))
				}
				kinds := map[tracepb.Span_SpanKind]string{1: "internal", 2: "server", 3: "client", 4: "producer", 5: "consumer"}
				if k, ok := kinds[sp.Kind]; ok {
					js.Tags = append(js.Tags, jKV{"span.kind", "string", k})
				}
				switch sp.GetStatus().GetCode() {
				case tracepb.Status_STATUS_CODE_ERROR:
					js.Tags = append(js.Tags, jKV{"error", "bool", true})
				case tracepb.Status_STATUS_CODE_OK:
					js.Tags = append(js.Tags, jKV{"otel.status_code", "string", "OK"})
				}
				if m := sp.GetStatus().GetMessage(); m != "" {
					js.Tags = append(js.Tags, jKV{"otel.status_description", "string", m})
				}
				for _, e := range sp.Events {
					l := jLog{Timestamp: int64(e.TimeUnixNano) / 1000}
					if e.Name != "" {
						l.Fields = append(l.Fields, jKV{"event", "string", e.Name})
					}
					for _, kv := range e.Attributes {
						l.Fields = append(l.Fields, jTag(kv))
					}
					js.Logs = append(js.Logs, l)
				}
				tr.Spans = append(tr.Spans, js)
			}
		}
	}
	sort.Strings(order)
	answer := struct {
		Data   []*jTrace `json:"data"`
		Total  int       `json:"total"`
		Limit  int       `json:"limit"`
		Offset int       `json:"offset"`
		Errors any       `json:"errors"`
	}{}
	for _, id := range order {
		answer.Data = append(answer.Data, traces[id])
	}
	return mustJSON(t, answer, false)
}
