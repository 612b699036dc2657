package instrument_test

import (
	"bufio"
	"context"
	"io"
	"log"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/propagation"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/tokentrace/tokentrace/instrument"
	"github.com/tokentrace/tokentrace/semconv"
)

// Helpers of the gateway tests (proxy, openai, badinput). Their names start
// with "px" so that they do not collide with helpers of other test files.

// pxSpans waits until rec holds at least n ended spans, with the
// middleware's finisher idle, and returns them. Unlike endedSpans it
// tolerates a server-side request that is still finishing when the client
// is done (a disconnect, an aborted connection).
func pxSpans(t testing.TB, rec *tracetest.SpanRecorder, n int) []sdktrace.ReadOnlySpan {
	t.Helper()
	return pxSpansWithin(t, rec, n, 10*time.Second)
}

func pxSpansWithin(t testing.TB, rec *tracetest.SpanRecorder, n int, wait time.Duration) []sdktrace.ReadOnlySpan {
	t.Helper()
	deadline := time.Now().Add(wait)
	for {
		spans := endedSpans(t, rec)
		if len(spans) >= n {
			return spans
		}
		if time.Now().After(deadline) {
			t.Fatalf("got %d ended spans after %v, want %d", len(spans), wait, n)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// pxEvents returns the events of s named name.
func pxEvents(s sdktrace.ReadOnlySpan, name string) []sdktrace.Event {
	var out []sdktrace.Event
	for _, e := range s.Events() {
		if e.Name == name {
			out = append(out, e)
		}
	}
	return out
}

// pxAttr returns attribute key of s as a Go value (nil when absent).
func pxAttr(s sdktrace.ReadOnlySpan, key attribute.Key) any {
	v, ok := attrOf(s, key)
	if !ok {
		return nil
	}
	return v.AsInterface()
}

// pxWant checks attributes of s: a nil want means the attribute must be
// absent.
func pxWant(t testing.TB, s sdktrace.ReadOnlySpan, want map[attribute.Key]any) {
	t.Helper()
	for k, v := range want {
		if got := pxAttr(s, k); got != v {
			t.Errorf("%s = %v (%T), want %v (%T)", k, got, got, v, v)
		}
	}
}

// pxProxy is the gateway's reverse proxy to target through rt.
func pxProxy(target string, rt http.RoundTripper) *httputil.ReverseProxy {
	u, err := url.Parse(target)
	if err != nil {
		panic(err)
	}
	return &httputil.ReverseProxy{
		Rewrite:   func(pr *httputil.ProxyRequest) { pr.SetURL(u) },
		Transport: rt,
		// Disconnect tests make the proxy log copy errors; keep the test
		// output readable.
		ErrorLog: log.New(io.Discard, "", 0),
	}
}

// pxGateway starts an engine server serving eng and a gateway server:
// Handler(ReverseProxy{Transport: Transport(DefaultTransport)}), both with
// tp and tr. Both servers are closed at the end of the test.
func pxGateway(t testing.TB, eng http.Handler, tp trace.TracerProvider, tr *instrument.Tracker) (gw, engSrv *httptest.Server) {
	t.Helper()
	engSrv = httptest.NewServer(eng)
	t.Cleanup(engSrv.Close)
	proxy := pxProxy(engSrv.URL, instrument.Transport(http.DefaultTransport,
		instrument.WithTracerProvider(tp), instrument.WithTracker(tr)))
	gw = httptest.NewServer(instrument.Handler(proxy,
		instrument.WithTracerProvider(tp), instrument.WithTracker(tr)))
	t.Cleanup(gw.Close)
	return gw, engSrv
}

// pxRead does req with c and returns the whole body.
func pxRead(t testing.TB, c *http.Client, req *http.Request) (*http.Response, []byte) {
	t.Helper()
	resp, err := c.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("reading body: %v", err)
	}
	return resp, b
}

// pxTokenLine reports whether an SSE line is one of the engine helper's
// token chunks (its role chunk has an empty content).
func pxTokenLine(line string) bool { return strings.Contains(line, `"content":"t`) }

// pxHostPort splits an httptest server's address.
func pxHostPort(t testing.TB, srv *httptest.Server) (string, string, int) {
	t.Helper()
	addr := srv.Listener.Addr().String()
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		t.Fatal(err)
	}
	p, _ := strconv.Atoi(port)
	return addr, host, p
}

func TestReverseProxyGatewayOneServerSpanPerStream(t *testing.T) {
	// Default propagators: the engine must get a W3C traceparent without
	// the application configuring any.
	tp, rec := newProvider(t, 10000)
	tr := instrument.NewTracker()
	const tokens = 25
	eng := &engine{Tokens: tokens, Usage: true, Gap: func(int) time.Duration { return time.Millisecond }}
	var mu sync.Mutex
	var traceparents []string
	gw, engSrv := pxGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		traceparents = append(traceparents, r.Header.Get("Traceparent"))
		mu.Unlock()
		eng.ServeHTTP(w, r)
	}), tp, tr)

	// The same engine answering directly, with no middleware anywhere.
	direct := httptest.NewServer(&engine{Tokens: tokens, Usage: true})
	defer direct.Close()
	_, want := pxRead(t, direct.Client(), newChatRequest(direct.URL, chatBody("test-model", true, true)))

	resp, got := pxRead(t, gw.Client(), newChatRequest(gw.URL, chatBody("test-model", true, true)))
	if resp.StatusCode != http.StatusOK || !strings.HasPrefix(resp.Header.Get("Content-Type"), "text/event-stream") {
		t.Fatalf("gateway answered %s, %q", resp.Status, resp.Header.Get("Content-Type"))
	}
	if string(got) != string(want) {
		t.Fatalf("body through the gateway differs from the engine's:\n got %q\nwant %q", got, want)
	}

	spans := pxSpans(t, rec, 1)
	if len(spans) != 1 {
		t.Fatalf("got %d spans, want exactly 1 (the Transport adds none under a Handler)", len(spans))
	}
	s := spans[0]
	if s.SpanKind() != trace.SpanKindServer || s.Name() != "chat test-model" {
		t.Errorf("span %q kind %v, want \"chat test-model\" server", s.Name(), s.SpanKind())
	}
	evs := pxEvents(s, semconv.TokenEvent)
	if len(evs) != tokens {
		t.Fatalf("got %d token events, want %d", len(evs), tokens)
	}
	for i, e := range evs {
		if idx, _ := eventAttr(e, semconv.TokenIndex); idx.AsInt64() != int64(i) {
			t.Errorf("token event %d has index %d", i, idx.AsInt64())
		}
		// The gateway writes a token after the engine began writing it.
		if e.Time.Before(eng.pre[i]) {
			t.Errorf("token %d stamped %v, before the engine wrote it at %v", i, e.Time, eng.pre[i])
		}
		if i > 0 && e.Time.Before(evs[i-1].Time) {
			t.Errorf("token %d stamped before token %d", i, i-1)
		}
	}
	addr, host, port := pxHostPort(t, engSrv)
	pxWant(t, s, map[attribute.Key]any{
		semconv.Instance:               addr,
		semconv.InstanceOrdinal:        int64(1),
		semconv.ServerAddress:          host,
		semconv.ServerPort:             int64(port),
		semconv.StreamOutcome:          semconv.OutcomeComplete,
		semconv.GenAIUsageOutputTokens: int64(tokens),
		semconv.Tokens:                 int64(tokens),
		semconv.Chunks:                 int64(tokens),
		semconv.HTTPResponseStatus:     int64(200),
		semconv.ErrorType:              nil,
	})
	if s.Status().Code != codes.Unset {
		t.Errorf("status %v on a complete stream", s.Status())
	}

	// The engine saw the W3C trace context of the gateway's span.
	mu.Lock()
	defer mu.Unlock()
	if len(traceparents) != 1 || traceparents[0] == "" {
		t.Fatalf("engine saw traceparent headers %q, want one", traceparents)
	}
	h := http.Header{}
	h.Set("Traceparent", traceparents[0])
	sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), propagation.HeaderCarrier(h)))
	if sc.TraceID() != s.SpanContext().TraceID() {
		t.Errorf("engine got trace id %s, span has %s", sc.TraceID(), s.SpanContext().TraceID())
	}
	if sc.SpanID() != s.SpanContext().SpanID() {
		t.Errorf("engine's parent span id %s, want the gateway span %s", sc.SpanID(), s.SpanContext().SpanID())
	}
	if n := tr.InFlight(""); n != 0 {
		t.Errorf("tracker still has %d requests in flight", n)
	}
}

func TestTransportAloneMakesClientSpanTimedAtRead(t *testing.T) {
	tp, rec := newProvider(t, 10000)
	const tokens = 20
	eng := &engine{Tokens: tokens, Gap: func(i int) time.Duration {
		if i == 10 {
			return 40 * time.Millisecond
		}
		return 2 * time.Millisecond
	}}
	var mu sync.Mutex
	var tpHeader string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		tpHeader = r.Header.Get("Traceparent")
		mu.Unlock()
		eng.ServeHTTP(w, r)
	}))
	defer srv.Close()
	client := &http.Client{Transport: instrument.Transport(srv.Client().Transport, instrument.WithTracerProvider(tp))}

	resp, err := client.Do(newChatRequest(srv.URL, chatBody("test-model", true, false)))
	if err != nil {
		t.Fatal(err)
	}
	// saw[i] is when the Read that completed token i's line returned.
	var saw []time.Time
	var got []byte
	buf := make([]byte, 32<<10)
	for {
		n, err := resp.Body.Read(buf)
		now := time.Now()
		got = append(got, buf[:n]...)
		lines := strings.Split(string(got), "\n")
		complete := 0
		for _, l := range lines[:len(lines)-1] {
			if pxTokenLine(l) {
				complete++
			}
		}
		for len(saw) < complete {
			saw = append(saw, now)
		}
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	eof := time.Now()

	// Ended at EOF: the span is there before the caller closes the body.
	spans := pxSpansWithin(t, rec, 1, 5*time.Second)
	time.Sleep(30 * time.Millisecond)
	resp.Body.Close()
	spans = endedSpans(t, rec)
	if len(spans) != 1 {
		t.Fatalf("got %d spans, want 1", len(spans))
	}
	s := spans[0]
	if s.SpanKind() != trace.SpanKindClient || s.Name() != "chat test-model" {
		t.Errorf("span %q kind %v, want \"chat test-model\" client", s.Name(), s.SpanKind())
	}
	if s.EndTime().After(eof) {
		t.Errorf("span ended at %v, after EOF was read at %v (ended at Close?)", s.EndTime(), eof)
	}
	evs := pxEvents(s, semconv.TokenEvent)
	if len(evs) != tokens || len(saw) != tokens {
		t.Fatalf("got %d token events and %d token lines, want %d", len(evs), len(saw), tokens)
	}
	for i, e := range evs {
		if e.Time.Before(eng.pre[i]) || e.Time.After(saw[i]) {
			t.Errorf("token %d stamped %v; engine wrote it at %v, the read that delivered it returned at %v", i, e.Time, eng.pre[i], saw[i])
		}
	}
	if gap := evs[10].Time.Sub(evs[9].Time); gap < 35*time.Millisecond {
		t.Errorf("gap 9→10 = %v, want ≥ 35ms (events stamped at read time)", gap)
	}
	if !s.EndTime().After(evs[tokens-1].Time) && !s.EndTime().Equal(evs[tokens-1].Time) {
		t.Errorf("span ended at %v, before its last token %v", s.EndTime(), evs[tokens-1].Time)
	}
	addr, host, port := pxHostPort(t, srv)
	pxWant(t, s, map[attribute.Key]any{
		semconv.Instance:        addr,
		semconv.ServerAddress:   host,
		semconv.ServerPort:      int64(port),
		semconv.StreamOutcome:   semconv.OutcomeComplete,
		semconv.Tokens:          int64(tokens),
		semconv.TokensEstimated: true,
		semconv.ErrorType:       nil,
	})
	if s.Status().Code != codes.Unset {
		t.Errorf("status %v on a complete stream", s.Status())
	}
	if ex := pxEvents(s, "exception"); len(ex) != 0 {
		t.Errorf("complete stream has exception events: %v", ex)
	}
	mu.Lock()
	defer mu.Unlock()
	h := http.Header{}
	h.Set("Traceparent", tpHeader)
	sc := trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), propagation.HeaderCarrier(h)))
	if sc.TraceID() != s.SpanContext().TraceID() || sc.SpanID() != s.SpanContext().SpanID() {
		t.Errorf("engine got traceparent %q, want the client span %s/%s", tpHeader, s.SpanContext().TraceID(), s.SpanContext().SpanID())
	}
}

func TestTransportAloneEarlyCloseEndsSpan(t *testing.T) {
	tp, rec := newProvider(t, 10000)
	eng := &engine{Tokens: 200, Gap: func(int) time.Duration { return 2 * time.Millisecond }}
	srv := httptest.NewServer(eng)
	defer srv.Close()
	client := &http.Client{Transport: instrument.Transport(srv.Client().Transport, instrument.WithTracerProvider(tp))}

	resp, err := client.Do(newChatRequest(srv.URL, chatBody("test-model", true, false)))
	if err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(resp.Body)
	seen := 0
	for seen < 5 {
		line, err := br.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if pxTokenLine(line) {
			seen++
		}
	}
	if err := resp.Body.Close(); err != nil {
		t.Fatal(err)
	}
	closed := time.Now()

	s := pxSpansWithin(t, rec, 1, 5*time.Second)[0]
	if s.EndTime().After(closed) {
		t.Errorf("span ended at %v, after Close returned at %v", s.EndTime(), closed)
	}
	out := pxAttr(s, semconv.StreamOutcome)
	if out != semconv.OutcomeClientDisconnect {
		t.Errorf("outcome %v, want %s", out, semconv.OutcomeClientDisconnect)
	}
	if s.Status().Code != codes.Error {
		t.Errorf("status %v, want Error", s.Status())
	}
	n, _ := attrOf(s, semconv.Tokens)
	if n.AsInt64() < 5 || n.AsInt64() >= 200 {
		t.Errorf("tokens = %d, want the ≥ 5 read before Close and not all 200", n.AsInt64())
	}
	if ev := len(pxEvents(s, semconv.TokenEvent)); int64(ev) != n.AsInt64() {
		t.Errorf("%d token events for %d tokens", ev, n.AsInt64())
	}
}

func TestIntruderPrefillLandsOnTheGeneratingStream(t *testing.T) {
	tp, rec := newProvider(t, 10000)
	tr := instrument.NewTracker()
	intruderDone := make(chan struct{})
	release := sync.OnceFunc(func() { close(intruderDone) })
	defer release() // on failure too: the first stream must not hang
	first := &engine{Tokens: 20, Gap: func(i int) time.Duration {
		if i == 5 {
			// Keep generating (in flight) until the intruder was served.
			select {
			case <-intruderDone:
			case <-time.After(10 * time.Second):
			}
		}
		return time.Millisecond
	}}
	const intruderTTFT = 80 * time.Millisecond
	intruder := &engine{Tokens: 5, Gap: func(i int) time.Duration {
		if i == 0 {
			return intruderTTFT // its prefill
		}
		return time.Millisecond
	}}
	gw, engSrv := pxGateway(t, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Header.Get("X-Test-Role") == "intruder" {
			intruder.ServeHTTP(w, r)
			return
		}
		first.ServeHTTP(w, r)
	}), tp, tr)

	respA, err := gw.Client().Do(newChatRequest(gw.URL, chatBody("test-model", true, false)))
	if err != nil {
		t.Fatal(err)
	}
	defer respA.Body.Close()
	brA := bufio.NewReader(respA.Body)
	for seen := 0; seen < 3; {
		line, err := brA.ReadString('\n')
		if err != nil {
			t.Fatal(err)
		}
		if pxTokenLine(line) {
			seen++
		}
	}
	// A is generating: the intruder arrives on the same instance.
	reqB := newChatRequest(gw.URL, chatBody("test-model", true, false))
	reqB.Header.Set("X-Test-Role", "intruder")
	_, bodyB := pxRead(t, gw.Client(), reqB)
	release()
	restA, err := io.ReadAll(brA)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasSuffix(string(restA), "data: [DONE]\n\n") || !strings.HasSuffix(string(bodyB), "data: [DONE]\n\n") {
		t.Fatal("a stream did not complete")
	}

	spans := pxSpans(t, rec, 2)
	if len(spans) != 2 {
		t.Fatalf("got %d spans, want 2", len(spans))
	}
	var a, b sdktrace.ReadOnlySpan
	for _, s := range spans {
		switch pxAttr(s, semconv.InstanceOrdinal) {
		case int64(1):
			a = s
		case int64(2):
			b = s
		}
	}
	if a == nil || b == nil {
		t.Fatal("spans do not have instance ordinals 1 and 2 on one instance")
	}
	addr, _, _ := pxHostPort(t, engSrv)
	if pxAttr(a, semconv.Instance) != addr || pxAttr(b, semconv.Instance) != addr {
		t.Fatalf("instances %v and %v, want both %s", pxAttr(a, semconv.Instance), pxAttr(b, semconv.Instance), addr)
	}

	pre := pxEvents(a, semconv.PrefillEvent)
	if len(pre) != 1 {
		t.Fatalf("first stream has %d prefill events, want 1 (the intruder's)", len(pre))
	}
	e := pre[0]
	bTrace := b.SpanContext().TraceID().String()
	if v, _ := eventAttr(e, semconv.PrefillTraceID); v.AsString() != bTrace {
		t.Errorf("prefill names trace %q, want the intruder's %s", v.AsString(), bTrace)
	}
	if v, _ := eventAttr(e, semconv.PrefillSpanID); v.AsString() != b.SpanContext().SpanID().String() {
		t.Errorf("prefill names span %q, want the intruder's %s", v.AsString(), b.SpanContext().SpanID())
	}
	if v, _ := eventAttr(e, semconv.EngineSource); v.AsString() != semconv.SourceGateway {
		t.Errorf("prefill source %q, want %q", v.AsString(), semconv.SourceGateway)
	}
	dur, _ := eventAttr(e, semconv.EngineDurationMillis)
	if dur.AsFloat64() < 70 || dur.AsFloat64() > 5000 {
		t.Errorf("prefill lasted %.1f ms, want ≈ the intruder's %v TTFT", dur.AsFloat64(), intruderTTFT)
	}
	ttft, _ := attrOf(b, semconv.TTFTMillis)
	if d := dur.AsFloat64() - ttft.AsFloat64(); d < -0.01 || d > 0.01 {
		t.Errorf("prefill lasted %.3f ms, the intruder's TTFT is %.3f ms", dur.AsFloat64(), ttft.AsFloat64())
	}
	if !e.Time.Equal(b.StartTime()) {
		t.Errorf("prefill event at %v, want the intruder's start %v", e.Time, b.StartTime())
	}
	// The first stream's own prefill ended before the intruder arrived, and
	// the intruder's prefill is its own TTFT, not an event.
	if pb := pxEvents(b, semconv.PrefillEvent); len(pb) != 0 {
		t.Errorf("intruder has %d prefill events, want none", len(pb))
	}
	if n := len(pxEvents(a, semconv.TokenEvent)); n != 20 {
		t.Errorf("first stream has %d token events, want 20", n)
	}
}
