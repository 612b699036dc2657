package jaegerquery

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	gogoproto "github.com/gogo/protobuf/proto"
	jmodel "github.com/jaegertracing/jaeger-idl/model/v1"
	"github.com/jaegertracing/jaeger-idl/proto-gen/api_v2"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"

	"github.com/tokentrace/tokentrace/analyzer/model"
	"github.com/tokentrace/tokentrace/analyzer/source"
)

// Tests against fake servers: what a real Jaeger cannot be made to do
// (malformed replies, authentication, older versions) and the paging
// logic on a fake backend.

const secret = "s3cret-token-xyz"

// fakeGRPC serves every method with handle (raw messages through codec),
// plus whatever register adds; it returns the address.
func fakeGRPC(t *testing.T, handle grpc.StreamHandler, register func(*grpc.Server)) string {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	opts := []grpc.ServerOption{grpc.ForceServerCodec(codec{})}
	if handle != nil {
		opts = append(opts, grpc.UnknownServiceHandler(handle))
	}
	srv := grpc.NewServer(opts...)
	if register != nil {
		register(srv)
	}
	go func() { _ = srv.Serve(lis) }()
	t.Cleanup(srv.Stop)
	return lis.Addr().String()
}

// tracesData is one trace of one tokentrace-less span.
func tracesData(tid, sid byte, service string) *tracepb.TracesData {
	id := make([]byte, 16)
	id[15] = tid
	return &tracepb.TracesData{ResourceSpans: []*tracepb.ResourceSpans{{
		Resource: &resourcepb.Resource{Attributes: []*commonpb.KeyValue{{Key: "service.name", Value: &commonpb.AnyValue{Value: &commonpb.AnyValue_StringValue{StringValue: service}}}}},
		ScopeSpans: []*tracepb.ScopeSpans{{Spans: []*tracepb.Span{{
			TraceId: id, SpanId: []byte{0, 0, 0, 0, 0, 0, 0, sid}, Name: "op",
			StartTimeUnixNano: 1_700_000_000_000_000_001, EndTimeUnixNano: 1_700_000_000_500_000_000,
			Events:             []*tracepb.Span_Event{{Name: "e", TimeUnixNano: 1_700_000_000_000_000_123}},
			DroppedEventsCount: 7,
		}}}},
	}}}
}

func marshal(t *testing.T, m proto.Message) []byte {
	b, err := proto.Marshal(m)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func collectSpans(ctx context.Context, src source.Source) ([]*model.Span, error) {
	var out []*model.Span
	err := src.Spans(ctx, func(s *model.Span) error {
		out = append(out, source.Clone(s))
		return nil
	})
	return out, err
}

func TestMalformedV3MessageIsSkipped(t *testing.T) {
	addr := fakeGRPC(t, func(_ any, st grpc.ServerStream) error {
		m, _ := grpc.MethodFromServerStream(st)
		var req rawMessage
		if err := st.RecvMsg(&req); err != nil {
			return err
		}
		switch m {
		case v3Method + "FindTraces":
			_ = st.SendMsg(&rawMessage{b: marshal(t, tracesData(1, 1, "svc"))})
			_ = st.SendMsg(&rawMessage{b: []byte{0x0a, 0x05, 0xff, 0xff}}) // cut short
			return st.SendMsg(&rawMessage{b: marshal(t, tracesData(2, 2, "svc"))})
		}
		return status.Error(codes.Unimplemented, m)
	}, nil)
	skips := &source.Skips{}
	c, err := New(addr, WithProtocol(GRPCv3), WithSkips(skips))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	spans, err := collectSpans(context.Background(), c.Source(Query{Service: "svc"}))
	if err != nil {
		t.Fatal(err)
	}
	if len(spans) != 2 || skips.Count(ReasonMalformedMsg) != 1 {
		t.Fatalf("%d spans, skips %+v", len(spans), skips.List())
	}
	stop := errors.New("stop")
	if err := c.Source(Query{Service: "svc"}).Spans(context.Background(), func(*model.Span) error { return stop }); err != stop {
		t.Errorf("visitor error came back as %v", err)
	}
	s := spans[0]
	if s.DroppedEvents != 7 || s.Events[0].Name != "e" || s.Events[0].Time.UnixNano() != 1_700_000_000_000_000_123 || s.Service != "svc" {
		t.Errorf("span %+v", s)
	}
}

// fakeV2 is an api_v2 QueryService (gogo types through the codec).
type fakeV2 struct {
	api_v2.UnimplementedQueryServiceServer
	find func(*api_v2.FindTracesRequest, api_v2.QueryService_FindTracesServer) error
}

func (f *fakeV2) GetServices(context.Context, *api_v2.GetServicesRequest) (*api_v2.GetServicesResponse, error) {
	return &api_v2.GetServicesResponse{Services: []string{"svc"}}, nil
}

func (f *fakeV2) FindTraces(r *api_v2.FindTracesRequest, st api_v2.QueryService_FindTracesServer) error {
	return f.find(r, st)
}

func (f *fakeV2) GetTrace(r *api_v2.GetTraceRequest, st api_v2.QueryService_GetTraceServer) error {
	if r.TraceID.Low != 1 {
		return status.Error(codes.NotFound, "trace not found")
	}
	return st.Send(&api_v2.SpansResponseChunk{Spans: []jmodel.Span{v2Span(1, 1)}})
}

func v2Span(tid, sid uint64) jmodel.Span {
	start := time.Unix(1_700_000_000, 123_456_789).UTC()
	return jmodel.Span{
		TraceID: jmodel.NewTraceID(0, tid), SpanID: jmodel.SpanID(sid), OperationName: "chat m",
		StartTime: start, Duration: 500 * time.Millisecond,
		Process: &jmodel.Process{ServiceName: "svc"},
		Tags: []jmodel.KeyValue{
			jmodel.String("span.kind", "server"), jmodel.Bool("error", true),
			jmodel.String("otel.status_description", "boom"), jmodel.String("otel.scope.name", "x"),
			jmodel.Int64("n", -5), jmodel.Float64("f", 0.25), jmodel.Binary("b", []byte{1, 2}),
			jmodel.String("arr", `["a","b"]`),
		},
		Logs: []jmodel.Log{{Timestamp: start.Add(time.Nanosecond), Fields: []jmodel.KeyValue{
			jmodel.String("event", "tokentrace.token"), jmodel.Int64("tokentrace.token.index", 0),
		}}},
		References: []jmodel.SpanRef{{RefType: jmodel.ChildOf, TraceID: jmodel.NewTraceID(0, tid), SpanID: 99}},
	}
}

func TestV2ThroughFakeServer(t *testing.T) {
	var got *api_v2.FindTracesRequest
	fv := &fakeV2{find: func(r *api_v2.FindTracesRequest, st api_v2.QueryService_FindTracesServer) error {
		got = r
		if err := st.Send(&api_v2.SpansResponseChunk{Spans: []jmodel.Span{v2Span(1, 1), v2Span(2, 2)}}); err != nil {
			return err
		}
		return st.SendMsg(&rawMessage{b: []byte{0x0a, 0xff, 0xff, 0xff}}) // malformed chunk
	}}
	// No api_v3: Auto falls back to api_v2 on Unimplemented.
	addr := fakeGRPC(t, nil, func(s *grpc.Server) { api_v2.RegisterQueryServiceServer(s, fv) })
	skips := &source.Skips{}
	c, err := New("grpc://"+addr, WithSkips(skips))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if p, err := c.Protocol(context.Background()); p != GRPCv2 || err != nil {
		t.Fatalf("Protocol = %v, %v; want v2", p, err)
	}
	start := time.Unix(1_699_999_000, 5).UTC()
	spans, err := collectSpans(context.Background(), c.Source(Query{
		Service: "svc", Operation: "chat m", Start: start, End: start.Add(time.Hour),
		MinDuration: time.Millisecond, MaxDuration: time.Minute, Attributes: map[string]string{"model": "m"}, Limit: 7,
	}))
	if err != nil {
		t.Fatal(err)
	}
	q := got.GetQuery()
	if q.ServiceName != "svc" || q.OperationName != "chat m" || !q.StartTimeMin.Equal(start) || !q.StartTimeMax.Equal(start.Add(time.Hour)) ||
		q.DurationMin != time.Millisecond || q.DurationMax != time.Minute || q.SearchDepth != 7 || !q.RawTraces || q.Tags["gen_ai.request.model"] != "m" {
		t.Errorf("query sent: %+v", q)
	}
	if len(spans) != 2 || skips.Count(ReasonMalformedReply) != 1 {
		t.Fatalf("%d spans, skips %+v", len(spans), skips.List())
	}
	s := spans[0]
	if s.TraceID != "00000000000000000000000000000001" || s.SpanID != "0000000000000001" || s.ParentSpanID != "0000000000000063" ||
		s.Service != "svc" || s.Kind != "server" || !s.StatusError || s.StatusMessage != "boom" ||
		s.Start.UnixNano() != 1_700_000_000_123_456_789 || s.End.Sub(s.Start) != 500*time.Millisecond {
		t.Errorf("span %+v", s)
	}
	if _, ok := s.Attrs["otel.scope.name"]; ok || s.Attrs["n"] != int64(-5) || s.Attrs["f"] != 0.25 || s.Attrs["b"] != "AQI=" || s.Attrs["arr"] != `["a","b"]` || len(s.Attrs) != 4 {
		t.Errorf("attributes %v", s.Attrs)
	}
	if len(s.Events) != 1 || s.Events[0].Name != "tokentrace.token" || s.Events[0].Time.UnixNano() != 1_700_000_000_123_456_790 || s.Events[0].Attrs["tokentrace.token.index"] != int64(0) {
		t.Errorf("events %+v", s.Events)
	}
	// GetTrace: found, and NotFound as a NotFoundError.
	_, err = collectSpans(context.Background(), c.Source(Query{TraceIDs: []string{"1", "2"}}))
	var nf *NotFoundError
	if !errors.As(err, &nf) || strings.Join(nf.TraceIDs, ",") != "00000000000000000000000000000002" {
		t.Errorf("GetTrace: %v", err)
	}
}

func TestGRPCBearerTokenSentAndNeverInErrors(t *testing.T) {
	var auth atomic.Value
	addr := fakeGRPC(t, func(_ any, st grpc.ServerStream) error {
		md, _ := metadata.FromIncomingContext(st.Context())
		auth.Store(strings.Join(md.Get("authorization"), ","))
		var req rawMessage
		_ = st.RecvMsg(&req)
		m, _ := grpc.MethodFromServerStream(st)
		if strings.HasSuffix(m, "GetServices") {
			return st.SendMsg(&rawMessage{})
		}
		// A server that echoes the credentials it refuses.
		return status.Error(codes.PermissionDenied, "bad token "+strings.Join(md.Get("authorization"), ","))
	}, nil)
	c, err := New(addr, WithBearerToken(secret), WithInsecure())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.Source(Query{Service: "svc"}).Spans(context.Background(), func(*model.Span) error { return nil })
	if got := auth.Load(); got != "Bearer "+secret {
		t.Errorf("authorization sent %q", got)
	}
	if err == nil || strings.Contains(err.Error(), secret) || !strings.Contains(err.Error(), "[REDACTED]") {
		t.Errorf("error %v", err)
	}
	if status.Code(err) != codes.PermissionDenied {
		t.Errorf("status %v", status.Code(err))
	}
}

func TestHTTPBearerTokenSentAndNeverInErrors(t *testing.T) {
	var mu sync.Mutex
	var auths []string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		auths = append(auths, r.Header.Get("Authorization"))
		mu.Unlock()
		if r.URL.Path == "/jaeger/api/v3/services" {
			fmt.Fprint(w, `{"services":["svc"]}`)
			return
		}
		http.Error(w, "token "+r.Header.Get("Authorization")+" refused", http.StatusUnauthorized)
	}))
	defer srv.Close()
	c, err := New(srv.URL+"/jaeger/", WithBearerToken(secret))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.Source(Query{Service: "svc"}).Spans(context.Background(), func(*model.Span) error { return nil })
	mu.Lock()
	defer mu.Unlock()
	if len(auths) != 2 || auths[0] != "Bearer "+secret || auths[1] != "Bearer "+secret {
		t.Errorf("Authorization headers %q", auths)
	}
	var he *httpStatusError
	if err == nil || strings.Contains(err.Error(), secret) || !errors.As(err, &he) || he.Code != 401 {
		t.Errorf("error %v", err)
	}
	if !strings.Contains(err.Error(), "jaeger query at "+srv.URL+"/jaeger") {
		t.Errorf("error %q does not name the endpoint", err)
	}
}

func TestHTTPLegacyFallbackAndMalformedAnswers(t *testing.T) {
	var paths []string
	var mu sync.Mutex
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		paths = append(paths, r.URL.Path+"?"+r.URL.RawQuery)
		mu.Unlock()
		switch r.URL.Path {
		case "/api/services":
			fmt.Fprint(w, `{"data":["svc"],"total":1}`)
		case "/api/traces":
			// One good trace, then a cut.
			fmt.Fprint(w, `{"data":[{"traceID":"01","spans":[{"traceID":"01","spanID":"02","operationName":"op","startTime":1700000000000001,"duration":5,"tags":[],"logs":[],"processID":"p1"}],"processes":{"p1":{"serviceName":"svc"}}},{"traceID":"02","spans":[{"tra`)
		default:
			http.NotFound(w, r) // an older Jaeger: no /api/v3
		}
	}))
	defer srv.Close()
	skips := &source.Skips{}
	c, err := New(srv.URL, WithSkips(skips))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	spans, err := collectSpans(context.Background(), c.Source(Query{Service: "svc", Attributes: map[string]string{"instance": "e1"}}))
	if err != nil {
		t.Fatal(err)
	}
	if p, _ := c.Protocol(context.Background()); p != HTTPLegacy {
		t.Errorf("protocol %v", p)
	}
	if len(spans) != 1 || spans[0].Start.UnixMicro() != 1700000000000001 || skips.Total() != 1 {
		t.Errorf("%d spans, skips %+v", len(spans), skips.List())
	}
	stop := errors.New("stop")
	if err := c.Source(Query{Service: "svc"}).Spans(context.Background(), func(*model.Span) error { return stop }); err != stop {
		t.Errorf("visitor error came back as %v", err)
	}
	last := paths[len(paths)-2]
	for _, want := range []string{"service=svc", "limit=1000", "raw=true", "tags=%7B%22tokentrace.instance%22%3A%22e1%22%7D", "start=", "end="} {
		if !strings.Contains(last, want) {
			t.Errorf("request %s lacks %s", last, want)
		}
	}
}

func TestHTTPv3FiltersAttributesAndRetries5xx(t *testing.T) {
	var calls atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v3/services":
			fmt.Fprint(w, `{"services":["svc"]}`)
		case "/api/v3/traces":
			if calls.Add(1) <= 2 {
				http.Error(w, `{"error":{"httpCode":503}}`, http.StatusServiceUnavailable)
				return
			}
			if r.URL.Query().Get("query.num_traces") != "1000" || r.URL.Query().Get("query.start_time_min") == "" {
				http.Error(w, "bad query "+r.URL.RawQuery, 400)
				return
			}
			span := func(tid, sid, model string) string {
				return fmt.Sprintf(`{"traceId":%q,"spanId":%q,"name":"op","startTimeUnixNano":"1700000000000000001","endTimeUnixNano":"1700000000000000009","attributes":[{"key":"gen_ai.request.model","value":{"stringValue":%q}}]}`, tid, sid, model)
			}
			// Trace 1 matches through its second span; trace 2 does not.
			fmt.Fprintf(w, `{"result":{"resourceSpans":[{"resource":{"attributes":[{"key":"service.name","value":{"stringValue":"svc"}}]},"scopeSpans":[{"spans":[%s,%s,%s]}]}]}}`,
				span("00000000000000000000000000000001", "0000000000000001", "x"),
				span("00000000000000000000000000000001", "0000000000000002", "m"),
				span("00000000000000000000000000000002", "0000000000000003", "x"))
		default:
			http.NotFound(w, r)
		}
	}))
	defer srv.Close()
	c, err := New(srv.URL, withBackoff(time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	spans, err := collectSpans(context.Background(), c.Source(Query{Service: "svc", Attributes: map[string]string{"model": "m"}}))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	for _, s := range spans {
		ids = append(ids, s.SpanID)
	}
	sort.Strings(ids)
	if strings.Join(ids, ",") != "0000000000000001,0000000000000002" || calls.Load() != 3 {
		t.Errorf("spans %v after %d calls", ids, calls.Load())
	}
	// A 4xx is not retried.
	calls.Store(100)
	c2, _ := New(srv.URL, withBackoff(time.Millisecond), WithProtocol(HTTPv3))
	defer c2.Close()
	_, err = collectSpans(context.Background(), c2.Source(Query{Service: "svc", Limit: 5}))
	if err == nil || !strings.Contains(err.Error(), "HTTP 400") || calls.Load() != 101 {
		t.Errorf("err %v after %d calls", err, calls.Load()-100)
	}
}

func withBackoff(d time.Duration) Option { return func(c *config) { c.retryBackoff = d } }

// fakeBackend behaves like Jaeger's memory store: the newest traces whose
// span starts in the window, up to the search depth.
type fakeBackend struct {
	mu     sync.Mutex
	starts []time.Time // trace i starts at starts[i]
	calls  int
	always bool // answer depth traces whatever the window
}

func (*fakeBackend) protocol() Protocol                         { return GRPCv3 }
func (*fakeBackend) probe(context.Context) error                { return nil }
func (*fakeBackend) services(context.Context) ([]string, error) { return nil, nil }
func (*fakeBackend) get(context.Context, string, time.Time, time.Time, sink) (bool, error) {
	return false, nil
}

func (f *fakeBackend) find(_ context.Context, s search, k sink) (int, error) {
	f.mu.Lock()
	f.calls++
	f.mu.Unlock()
	n := 0
	for i := len(f.starts) - 1; i >= 0 && n < s.depth; i-- {
		if !f.always && (f.starts[i].Before(s.start) || f.starts[i].After(s.end)) {
			continue
		}
		n++
		var id [16]byte
		id[15] = byte(i + 1)
		sp := &model.Span{TraceID: hex.EncodeToString(id[:]), SpanID: "00000000000000" + hex.EncodeToString([]byte{byte(i + 1)}), Start: f.starts[i], End: f.starts[i]}
		if err := k.emit(sp); err != nil {
			return n, err
		}
	}
	return n, nil
}

func fakeClient(t *testing.T, fb *fakeBackend, opts ...Option) *Client {
	c, err := New("127.0.0.1:1", append(opts, WithProtocol(GRPCv3))...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	c.be = fb
	return c
}

func TestPagingFindsEveryTraceOnce(t *testing.T) {
	base := time.Unix(1_700_000_000, 0)
	fb := &fakeBackend{}
	for i := range 200 {
		// Uneven: a burst of 100 traces within 1 ms, the rest spread out.
		if i < 100 {
			fb.starts = append(fb.starts, base.Add(time.Duration(i)*10*time.Microsecond))
		} else {
			fb.starts = append(fb.starts, base.Add(time.Duration(i)*time.Second))
		}
	}
	skips := &source.Skips{}
	c := fakeClient(t, fb, WithSkips(skips), WithParallel(3))
	seen := map[string]int{}
	err := c.Source(Query{Service: "s", Start: base, End: base.Add(300 * time.Second), Limit: 7}).Spans(context.Background(), func(s *model.Span) error {
		seen[s.TraceID]++
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(seen) != 200 || skips.Total() != 0 {
		t.Errorf("%d traces, skips %+v", len(seen), skips.List())
	}
	for id, n := range seen {
		if n != 1 {
			t.Errorf("trace %s seen %d times", id, n)
		}
	}
	t.Logf("%d FindTraces calls for 200 traces at depth 7", fb.calls)
	if fb.calls < 200/7 || fb.calls > 400 {
		t.Errorf("%d calls", fb.calls)
	}
}

func TestPagingIsBounded(t *testing.T) {
	base := time.Unix(1_700_000_000, 0)
	fb := &fakeBackend{always: true, starts: []time.Time{base, base, base}}
	skips := &source.Skips{}
	c := fakeClient(t, fb, WithSkips(skips))
	err := c.Source(Query{Service: "s", Start: base, End: base.Add(time.Millisecond), Limit: 3}).Spans(context.Background(), func(*model.Span) error { return nil })
	if err != nil {
		t.Fatal(err)
	}
	// A 1 ms window halves down to 1 µs windows: ~2^10 leaves, each
	// counted as still full.
	if skips.Count(ReasonWindowFull) == 0 || fb.calls > 1<<12 {
		t.Errorf("%d calls, skips %+v", fb.calls, skips.List())
	}
}

func TestCancelledContextIsAnError(t *testing.T) {
	base := time.Unix(1_700_000_000, 0)
	fb := &fakeBackend{starts: []time.Time{base}}
	c := fakeClient(t, fb)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := c.Source(Query{Service: "s", Start: base, End: base.Add(time.Minute)}).Spans(ctx, func(*model.Span) error { return nil })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("error %v, want context.Canceled", err)
	}
}

func TestVisitorErrorIsReturnedAsIs(t *testing.T) {
	base := time.Unix(1_700_000_000, 0)
	fb := &fakeBackend{starts: []time.Time{base, base.Add(time.Second)}}
	c := fakeClient(t, fb)
	stop := errors.New("enough")
	err := c.Source(Query{Service: "s", Start: base, End: base.Add(time.Minute)}).Spans(context.Background(), func(*model.Span) error { return stop })
	if err != stop {
		t.Errorf("error %v, want the visitor's", err)
	}
}

func TestEncodeFindTracesFieldNumbers(t *testing.T) {
	// api_v2's TraceQueryParameters has the same field numbers 1-9 as
	// api_v3's: decode what was encoded for api_v3 with it.
	s := search{service: "svc", operation: "op", attrs: map[string]string{"a": "1", "b": "2"},
		start: time.Unix(1_700_000_000, 5), end: time.Unix(1_700_003_600, 999_999_999),
		minDur: 1500 * time.Microsecond, maxDur: 2 * time.Second, depth: 42}
	var req api_v2.FindTracesRequest
	if err := gogoproto.Unmarshal(encodeFindTraces(s), &req); err != nil {
		t.Fatal(err)
	}
	q := req.Query
	if q.ServiceName != "svc" || q.OperationName != "op" || len(q.Tags) != 2 || q.Tags["b"] != "2" ||
		!q.StartTimeMin.Equal(s.start) || !q.StartTimeMax.Equal(s.end) || q.DurationMin != s.minDur || q.DurationMax != s.maxDur ||
		q.SearchDepth != 42 || !q.RawTraces {
		t.Errorf("decoded %+v", q)
	}
	var get api_v2.GetTraceRequest
	// GetTraceRequest.trace_id is a string in api_v3 and bytes in api_v2:
	// same wire type, so the rest decodes.
	b := encodeGetTrace("0123456789abcdef0123456789abcdef", s.start, s.end)
	if err := gogoproto.Unmarshal(b[2+32:], &get); err != nil {
		t.Fatal(err)
	}
	if !get.StartTime.Equal(s.start) || !get.EndTime.Equal(s.end) || !get.RawTraces {
		t.Errorf("GetTrace decoded %+v", get)
	}
}

func TestQueryChecks(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	for _, tc := range []struct {
		q    Query
		want string
	}{
		{Query{}, "Service is required"},
		{Query{Service: "s", Start: now, End: now}, "empty time window"},
		{Query{Service: "s", Limit: -1}, "negative Limit"},
		{Query{Service: "s", MinDuration: 2, MaxDuration: 1}, "duration bounds"},
		{Query{TraceIDs: []string{"xyz"}}, `trace id "xyz"`},
		{Query{TraceIDs: []string{"0000"}}, `trace id "0000"`},
	} {
		if _, err := tc.q.plan(now); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%+v: error %v, want %q", tc.q, err, tc.want)
		}
	}
	p, err := Query{Service: "s", Limit: 1 << 30, Attributes: map[string]string{"Model": "m", "prompt-type": "qa", "instance": "i", "x.y": "z"}}.plan(now)
	if err != nil {
		t.Fatal(err)
	}
	if p.s.depth != MaxLimit || !p.s.end.Equal(now) || !p.s.start.Equal(now.Add(-DefaultLookback)) ||
		p.s.attrs["gen_ai.request.model"] != "m" || p.s.attrs["tokentrace.prompt_type"] != "qa" || p.s.attrs["tokentrace.instance"] != "i" || p.s.attrs["x.y"] != "z" {
		t.Errorf("plan %+v", p.s)
	}
	if p, _ := (Query{Service: "s"}).plan(now); p.s.depth != DefaultLimit {
		t.Errorf("default depth %d", p.s.depth)
	}
	if p, _ := (Query{TraceIDs: []string{"ABC", "abc", "00000000000000000000000000000abc"}}).plan(now); len(p.ids) != 1 || p.ids[0] != "00000000000000000000000000000abc" {
		t.Errorf("ids %v", p.ids)
	}
}

func TestEndpoints(t *testing.T) {
	for _, tc := range []struct {
		endpoint string
		opts     []Option
		want     string // Endpoint(), or "error: ..." prefix
		proto    Protocol
	}{
		{"127.0.0.1:16685", nil, "grpc://127.0.0.1:16685", autoGRPC},
		{"jaeger", nil, "grpc://jaeger:16685", autoGRPC},
		{"grpc://jaeger", nil, "grpc://jaeger:16685", autoGRPC},
		{"grpcs://jaeger:443", nil, "grpcs://jaeger:443", autoGRPC},
		{"[::1]:16685", nil, "grpc://[::1]:16685", autoGRPC},
		{"http://jaeger:16686", nil, "http://jaeger:16686", autoHTTP},
		{"https://user:pw@jaeger/base/", nil, "https://user:xxxxx@jaeger/base", autoHTTP},
		{"jaeger:16686", []Option{WithProtocol(HTTPLegacy)}, "http://jaeger:16686", HTTPLegacy},
		{"http://jaeger:16685", []Option{WithProtocol(GRPCv2), WithTLS(nil)}, "grpcs://jaeger:16685", GRPCv2},
		{"grpcs://jaeger:1", []Option{WithInsecure()}, "grpc://jaeger:1", autoGRPC},
		{"", nil, "error: jaegerquery: empty endpoint", ""},
		{"ftp://x", nil, "error: jaegerquery: endpoint \"ftp://x\": unknown scheme", ""},
		{"grpc://x:1/path", nil, "error: jaegerquery: endpoint \"grpc://x:1/path\": a gRPC endpoint has no path", ""},
		{"x:1", []Option{WithProtocol("v9")}, "error: jaegerquery: unknown protocol", ""},
	} {
		c, err := New(tc.endpoint, tc.opts...)
		if strings.HasPrefix(tc.want, "error: ") {
			if err == nil || !strings.HasPrefix(err.Error(), strings.TrimPrefix(tc.want, "error: ")) {
				t.Errorf("%q: error %v, want %s", tc.endpoint, err, tc.want)
			}
			continue
		}
		if err != nil {
			t.Errorf("%q: %v", tc.endpoint, err)
			continue
		}
		if c.Endpoint() != tc.want || c.proto != tc.proto {
			t.Errorf("%q: %s %s, want %s %s", tc.endpoint, c.Endpoint(), c.proto, tc.want, tc.proto)
		}
		_ = c.Close()
	}
	for in, want := range map[string]Protocol{"": Auto, "auto": Auto, "v2": GRPCv2, "api_v3": GRPCv3, "http-v3": HTTPv3, "legacy": HTTPLegacy} {
		if p, err := ParseProtocol(in); p != want || err != nil {
			t.Errorf("ParseProtocol(%q) = %v, %v", in, p, err)
		}
	}
	if _, err := ParseProtocol("v4"); err == nil {
		t.Error("ParseProtocol(v4) accepted")
	}
}

// The codec marshals each kind of message with the right library.
func TestCodec(t *testing.T) {
	var c codec
	if c.Name() != "proto" {
		t.Fatal(c.Name())
	}
	gogo := &api_v2.GetTraceRequest{TraceID: jmodel.NewTraceID(1, 2)}
	b, err := c.Marshal(gogo)
	if err != nil {
		t.Fatal(err)
	}
	var back api_v2.GetTraceRequest
	if err := c.Unmarshal(b, &back); err != nil || back.TraceID != gogo.TraceID {
		t.Fatalf("gogo round trip: %v %+v", err, back)
	}
	td := tracesData(1, 1, "s")
	b, err = c.Marshal(td)
	if err != nil {
		t.Fatal(err)
	}
	var td2 tracepb.TracesData
	if err := c.Unmarshal(b, &td2); err != nil || !proto.Equal(td, &td2) {
		t.Fatalf("proto round trip: %v", err)
	}
	if _, err := c.Marshal(42); err == nil {
		t.Error("marshalled an int")
	}
}

// Services lists what Jaeger knows; a progress writer that is not a
// terminal stays empty.
func TestServicesAndQuietProgress(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/api/v3/services":
			fmt.Fprint(w, `{"services":["b","a"]}`)
		default:
			http.Error(w, `{"error":{"httpCode":404,"message":"No traces found"}}`, http.StatusNotFound)
		}
	}))
	defer srv.Close()
	var out strings.Builder
	c, err := New(srv.URL, WithProgress(&out))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	names, err := c.Services(context.Background())
	if err != nil || strings.Join(names, ",") != "a,b" {
		t.Errorf("services %v, %v", names, err)
	}
	spans, err := collectSpans(context.Background(), c.Source(Query{Service: "a"}))
	if err != nil || len(spans) != 0 || out.Len() != 0 {
		t.Errorf("%d spans, %v, progress %q", len(spans), err, out.String())
	}
}

// A trace larger than the gRPC message limit: an error that says which
// option raises it.
func TestMessageOverTheLimit(t *testing.T) {
	big := tracesData(1, 1, "svc")
	big.ResourceSpans[0].ScopeSpans[0].Spans[0].Name = strings.Repeat("x", 4096)
	addr := fakeGRPC(t, func(_ any, st grpc.ServerStream) error {
		var req rawMessage
		_ = st.RecvMsg(&req)
		return st.SendMsg(&rawMessage{b: marshal(t, big)})
	}, nil)
	c, err := New(addr, WithProtocol(GRPCv3), WithMaxRecvMsgSize(1024))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = collectSpans(context.Background(), c.Source(Query{Service: "svc"}))
	if err == nil || !strings.Contains(err.Error(), "WithMaxRecvMsgSize") {
		t.Errorf("error %v", err)
	}
	// And FromV2Span, the exported conversion.
	sp := v2Span(3, 4)
	if s := FromV2Span(&sp); s.TraceID != "00000000000000000000000000000003" || s.SpanID != "0000000000000004" || len(s.Events) != 1 {
		t.Errorf("FromV2Span: %+v", s)
	}
}
