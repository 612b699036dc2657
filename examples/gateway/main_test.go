package main

import (
	"bufio"
	"context"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	collectortrace "go.opentelemetry.io/proto/otlp/collector/trace/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"

	"github.com/tokentrace/tokentrace/instrument"
	"github.com/tokentrace/tokentrace/internal/runtest"
	"github.com/tokentrace/tokentrace/internal/sim"
	"github.com/tokentrace/tokentrace/semconv"
)

// receiver is an OTLP gRPC trace receiver, as Jaeger or a collector runs.
type receiver struct {
	collectortrace.UnimplementedTraceServiceServer
	addr string

	mu       sync.Mutex
	spans    []*tracepb.Span
	services []string
}

func startReceiver(t *testing.T) *receiver {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	r := &receiver{addr: ln.Addr().String()}
	s := grpc.NewServer()
	collectortrace.RegisterTraceServiceServer(s, r)
	go func() { _ = s.Serve(ln) }()
	t.Cleanup(s.Stop)
	return r
}

func (r *receiver) Export(_ context.Context, req *collectortrace.ExportTraceServiceRequest) (*collectortrace.ExportTraceServiceResponse, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for _, rs := range req.GetResourceSpans() {
		for _, a := range rs.GetResource().GetAttributes() {
			if a.GetKey() == "service.name" {
				r.services = append(r.services, a.GetValue().GetStringValue())
			}
		}
		for _, ss := range rs.GetScopeSpans() {
			r.spans = append(r.spans, ss.GetSpans()...)
		}
	}
	return &collectortrace.ExportTraceServiceResponse{}, nil
}

func (r *receiver) received() ([]*tracepb.Span, []string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]*tracepb.Span(nil), r.spans...), append([]string(nil), r.services...)
}

// startEngine runs a simulated engine on httptest and records the
// traceparent header of every completion request it gets.
func startEngine(t *testing.T) (url string, traceparents func() []string) {
	t.Helper()
	p, err := sim.LookupProfile("fast")
	if err != nil {
		t.Fatal(err)
	}
	e, err := sim.New(sim.Config{Profile: p, TimeScale: 0.5, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go e.Run(ctx)
	var mu sync.Mutex
	var seen []string
	api := sim.NewServer(e)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method == http.MethodPost {
			mu.Lock()
			seen = append(seen, r.Header.Get("Traceparent"))
			mu.Unlock()
		}
		api.ServeHTTP(w, r)
	}))
	t.Cleanup(func() { srv.Close(); cancel(); e.Wait() })
	return srv.URL, func() []string {
		mu.Lock()
		defer mu.Unlock()
		return append([]string(nil), seen...)
	}
}

// startGateway runs the gateway with args and waits for its address. Later
// flags win: the metrics endpoint defaults to a port of its own here, so
// tests running side by side do not share 9464.
func startGateway(t *testing.T, args ...string) *runtest.Program {
	t.Helper()
	return runtest.Start(t, run, append([]string{"-listen", "127.0.0.1:0", "-metrics-listen", "127.0.0.1:0"}, args...)...)
}

var client = &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}

// stream sends a streamed chat completion and returns its content chunks
// and whether it ended with [DONE]; first, if not nil, is closed at the
// first content chunk. It may run on any goroutine.
func stream(url string, maxTokens int, first chan<- struct{}) (chunks int, done bool, err error) {
	body := fmt.Sprintf(`{"model":"sim-llama","max_tokens":%d,"stream":true,"stream_options":{"include_usage":true},"messages":[{"role":"user","content":"why is the sky blue"}]}`, maxTokens)
	resp, err := client.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		return 0, false, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, false, fmt.Errorf("status %d", resp.StatusCode)
	}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		data, ok := strings.CutPrefix(sc.Text(), "data: ")
		switch {
		case !ok:
		case data == "[DONE]":
			return chunks, true, nil
		default:
			var c struct {
				Choices []struct {
					Delta struct {
						Content string `json:"content"`
					} `json:"delta"`
				} `json:"choices"`
			}
			if err := json.Unmarshal([]byte(data), &c); err != nil {
				return chunks, false, err
			}
			if len(c.Choices) > 0 && c.Choices[0].Delta.Content != "" {
				if chunks == 0 && first != nil {
					close(first)
				}
				chunks++
			}
		}
	}
	return chunks, false, sc.Err()
}

// streamAll sends one stream per entry of maxTokens at once and checks,
// once all ended, that each arrived whole. When the first token of every
// stream arrived, it calls started (if not nil).
func streamAll(t *testing.T, url string, started func(), maxTokens ...int) {
	t.Helper()
	var wg sync.WaitGroup
	errs := make([]error, len(maxTokens))
	firsts := make([]chan struct{}, len(maxTokens))
	for i, n := range maxTokens {
		firsts[i] = make(chan struct{})
		wg.Add(1)
		go func() {
			defer wg.Done()
			got, done, err := stream(url, n, firsts[i])
			if err == nil && (got != n || !done) {
				err = fmt.Errorf("%d of %d tokens, [DONE] %v", got, n, done)
			}
			errs[i] = err
		}()
	}
	if started != nil {
		for _, f := range firsts {
			select {
			case <-f:
			case <-time.After(10 * time.Second):
				t.Fatal("a stream got no token")
			}
		}
		started()
	}
	wg.Wait()
	for i, err := range errs {
		if err != nil {
			t.Errorf("stream %d: %v", i, err)
		}
	}
}

func TestSpansReachOTLPReceiver(t *testing.T) {
	rcv := startReceiver(t)
	engineURL, traceparents := startEngine(t)
	g := startGateway(t, "-upstream", engineURL, "-otlp", rcv.addr)
	// Interrupt the gateway while the streams run: they end whole, and
	// their spans are flushed by the shutdown (nothing to wait for).
	tokens := []int{60, 150, 300}
	var runErr error
	streamAll(t, g.URL, func() { _, runErr = g.Stop(t, 30*time.Second) }, tokens...)
	if runErr != nil {
		t.Fatalf("run: %v\n%s", runErr, g.Stderr.String())
	}

	spans, services := rcv.received()
	if len(spans) != len(tokens) {
		t.Fatalf("receiver got %d spans, want one per request (%d)", len(spans), len(tokens))
	}
	for _, s := range services {
		if s != "llm-gateway" {
			t.Errorf("service.name %q", s)
		}
	}
	instance := strings.TrimPrefix(engineURL, "http://")
	bySpanID := map[string]*tracepb.Span{}
	gotTokens := map[int]bool{}
	for _, s := range spans {
		bySpanID[hex.EncodeToString(s.GetSpanId())] = s
		if s.GetName() != "chat sim-llama" || s.GetKind() != tracepb.Span_SPAN_KIND_SERVER {
			t.Errorf("span %q kind %v, want chat sim-llama, SERVER", s.GetName(), s.GetKind())
		}
		events := 0
		for _, e := range s.GetEvents() {
			if e.GetName() == semconv.TokenEvent {
				events++
			}
		}
		gotTokens[events] = true
		attrs := map[string]string{}
		for _, a := range s.GetAttributes() {
			attrs[a.GetKey()] = a.GetValue().String()
		}
		if attrs[string(semconv.TokenTimes)] == "" {
			t.Errorf("span has no %s: %v", semconv.TokenTimes, attrs)
		}
		if !strings.Contains(attrs[string(semconv.Instance)], instance) {
			t.Errorf("%s = %s, want %s", semconv.Instance, attrs[string(semconv.Instance)], instance)
		}
	}
	for _, n := range tokens {
		if !gotTokens[n] {
			t.Errorf("no span with %d token events (got %v)", n, gotTokens)
		}
	}

	// The engine got a W3C traceparent naming each request's span.
	tps := traceparents()
	if len(tps) != len(tokens) {
		t.Fatalf("engine got %d requests, want %d", len(tps), len(tokens))
	}
	for _, tp := range tps {
		parts := strings.Split(tp, "-")
		if len(parts) != 4 || parts[0] != "00" || len(parts[1]) != 32 || len(parts[2]) != 16 || len(parts[3]) != 2 {
			t.Errorf("traceparent %q is not W3C trace context", tp)
			continue
		}
		s := bySpanID[parts[2]]
		if s == nil || hex.EncodeToString(s.GetTraceId()) != parts[1] {
			t.Errorf("traceparent %q names no exported span", tp)
		}
	}
	if strings.Contains(g.Stderr.String(), "not reachable") {
		t.Errorf("a reachable OTLP endpoint reported unreachable:\n%s", g.Stderr)
	}
}

// With the OTLP endpoint down, streams pass whole and the shutdown keeps to
// its timeout.
func TestExporterDownDoesNotBreakTheGateway(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	closedPort := ln.Addr().String()
	ln.Close()
	engineURL, _ := startEngine(t)
	g := startGateway(t, "-upstream", engineURL, "-otlp", closedPort, "-shutdown-timeout", "3s", "-token-recording", "compact")
	streamAll(t, g.URL, nil, 30, 30, 30)
	// Interrupt while three streams of about 0.5 s run: they still end whole.
	var took time.Duration
	var runErr error
	streamAll(t, g.URL, func() { took, runErr = g.Stop(t, 30*time.Second) }, 600, 600, 600)
	if runErr != nil {
		t.Errorf("run: %v", runErr)
	}
	// The timeout bounds the wait; stopping the process and a loaded CI
	// host add a little on top. A hang (the exporter's own retries) would
	// take 20 s and more.
	if took > 5*time.Second {
		t.Errorf("shutdown took %v with -shutdown-timeout 3s", took)
	}
	// Said at start, not only at the first failed export.
	if log := g.Stderr.String(); !strings.Contains(log, "OTLP endpoint not reachable") || !strings.Contains(log, closedPort) {
		t.Errorf("no warning naming the unreachable endpoint:\n%s", log)
	}
}

func TestSeveralUpstreamsRoundRobin(t *testing.T) {
	rcv := startReceiver(t)
	a, _ := startEngine(t)
	b, _ := startEngine(t)
	c, _ := startEngine(t)
	g := startGateway(t, "-upstream", a+","+b, "-upstream", c, "-otlp", rcv.addr, "-service-name", "gw-test")
	for range 3 {
		streamAll(t, g.URL, nil, 5)
	}
	if _, err := g.Stop(t, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	spans, services := rcv.received()
	seen := map[string]bool{}
	for _, s := range spans {
		for _, at := range s.GetAttributes() {
			if at.GetKey() == string(semconv.Instance) {
				seen[at.GetValue().GetStringValue()] = true
			}
		}
	}
	if len(spans) != 3 || len(seen) != 3 {
		t.Errorf("%d spans over instances %v, want one on each of 3", len(spans), seen)
	}
	if len(services) == 0 || services[0] != "gw-test" {
		t.Errorf("service.name %v", services)
	}
}

func TestBadFlags(t *testing.T) {
	for _, args := range [][]string{
		{"-nosuchflag"},
		{"-upstream", "localhost:8000"},
		{"-upstream", "http://a:1,ftp://b"},
		{"-token-recording", "all"},
		{"-shutdown-timeout", "0s"},
		{"-listen", "nonsense"},
		{"extra"},
	} {
		out, errOut := runtest.NewLines(), runtest.NewLines()
		if err := run(context.Background(), append(args, "-otlp", "127.0.0.1:1"), out, errOut); err == nil {
			t.Errorf("run(%q) accepted", args)
		}
		if out.String() != "" {
			t.Errorf("run(%q) printed %q", args, out.String())
		}
	}
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

func TestClassifier(t *testing.T) {
	req := func(promptType string) *http.Request {
		r := httptest.NewRequest(http.MethodPost, "/v1/chat/completions", nil)
		if promptType != "" {
			r.Header.Set(PromptTypeHeader, promptType)
		}
		return r
	}
	for _, tc := range []struct {
		version, header string
		chars           int
		want            instrument.Classification
	}{
		{"", "", 100, instrument.Classification{PromptType: "short", ModelVersion: "llama"}},
		{"", "", 5_000, instrument.Classification{PromptType: "medium", ModelVersion: "llama"}},
		{"build-7", "", 40_000, instrument.Classification{PromptType: "long", ModelVersion: "build-7"}},
		{"", "summarize", 40_000, instrument.Classification{PromptType: "summarize", ModelVersion: "llama"}},
	} {
		got := classifier(tc.version)(req(tc.header), instrument.RequestInfo{Model: "llama", PromptChars: tc.chars})
		if got != tc.want {
			t.Errorf("classifier(%q) with header %q, %d chars = %+v, want %+v", tc.version, tc.header, tc.chars, got, tc.want)
		}
	}
}
