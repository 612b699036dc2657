package jaegerquery_test

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/sdk/trace/tracetest"
	"go.opentelemetry.io/otel/trace"

	"github.com/tokentrace/tokentrace/analyzer/model"
	"github.com/tokentrace/tokentrace/analyzer/source"
	"github.com/tokentrace/tokentrace/analyzer/source/jaegerquery"
	"github.com/tokentrace/tokentrace/analyzer/source/sdkspan"
	"github.com/tokentrace/tokentrace/instrument"
	"github.com/tokentrace/tokentrace/internal/jaegertest"
	"github.com/tokentrace/tokentrace/internal/openaitest"
)

// ---------------------------------------------------------------------
// A real Jaeger, shared by the tests of the package, holding spans made by
// the real instrument middleware.

var shared struct {
	once sync.Once
	j    *jaegertest.Jaeger
	sc   *scenario
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if shared.j != nil {
		shared.j.Stop()
	}
	os.Exit(code)
}

// startJaeger starts a Jaeger for one test (stopped at its end). Tests
// that need one fail, not skip, when it cannot start, unless -short.
func startJaeger(t *testing.T) *jaegertest.Jaeger {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a real Jaeger (jaegertest): not in -short mode")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	j, err := jaegertest.Start(ctx)
	if err != nil {
		t.Fatalf("starting Jaeger: %v", err)
	}
	t.Cleanup(j.Stop)
	return j
}

// sharedScenario starts the shared Jaeger once, records the scenario into
// it and waits until Jaeger has every span.
func sharedScenario(t *testing.T) (*jaegertest.Jaeger, *scenario) {
	t.Helper()
	if testing.Short() {
		t.Skip("needs a real Jaeger (jaegertest): not in -short mode")
	}
	shared.once.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
		defer cancel()
		j, err := jaegertest.Start(ctx)
		if err != nil {
			shared.err = fmt.Errorf("starting Jaeger: %w", err)
			return
		}
		shared.j = j
		shared.sc, shared.err = record(ctx, j)
	})
	if shared.err != nil {
		t.Fatal(shared.err)
	}
	return shared.j, shared.sc
}

// Services and expected contents of the scenario.
const (
	svcMain = "gw-test"
	svcPage = "gw-page"
	pageN   = 10
)

// scenario is what was sent to Jaeger, as the SDK recorded it.
type scenario struct {
	start, end time.Time
	// main: the requests of svcMain by span id (ground truth from the SDK's
	// own spans, nanosecond exact), and their trace ids.
	main       map[string]*model.Request
	mainTraces map[string]bool
	page       map[string]bool // the trace ids of svcPage
	// Span ids of particular requests.
	rich, long, long128, other, plain, failed string
}

// post sends a completion request through the gateway.
func post(url, model string, stream bool, headers map[string]string) error {
	body := fmt.Sprintf(`{"model":%q,"stream":%t,"messages":[{"role":"user","content":"hello"}]}`, model, stream)
	req, _ := http.NewRequest(http.MethodPost, url+"/v1/chat/completions", strings.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	return resp.Body.Close()
}

// provider is a provider of instrument.NewTracerProvider exporting to
// Jaeger, with a recorder of the same spans for the ground truth.
func provider(ctx context.Context, j *jaegertest.Jaeger, service string, opts ...instrument.ProviderOption) (*instrument.TracerProvider, *tracetest.SpanRecorder, error) {
	opts = append([]instrument.ProviderOption{instrument.WithEndpoint(j.OTLPGRPC), instrument.WithInsecure(), instrument.WithServiceName(service)}, opts...)
	tp, err := instrument.NewTracerProvider(ctx, opts...)
	if err != nil {
		return nil, nil, err
	}
	rec := tracetest.NewSpanRecorder()
	tp.RegisterSpanProcessor(rec)
	return tp, rec, nil
}

// gateway serves the engine through the real middleware; the engine
// instance and the prompt type come from request headers.
func gateway(tp trace.TracerProvider, tracker *instrument.Tracker, eng http.Handler) *httptest.Server {
	return httptest.NewServer(instrument.Handler(eng,
		instrument.WithTracerProvider(tp), instrument.WithTracker(tracker),
		instrument.WithInstance(func(r *http.Request) string { return r.Header.Get("X-Instance") }),
		instrument.WithClassifier(func(r *http.Request, _ instrument.RequestInfo) instrument.Classification {
			return instrument.Classification{PromptType: r.Header.Get("X-Prompt-Type"), ModelVersion: "v7"}
		})))
}

// record sends the scenario to Jaeger through the middleware:
//
//   - svcMain, default provider event limit (2,048): a 40-token stream with
//     a prefill, a KV swap and a GC pause recorded mid-stream (model m,
//     instance engine-0, prompt type qa); a 2,000-token stream; a 20-token
//     stream of model "other" (engine-1, analysis); a non-streamed request;
//     a request the engine fails;
//   - svcMain, event limit 128: a 2,000-token stream (1,872+ events
//     dropped by the SDK, every time kept in the compact attribute);
//   - svcPage: 10 five-token streams, a few ms apart.
//
// then waits until Jaeger answers with every span.
func record(ctx context.Context, j *jaegertest.Jaeger) (*scenario, error) {
	sc := &scenario{start: time.Now().Add(-time.Second), main: map[string]*model.Request{}, mainTraces: map[string]bool{}, page: map[string]bool{}}
	tpA, recA, err := provider(ctx, j, svcMain)
	if err != nil {
		return nil, err
	}
	tpB, recB, err := provider(ctx, j, svcMain, instrument.WithEventCountLimit(128))
	if err != nil {
		return nil, err
	}
	tpC, recC, err := provider(ctx, j, svcPage)
	if err != nil {
		return nil, err
	}
	tracker := instrument.NewTracker()
	intruder := trace.TraceID{0xab, 0xcd, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14}
	rich := &openaitest.Engine{Tokens: 40, Gap: func(i int) time.Duration {
		if i >= 20 && i < 25 {
			return 3 * time.Millisecond
		}
		return 100 * time.Microsecond
	}, OnToken: func(r *http.Request, i int) {
		now := time.Now()
		switch i {
		case 10:
			tracker.RecordPrefill("engine-0", instrument.Prefill{TraceID: intruder, PromptTokens: 3100, Start: now.Add(-4 * time.Millisecond), Duration: 4 * time.Millisecond})
		case 20:
			tracker.RecordPreemption("engine-0", instrument.Preemption{Mode: "swap", Start: now, Duration: 1500 * time.Microsecond, Count: 2, Uncertainty: 250 * time.Microsecond})
		case 30:
			tracker.RecordGCPause("engine-0", instrument.GCPause{Start: now.Add(-time.Millisecond), Duration: 1234567 * time.Nanosecond})
		}
	}}
	long := &openaitest.Engine{Tokens: 2000, Gap: func(i int) time.Duration {
		if i%500 == 499 {
			return 2 * time.Millisecond
		}
		return 0
	}}
	short := &openaitest.Engine{Tokens: 20}
	main := func(i string) map[string]string { return map[string]string{"X-Instance": i, "X-Prompt-Type": "qa"} }

	srv := gateway(tpA, tracker, rich)
	errs := []error{post(srv.URL, "m", true, main("engine-0"))}
	srv.Close()
	srv = gateway(tpA, tracker, long)
	errs = append(errs, post(srv.URL, "m", true, main("engine-0")))
	srv.Close()
	srv = gateway(tpA, tracker, short)
	errs = append(errs,
		post(srv.URL, "other", true, map[string]string{"X-Instance": "engine-1", "X-Prompt-Type": "analysis"}),
		post(srv.URL, "m", false, main("engine-0")),
		post(srv.URL, "m", true, map[string]string{"X-Instance": "engine-0", "X-Fail": "1"}))
	srv.Close()
	srv = gateway(tpB, tracker, long)
	errs = append(errs, post(srv.URL, "m", true, main("engine-2")))
	srv.Close()
	srv = gateway(tpC, tracker, &openaitest.Engine{Tokens: 5})
	for range pageN {
		errs = append(errs, post(srv.URL, "m", true, main("engine-3")))
		time.Sleep(3 * time.Millisecond)
	}
	srv.Close()
	for _, e := range errs {
		if e != nil {
			return nil, e
		}
	}
	for _, tp := range []*instrument.TracerProvider{tpA, tpB, tpC} {
		if err := tp.Shutdown(ctx); err != nil {
			return nil, fmt.Errorf("flushing spans to Jaeger: %w", err)
		}
	}
	sc.end = time.Now().Add(time.Second)

	mainSpans := append(recA.Ended(), recB.Ended()...)
	if err := source.Requests(ctx, sdkspan.Spans(mainSpans), nil, func(r *model.Request) error {
		sc.main[r.SpanID] = r
		sc.mainTraces[r.TraceID] = true
		switch {
		case len(r.Tokens) == 40:
			sc.rich = r.SpanID
		case len(r.Tokens) == 2000 && r.TimesFrom == model.TimesEvents:
			sc.long = r.SpanID
		case len(r.Tokens) == 2000:
			sc.long128 = r.SpanID
		case r.Model == "other":
			sc.other = r.SpanID
		case r.Error:
			sc.failed = r.SpanID
		default:
			sc.plain = r.SpanID
		}
		return nil
	}); err != nil {
		return nil, err
	}
	for _, s := range recC.Ended() {
		sc.page[s.SpanContext().TraceID().String()] = true
	}
	if len(sc.main) != 6 || len(sc.page) != pageN || sc.rich == "" || sc.long == "" || sc.long128 == "" || sc.other == "" || sc.plain == "" || sc.failed == "" {
		return nil, fmt.Errorf("scenario not as recorded: %d main requests, %d page traces, rich %q long %q long128 %q other %q plain %q failed %q",
			len(sc.main), len(sc.page), sc.rich, sc.long, sc.long128, sc.other, sc.plain, sc.failed)
	}
	return sc, waitForSpans(ctx, j, sc)
}

// waitForSpans polls Jaeger (api_v3 gRPC) until it has every span.
func waitForSpans(ctx context.Context, j *jaegertest.Jaeger, sc *scenario) error {
	c, err := jaegerquery.New(j.QueryGRPC, jaegerquery.WithProtocol(jaegerquery.GRPCv3), jaegerquery.WithRetries(0))
	if err != nil {
		return err
	}
	defer c.Close()
	var ids []string
	for id := range sc.mainTraces {
		ids = append(ids, id)
	}
	for id := range sc.page {
		ids = append(ids, id)
	}
	want := len(sc.main) + len(sc.page)
	deadline := time.Now().Add(60 * time.Second)
	for {
		n := 0
		err := c.Source(jaegerquery.Query{TraceIDs: ids}).Spans(ctx, func(*model.Span) error { n++; return nil })
		if err == nil && n == want {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("Jaeger has %d of %d spans after 60s (last error: %v)\njaeger log:\n%s", n, want, err, j.Log())
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// ---------------------------------------------------------------------
// Collecting and comparing.

type fetched struct {
	spans  map[string]*model.Span    // by span id
	reqs   map[string]*model.Request // by span id
	traces map[string]int            // spans per trace id
}

// fetch reads src twice: spans (counting repeats) and requests.
func fetch(t *testing.T, src source.Source, skips *source.Skips) (fetched, error) {
	t.Helper()
	f := fetched{spans: map[string]*model.Span{}, reqs: map[string]*model.Request{}, traces: map[string]int{}}
	ctx := context.Background()
	err := src.Spans(ctx, func(s *model.Span) error {
		if _, dup := f.spans[s.SpanID]; dup {
			t.Errorf("span %s/%s passed twice", s.TraceID, s.SpanID)
		}
		f.spans[s.SpanID] = source.Clone(s)
		f.traces[s.TraceID]++
		return nil
	})
	if err != nil {
		return f, err
	}
	err = source.Requests(ctx, src, skips, func(r *model.Request) error {
		f.reqs[r.SpanID] = r
		return nil
	})
	return f, err
}

func keys[V any](m map[string]V) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func near(want, got time.Time, tol time.Duration) bool {
	d := got.Sub(want)
	return d <= tol && d >= -tol
}

// compareRequest checks a request read back from Jaeger against the
// SDK's: token times to tol, engine events, labels; the dropped-event
// count only when keepsDropped.
func compareRequest(t *testing.T, want, got *model.Request, tol time.Duration, keepsDropped bool) {
	t.Helper()
	if got == nil {
		t.Errorf("request %s (%s) missing", want.SpanID, want.Name)
		return
	}
	id := want.SpanID + " (" + want.Name + ")"
	if got.TraceID != want.TraceID || got.Service != want.Service || got.Name != want.Name || got.Kind != want.Kind ||
		got.Instance != want.Instance || got.Model != want.Model || got.PromptType != want.PromptType ||
		got.ModelVersion != want.ModelVersion || got.Stream != want.Stream || got.Outcome != want.Outcome ||
		got.Error != want.Error || got.ErrorType != want.ErrorType || got.OutputTokens != want.OutputTokens ||
		got.Ordinal != want.Ordinal || got.TimesFrom != want.TimesFrom {
		t.Errorf("%s: got %+v\nwant %+v", id, labels(got), labels(want))
	}
	if !near(want.Start, got.Start, tol) || !near(want.End, got.End, 2*tol) {
		t.Errorf("%s: span %v..%v, want %v..%v", id, got.Start, got.End, want.Start, want.End)
	}
	if keepsDropped && got.DroppedEvents != want.DroppedEvents {
		t.Errorf("%s: %d dropped events, want %d", id, got.DroppedEvents, want.DroppedEvents)
	}
	if len(got.Tokens) != len(want.Tokens) {
		t.Errorf("%s: %d tokens, want %d", id, len(got.Tokens), len(want.Tokens))
		return
	}
	for i := range want.Tokens {
		w, g := want.Tokens[i], got.Tokens[i]
		if g.Index != w.Index || g.Count != w.Count || !near(w.Time, g.Time, tol) {
			t.Errorf("%s: token %d = %+v, want %+v (tolerance %v)", id, i, g, w, tol)
			return
		}
	}
	if len(got.Events) != len(want.Events) {
		t.Errorf("%s: %d engine events, want %d", id, len(got.Events), len(want.Events))
		return
	}
	for i := range want.Events {
		w, g := want.Events[i], got.Events[i]
		if !near(w.Start, g.Start, tol) {
			t.Errorf("%s: engine event %d at %v, want %v", id, i, g.Start, w.Start)
		}
		w.Start, g.Start = time.Time{}, time.Time{}
		if w != g {
			t.Errorf("%s: engine event %d = %+v, want %+v", id, i, g, w)
		}
	}
}

func labels(r *model.Request) string {
	return fmt.Sprintf("{trace %s service %s name %q kind %s instance %s model %s prompt %s version %s stream %t outcome %s error %t/%s tokens %d ordinal %d times %s dropped %d}",
		r.TraceID, r.Service, r.Name, r.Kind, r.Instance, r.Model, r.PromptType, r.ModelVersion, r.Stream, r.Outcome, r.Error, r.ErrorType, r.OutputTokens, r.Ordinal, r.TimesFrom, r.DroppedEvents)
}
