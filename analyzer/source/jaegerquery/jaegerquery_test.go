package jaegerquery_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tokentrace/tokentrace/analyzer/model"
	"github.com/tokentrace/tokentrace/analyzer/source"
	"github.com/tokentrace/tokentrace/analyzer/source/jaegerquery"
	"github.com/tokentrace/tokentrace/internal/jaegertest"
)

// protocolCase is one way of reading the shared Jaeger.
type protocolCase struct {
	name     string
	endpoint func(j *jaegertest.Jaeger) string
	protocol jaegerquery.Protocol // as asked
	want     jaegerquery.Protocol // as resolved
	// tol is the precision of times: nanoseconds for the gRPC APIs and
	// OTLP JSON, microseconds for the UI's JSON.
	tol time.Duration
	// keepsDropped: the API carries the SDK's dropped-event count.
	keepsDropped bool
}

var protocolCases = []protocolCase{
	{name: "grpc-auto", endpoint: func(j *jaegertest.Jaeger) string { return j.QueryGRPC }, want: jaegerquery.GRPCv3, keepsDropped: true},
	{name: "grpc-v3", endpoint: func(j *jaegertest.Jaeger) string { return "grpc://" + j.QueryGRPC }, protocol: jaegerquery.GRPCv3, want: jaegerquery.GRPCv3, keepsDropped: true},
	{name: "grpc-v2", endpoint: func(j *jaegertest.Jaeger) string { return j.QueryGRPC }, protocol: jaegerquery.GRPCv2, want: jaegerquery.GRPCv2},
	{name: "http-auto", endpoint: func(j *jaegertest.Jaeger) string { return "http://" + j.QueryHTTP }, want: jaegerquery.HTTPv3, keepsDropped: true},
	{name: "http-legacy", endpoint: func(j *jaegertest.Jaeger) string { return "http://" + j.QueryHTTP }, protocol: jaegerquery.HTTPLegacy, want: jaegerquery.HTTPLegacy, tol: time.Microsecond},
}

func newClient(t *testing.T, endpoint string, opts ...jaegerquery.Option) *jaegerquery.Client {
	t.Helper()
	c, err := jaegerquery.New(endpoint, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// The conformance table: the same assertions over every protocol.
func TestConformance(t *testing.T) {
	j, sc := sharedScenario(t)
	for _, pc := range protocolCases {
		t.Run(pc.name, func(t *testing.T) {
			c := newClient(t, pc.endpoint(j), jaegerquery.WithProtocol(pc.protocol))
			got, err := c.Protocol(context.Background())
			if err != nil || got != pc.want {
				t.Fatalf("Protocol() = %v, %v; want %v", got, err, pc.want)
			}
			window := jaegerquery.Query{Service: svcMain, Start: sc.start, End: sc.end}
			if names, err := c.Services(context.Background()); err != nil || !slices.Contains(names, svcMain) || !slices.Contains(names, svcPage) {
				t.Errorf("Services() = %v, %v", names, err)
			}

			t.Run("same traces and requests", func(t *testing.T) {
				skips := &source.Skips{}
				c := newClient(t, pc.endpoint(j), jaegerquery.WithProtocol(pc.protocol), jaegerquery.WithSkips(skips))
				f, err := fetch(t, c.Source(window), skips)
				if err != nil {
					t.Fatal(err)
				}
				if g, w := keys(f.traces), keys(sc.mainTraces); strings.Join(g, ",") != strings.Join(w, ",") {
					t.Fatalf("traces %v, want %v", g, w)
				}
				if skips.Total() != 0 {
					t.Errorf("skips: %+v", skips.List())
				}
				for id, want := range sc.main {
					compareRequest(t, want, f.reqs[id], pc.tol, pc.keepsDropped)
				}
				// The 2,000-token stream under a 128-event limit: every
				// token comes back from the compact times.
				r := f.reqs[sc.long128]
				if r == nil || r.TimesFrom != model.TimesCompact || r.TokenCount() != 2000 || len(r.Tokens) != 2000 {
					t.Errorf("128-limited stream: %+v", r)
				} else if pc.keepsDropped && r.DroppedEvents < 2000-128 {
					t.Errorf("128-limited stream: %d dropped events, want ≥ %d", r.DroppedEvents, 2000-128)
				}
				if r := f.reqs[sc.rich]; r == nil || len(r.Events) != 3 || len(r.Tokens) != 40 {
					t.Errorf("40-token stream with 3 engine events: %+v", r)
				}
				if r := f.reqs[sc.long]; r == nil || r.TimesFrom != model.TimesEvents || len(r.Tokens) != 2000 {
					t.Errorf("2,000-token stream (2,048-event limit): %+v", r)
				}
				// Span level: event names and nanosecond event times.
				if pc.tol == 0 {
					s := f.spans[sc.long]
					tokens := 0
					for _, e := range s.Events {
						if e.Name == "tokentrace.token" {
							if e.Time.Nanosecond()%1000 != 0 {
								tokens++ // sub-µs digits survived
							}
						}
					}
					if tokens == 0 {
						t.Errorf("no event time with sub-microsecond digits: ns times lost")
					}
				}
			})

			t.Run("search by attribute", func(t *testing.T) {
				for _, tc := range []struct {
					attrs map[string]string
					want  string // span id
				}{
					{map[string]string{"model": "other"}, sc.other},
					{map[string]string{"prompt_type": "analysis"}, sc.other},
					{map[string]string{"instance": "engine-2", "model": "m"}, sc.long128},
				} {
					q := window
					q.Attributes = tc.attrs
					f, err := fetch(t, c.Source(q), nil)
					if err != nil {
						t.Fatal(err)
					}
					if len(f.spans) != 1 || f.spans[tc.want] == nil {
						t.Errorf("%v: spans %v, want only %s", tc.attrs, keys(f.spans), tc.want)
					}
				}
				q := window
				q.Attributes = map[string]string{"model": "no-such-model"}
				f, err := fetch(t, c.Source(q), nil)
				if err != nil || len(f.spans) != 0 {
					t.Errorf("no match: %d spans, %v", len(f.spans), err)
				}
			})

			t.Run("paging", func(t *testing.T) {
				skips := &source.Skips{}
				c := newClient(t, pc.endpoint(j), jaegerquery.WithProtocol(pc.protocol), jaegerquery.WithSkips(skips), jaegerquery.WithParallel(3))
				f, err := fetch(t, c.Source(jaegerquery.Query{Service: svcPage, Start: sc.start, End: sc.end, Limit: 3}), skips)
				if err != nil {
					t.Fatal(err)
				}
				if g, w := keys(f.traces), keys(sc.page); strings.Join(g, ",") != strings.Join(w, ",") {
					t.Errorf("traces %v, want %v", g, w)
				}
				for id, n := range f.traces {
					if n != 1 {
						t.Errorf("trace %s: %d spans, want 1", id, n)
					}
				}
				if skips.Total() != 0 {
					t.Errorf("skips: %+v", skips.List())
				}
				// 10 traces at depth 3: the window was split (a single
				// call returns 3).
				if n := jaegerquery.FindTracesCalls(c); n < 5 {
					t.Errorf("%d FindTraces calls: the window was not split", n)
				}
				t.Logf("%d FindTraces calls", jaegerquery.FindTracesCalls(c))
			})

			t.Run("trace ids", func(t *testing.T) {
				missing := "0123456789abcdef0123456789abcdef"
				want := sc.main[sc.rich].TraceID
				f, err := fetch(t, c.Source(jaegerquery.Query{TraceIDs: []string{strings.ToUpper(want), missing}}), nil)
				var nf *jaegerquery.NotFoundError
				if !errors.As(err, &nf) || len(nf.TraceIDs) != 1 || nf.TraceIDs[0] != missing || !strings.Contains(err.Error(), missing) {
					t.Fatalf("error %v, want a NotFoundError naming %s", err, missing)
				}
				if len(f.traces) != 1 || f.traces[want] != 1 {
					t.Errorf("traces %v, want %s", f.traces, want)
				}
				f, err = fetch(t, c.Source(jaegerquery.Query{TraceIDs: []string{want}}), nil)
				if err != nil || f.reqs[sc.rich] == nil {
					t.Fatalf("by id: %v, %d requests", err, len(f.reqs))
				}
				compareRequest(t, sc.main[sc.rich], f.reqs[sc.rich], pc.tol, pc.keepsDropped)
			})
		})
	}
}

// Jaeger stopped between two queries: a clear error within the timeout.
func TestJaegerStoppedMidRun(t *testing.T) {
	j := startJaeger(t)
	type client struct {
		name string
		c    *jaegerquery.Client
	}
	var clients []client
	// Resolve the protocol (and connect) while Jaeger runs.
	for _, pc := range protocolCases {
		c := newClient(t, pc.endpoint(j), jaegerquery.WithProtocol(pc.protocol), jaegerquery.WithTimeout(5*time.Second))
		if _, err := c.Protocol(context.Background()); err != nil {
			t.Fatal(err)
		}
		if err := c.Source(jaegerquery.Query{Service: "nobody"}).Spans(context.Background(), func(*model.Span) error { return nil }); err != nil {
			t.Fatalf("%s before stop: %v", pc.name, err)
		}
		clients = append(clients, client{pc.name, c})
	}
	j.Stop()
	for _, cl := range clients {
		t.Run(cl.name, func(t *testing.T) {
			start := time.Now()
			err := cl.c.Source(jaegerquery.Query{Service: svcMain}).Spans(context.Background(), func(*model.Span) error { return nil })
			took := time.Since(start)
			if err == nil {
				t.Fatal("no error from a stopped Jaeger")
			}
			if took > 6*time.Second {
				t.Errorf("error after %v, want within the 5s timeout", took)
			}
			if !errors.Is(err, jaegerquery.ErrUnreachable) || !strings.Contains(err.Error(), "unreachable") || !strings.Contains(err.Error(), cl.c.Endpoint()) {
				t.Errorf("error %q: want ErrUnreachable naming %s", err, cl.c.Endpoint())
			}
			t.Logf("after %v: %v", took.Round(time.Millisecond), err)
		})
	}
}

// A Jaeger that never ran: the first query says so, naming the endpoint.
func TestUnreachableEndpoint(t *testing.T) {
	for _, ep := range []string{"127.0.0.1:1", "http://127.0.0.1:1"} {
		c := newClient(t, ep, jaegerquery.WithTimeout(3*time.Second), jaegerquery.WithRetries(1))
		start := time.Now()
		err := c.Source(jaegerquery.Query{Service: "x"}).Spans(context.Background(), func(*model.Span) error { return nil })
		if !errors.Is(err, jaegerquery.ErrUnreachable) || !strings.HasPrefix(err.Error(), "jaeger query at "+c.Endpoint()+" unreachable: ") {
			t.Errorf("%s: error %v", ep, err)
		}
		if time.Since(start) > 4*time.Second {
			t.Errorf("%s: took %v", ep, time.Since(start))
		}
	}
}
