package source_test

import (
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"testing"
	"time"

	sdktrace "go.opentelemetry.io/otel/sdk/trace"

	"github.com/tokentrace/tokentrace/analyzer/model"
	"github.com/tokentrace/tokentrace/analyzer/source"
	"github.com/tokentrace/tokentrace/analyzer/source/sdkspan"
	"github.com/tokentrace/tokentrace/semconv"
)

// encoded is one rendering of the recorded spans.
type encoded struct {
	name   string
	format source.Format
	data   []byte
	// jaeger: times are µs (truncated), arrays arrive as JSON text, the
	// dropped-event count is lost (Jaeger's OpenTelemetry mapping).
	jaeger bool
}

func encodeAll(t testing.TB, spans []sdktrace.ReadOnlySpan) []encoded {
	td := exportOTLP(t, spans)
	lines := otlpJSONLines(t, td)
	var gz bytes.Buffer
	zw := gzip.NewWriter(&gz)
	_, _ = zw.Write(lines)
	_ = zw.Close()
	doc := mustJSON(t, toX(td), false)
	return []encoded{
		{name: "otlp-json-lines", format: source.FormatOTLPJSON, data: lines},
		{name: "otlp-json-document", format: source.FormatOTLPJSON, data: mustJSON(t, toX(td), true)},
		{name: "jaeger-api-v3", format: source.FormatOTLPJSON, data: append(append([]byte(`{"result":`), doc...), '}')},
		{name: "otlp-json-lines-gzip", format: source.FormatGzip, data: gz.Bytes()},
		{name: "otlp-proto-delimited", format: source.FormatOTLPProto, data: protoDelimited(t, td)},
		{name: "otlp-proto-message", format: source.FormatOTLPProto, data: protoMessage(t, td)},
		{name: "jaeger-ui-json", format: source.FormatJaegerJSON, data: jaegerJSON(t, td), jaeger: true},
	}
}

// collect reads every span (cloned) and every request of src.
func collect(t testing.TB, src source.Source, skips *source.Skips) (map[string]*model.Span, map[string]*model.Request) {
	t.Helper()
	spans := map[string]*model.Span{}
	if err := src.Spans(context.Background(), func(s *model.Span) error {
		spans[s.SpanID] = source.Clone(s)
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	reqs := map[string]*model.Request{}
	if err := source.Requests(context.Background(), src, skips, func(r *model.Request) error {
		reqs[r.SpanID] = r
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return spans, reqs
}

func TestRoundTripEveryFormatYieldsTheSameRequests(t *testing.T) {
	for _, limit := range []int{0, 4096} {
		t.Run(fmt.Sprintf("event-limit-%d", limit), func(t *testing.T) {
			recorded := recordScenario(t, limit)
			wantSpans, wantReqs := collect(t, sdkspan.Spans(recorded), nil)
			if len(wantSpans) != 5 || len(wantReqs) != 4 {
				t.Fatalf("sdkspan gave %d spans, %d requests; want 5, 4", len(wantSpans), len(wantReqs))
			}
			checkScenario(t, wantReqs, limit)
			dir := t.TempDir()
			for _, enc := range encodeAll(t, recorded) {
				t.Run(enc.name, func(t *testing.T) {
					if got := source.Detect(enc.data); got != enc.format {
						t.Errorf("Detect = %v, want %v", got, enc.format)
					}
					// The extension says nothing: formats are told by content.
					path := filepath.Join(dir, enc.name+".dat")
					if err := os.WriteFile(path, enc.data, 0o644); err != nil {
						t.Fatal(err)
					}
					skips := &source.Skips{}
					gotSpans, gotReqs := collect(t, source.Files([]string{path}, skips), skips)
					if got := skips.List(); len(got) != 1 || got[0].Reason != source.ReasonNotTokentrace || got[0].Count != 1 {
						t.Errorf("skips = %+v, want the one vllm span as %q", got, source.ReasonNotTokentrace)
					}
					if len(gotSpans) != len(wantSpans) || len(gotReqs) != len(wantReqs) {
						t.Fatalf("got %d spans, %d requests; want %d, %d", len(gotSpans), len(gotReqs), len(wantSpans), len(wantReqs))
					}
					for id, w := range wantSpans {
						compareSpan(t, w, gotSpans[id], enc.jaeger)
					}
					for id, w := range wantReqs {
						compareRequest(t, w, gotReqs[id], enc.jaeger)
					}
					checkScenario(t, gotReqs, limit)
				})
			}
		})
	}
}

// checkScenario checks what recordScenario is known to contain.
func checkScenario(t *testing.T, reqs map[string]*model.Request, limit int) {
	t.Helper()
	var long, rich, plain, failed *model.Request
	for _, r := range reqs {
		switch {
		case len(r.Tokens) == 2000:
			long = r
		case len(r.Tokens) == 40:
			rich = r
		case r.Error:
			failed = r
		default:
			plain = r
		}
	}
	if long == nil || rich == nil || plain == nil || failed == nil {
		t.Fatalf("requests not as recorded: long %v rich %v plain %v failed %v", long != nil, rich != nil, plain != nil, failed != nil)
	}
	if limit == 0 {
		// 1,872 of 2,000 token events dropped by the SDK: every time comes
		// back from the compact attribute.
		if long.TimesFrom != model.TimesCompact {
			t.Errorf("2,000-token request: times from %q, want %q", long.TimesFrom, model.TimesCompact)
		}
	} else if long.TimesFrom != model.TimesEvents {
		t.Errorf("2,000-token request with a 4,096 event limit: times from %q, want %q", long.TimesFrom, model.TimesEvents)
	}
	for i, tok := range long.Tokens {
		if tok.Index != i || tok.Count != 1 {
			t.Fatalf("token %d: index %d count %d", i, tok.Index, tok.Count)
		}
		if i > 0 && tok.Time.Before(long.Tokens[i-1].Time) {
			t.Fatalf("token %d before token %d", i, i-1)
		}
	}
	if g := long.Tokens[499].Time.Sub(long.Tokens[498].Time); g < 2*time.Millisecond {
		t.Errorf("gap before token 499 = %v, want ≥ 2ms", g)
	}
	if rich.TimesFrom != model.TimesEvents || rich.OutputTokens != 40 || rich.PromptTokens != 12 ||
		rich.Instance != "engine-0" || rich.PromptType != "qa" || rich.ModelVersion != "v7" ||
		rich.Model != "m" || rich.Kind != "server" || rich.Service != "llm-gateway" || rich.Outcome != semconv.OutcomeComplete {
		t.Errorf("40-token request = %+v", *rich)
	}
	kinds := map[string]int{}
	for _, e := range rich.Events {
		kinds[e.Kind]++
		switch e.Kind {
		case model.KindPrefill:
			if e.TraceID != "abcd0102030405060708090a0b0c0d0e" || e.PromptTokens != 3100 || e.Duration != 4*time.Millisecond {
				t.Errorf("prefill event = %+v", e)
			}
		case model.KindPreemption:
			if e.Mode != "swap" || e.Count != 2 || e.Duration != 1500*time.Microsecond || e.Uncertainty != 250*time.Microsecond {
				t.Errorf("preemption event = %+v", e)
			}
		case model.KindGCPause:
			if e.Duration != 1234567*time.Nanosecond {
				t.Errorf("gc event = %+v", e)
			}
		}
	}
	if kinds[model.KindPrefill] != 1 || kinds[model.KindPreemption] != 1 || kinds[model.KindGCPause] != 1 {
		t.Errorf("engine events by kind = %v, want one each", kinds)
	}
	if plain.TimesFrom != model.TimesNone || plain.Stream || len(plain.Tokens) != 0 {
		t.Errorf("non-streamed request = %+v", *plain)
	}
	if !failed.Error || failed.ErrorType != "503" {
		t.Errorf("failed request: error %t type %q", failed.Error, failed.ErrorType)
	}
}

// near reports whether got is want to within tol (exact when tol is 0).
func near(want, got time.Time, tol time.Duration) bool {
	d := got.Sub(want)
	return d <= tol && d >= -tol
}

func compareSpan(t *testing.T, want, got *model.Span, jaeger bool) {
	t.Helper()
	if got == nil {
		t.Errorf("span %s missing", want.SpanID)
		return
	}
	tol, endTol := time.Duration(0), time.Duration(0)
	if jaeger {
		tol, endTol = time.Microsecond, 2*time.Microsecond
	}
	id := want.Name + " " + want.SpanID
	if got.TraceID != want.TraceID || got.ParentSpanID != want.ParentSpanID || got.Service != want.Service ||
		got.Name != want.Name || got.Kind != want.Kind || got.StatusError != want.StatusError || got.StatusMessage != want.StatusMessage {
		t.Errorf("%s: got %+v\nwant %+v", id, *got, *want)
	}
	if !jaeger && got.DroppedEvents != want.DroppedEvents {
		t.Errorf("%s: dropped events %d, want %d", id, got.DroppedEvents, want.DroppedEvents)
	}
	if !near(want.Start, got.Start, tol) || !near(want.End, got.End, endTol) {
		t.Errorf("%s: times %v..%v, want %v..%v", id, got.Start, got.End, want.Start, want.End)
	}
	compareAttrs(t, id, want.Attrs, got.Attrs, jaeger)
	if len(got.Events) != len(want.Events) {
		t.Fatalf("%s: %d events, want %d", id, len(got.Events), len(want.Events))
	}
	for i := range want.Events {
		w, g := &want.Events[i], &got.Events[i]
		if g.Name != w.Name || !near(w.Time, g.Time, tol) {
			t.Errorf("%s: event %d = %s@%v, want %s@%v", id, i, g.Name, g.Time, w.Name, w.Time)
		}
		compareAttrs(t, fmt.Sprintf("%s event %d", id, i), w.Attrs, g.Attrs, jaeger)
	}
}

func compareAttrs(t *testing.T, id string, want, got map[string]any, jaeger bool) {
	t.Helper()
	if len(got) != len(want) {
		t.Errorf("%s: %d attributes, want %d:\ngot  %v\nwant %v", id, len(got), len(want), got, want)
	}
	for k, w := range want {
		if jaeger {
			switch w.(type) {
			case []string, []any:
				b, _ := json.Marshal(w)
				w = string(b) // Jaeger keeps arrays as JSON text
			}
		}
		if g := got[k]; !reflect.DeepEqual(g, w) {
			t.Errorf("%s: attribute %s = %#v, want %#v", id, k, g, w)
		}
	}
}

func compareRequest(t *testing.T, want, got *model.Request, jaeger bool) {
	t.Helper()
	if got == nil {
		t.Errorf("request %s missing", want.SpanID)
		return
	}
	tol, endTol := time.Duration(0), time.Duration(0)
	if jaeger {
		tol, endTol = time.Microsecond, 2*time.Microsecond
	}
	w, g := *want, *got
	if !near(w.Start, g.Start, tol) || !near(w.End, g.End, endTol) {
		t.Errorf("%s: times %v..%v, want %v..%v", w.SpanID, g.Start, g.End, w.Start, w.End)
	}
	if len(g.Tokens) != len(w.Tokens) || len(g.Events) != len(w.Events) {
		t.Fatalf("%s: %d tokens %d events, want %d %d", w.SpanID, len(g.Tokens), len(g.Events), len(w.Tokens), len(w.Events))
	}
	for i := range w.Tokens {
		wt, gt := w.Tokens[i], g.Tokens[i]
		if gt.Index != wt.Index || gt.Count != wt.Count || !near(wt.Time, gt.Time, tol) {
			t.Fatalf("%s: token %d = %+v, want %+v", w.SpanID, i, gt, wt)
		}
	}
	for i := range w.Events {
		we, ge := w.Events[i], g.Events[i]
		if !near(we.Start, ge.Start, tol) {
			t.Errorf("%s: engine event %d at %v, want %v", w.SpanID, i, ge.Start, we.Start)
		}
		we.Start, ge.Start = time.Time{}, time.Time{}
		if we != ge {
			t.Errorf("%s: engine event %d = %+v, want %+v", w.SpanID, i, ge, we)
		}
	}
	if jaeger {
		g.DroppedEvents = w.DroppedEvents
	}
	w.Start, w.End, w.Tokens, w.Events = time.Time{}, time.Time{}, nil, nil
	g.Start, g.End, g.Tokens, g.Events = time.Time{}, time.Time{}, nil, nil
	if !reflect.DeepEqual(g, w) {
		t.Errorf("request differs:\ngot  %+v\nwant %+v", g, w)
	}
}
