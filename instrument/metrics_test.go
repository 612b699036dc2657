package instrument_test

import (
	"context"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/http/httptest"
	"runtime"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/exemplar"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/tokentrace/tokentrace/instrument"
	"github.com/tokentrace/tokentrace/semconv"
)

func newMeterProvider(t testing.TB) (*sdkmetric.MeterProvider, *sdkmetric.ManualReader) {
	t.Helper()
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r), sdkmetric.WithExemplarFilter(exemplar.TraceBasedFilter))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	return mp, r
}

func collect(t testing.TB, r *sdkmetric.ManualReader) map[string]metricdata.Metrics {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := instrument.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	var rm metricdata.ResourceMetrics
	if err := r.Collect(ctx, &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]metricdata.Metrics{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			out[m.Name] = m
		}
	}
	return out
}

func float64Points(t testing.TB, ms map[string]metricdata.Metrics, name string) []metricdata.HistogramDataPoint[float64] {
	t.Helper()
	m, ok := ms[name]
	if !ok {
		t.Fatalf("no metric %s; have %v", name, keys(ms))
	}
	h, ok := m.Data.(metricdata.Histogram[float64])
	if !ok {
		t.Fatalf("%s is %T, want a float64 histogram", name, m.Data)
	}
	return h.DataPoints
}

func keys(ms map[string]metricdata.Metrics) []string {
	var k []string
	for n := range ms {
		k = append(k, n)
	}
	slices.Sort(k)
	return k
}

func classify(_ *http.Request, info instrument.RequestInfo) instrument.Classification {
	return instrument.Classification{PromptType: "qa", ModelVersion: "v2"}
}

// TestMetricsServerHistograms serves streams through a Handler with a
// meter provider and checks every histogram's counts, buckets, attributes
// and exemplar trace ids against the spans.
func TestMetricsServerHistograms(t *testing.T) {
	tp, rec := newProvider(t, 0)
	mp, reader := newMeterProvider(t)
	const tokens, requests = 10, 3
	eng := &engine{Tokens: tokens, Usage: true, Gap: func(i int) time.Duration { return 2 * time.Millisecond }}
	srv := httptest.NewServer(instrument.Handler(eng,
		instrument.WithTracerProvider(tp), instrument.WithMeterProvider(mp), instrument.WithClassifier(classify)))
	defer srv.Close()
	for range requests {
		resp, err := http.DefaultClient.Do(newChatRequest(srv.URL, chatBody("m1", true, true)))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	spans := endedSpans(t, rec)
	if len(spans) != requests {
		t.Fatalf("%d spans", len(spans))
	}
	traceIDs := map[string]bool{}
	for _, s := range spans {
		traceIDs[s.SpanContext().TraceID().String()] = true
	}
	ms := collect(t, reader)

	check := func(name string, count uint64, bounds []float64, attrs map[attribute.Key]string) metricdata.HistogramDataPoint[float64] {
		t.Helper()
		pts := float64Points(t, ms, name)
		if len(pts) != 1 {
			t.Fatalf("%s: %d series, want 1", name, len(pts))
		}
		p := pts[0]
		if p.Count != count {
			t.Errorf("%s: count %d, want %d", name, p.Count, count)
		}
		if !slices.Equal(p.Bounds, bounds) {
			t.Errorf("%s: bounds %v, want %v", name, p.Bounds, bounds)
		}
		var n uint64
		for _, c := range p.BucketCounts {
			n += c
		}
		if n != p.Count {
			t.Errorf("%s: buckets hold %d, count %d", name, n, p.Count)
		}
		for k, v := range attrs {
			if got, ok := p.Attributes.Value(k); !ok || got.AsString() != v {
				t.Errorf("%s: %s=%q, want %q", name, k, got.AsString(), v)
			}
		}
		if len(p.Exemplars) == 0 {
			t.Errorf("%s: no exemplar", name)
		}
		for _, e := range p.Exemplars {
			if !traceIDs[fmt.Sprintf("%x", e.TraceID)] {
				t.Errorf("%s: exemplar trace id %x is not a request's", name, e.TraceID)
			}
		}
		return p
	}
	cls := map[attribute.Key]string{semconv.MetricModelVersion: "v2", semconv.MetricPromptType: "qa"}
	genai := map[attribute.Key]string{semconv.GenAIRequestModel: "m1", semconv.GenAIOperationName: "chat",
		semconv.GenAIProviderName: "openai", semconv.MetricModelVersion: "v2", semconv.MetricPromptType: "qa"}
	check(semconv.MetricServerTimeToFirstToken, requests, instrument.BucketsTimeToFirstToken, genai)
	tpot := check(semconv.MetricServerTimePerOutputTok, requests, instrument.BucketsTimePerOutputTok, genai)
	check(semconv.MetricServerRequestDuration, requests, instrument.BucketsOperation, genai)
	seed := check(semconv.MetricLLMTPOT, requests, []float64{0.01, 0.05, 0.1, 0.5, 1.0}, cls)
	if seed.Attributes.Len() != 2 {
		t.Errorf("llm_tpot has attributes %v, want model_version and prompt_type only", seed.Attributes.ToSlice())
	}
	if seed.Sum != tpot.Sum {
		t.Errorf("llm_tpot sum %v != %s sum %v", seed.Sum, semconv.MetricServerTimePerOutputTok, tpot.Sum)
	}
	// ~2 ms per token: every request's TPOT is in the first llm_tpot bucket.
	if seed.BucketCounts[0] != requests {
		t.Errorf("llm_tpot buckets %v, want all %d in le=0.01", seed.BucketCounts, requests)
	}
	itl := check(semconv.MetricInterTokenLatency, requests*(tokens-1), instrument.BucketsTimePerOutputTok, cls)
	if v, _ := itl.Min.Value(); v < 0.001 {
		t.Errorf("ITL min %v s, want ≥ the engine's 2 ms gap", itl.Min)
	}
	for _, name := range []string{semconv.MetricClientTimeToFirstChunk, semconv.MetricClientOperationDuration} {
		if _, ok := ms[name]; ok {
			t.Errorf("client metric %s recorded by a Handler", name)
		}
	}
	usage := ms[semconv.MetricClientTokenUsage].Data.(metricdata.Histogram[int64])
	got := map[string]int64{}
	for _, p := range usage.DataPoints {
		tt, _ := p.Attributes.Value(semconv.GenAITokenType)
		got[tt.AsString()] += p.Sum
	}
	if got["output"] != requests*tokens || got["input"] != requests*7 {
		t.Errorf("token usage sums %v, want output %d, input %d", got, requests*tokens, requests*7)
	}
}

// TestMetricsTransportClientHistograms: a Transport used alone records the
// client-side GenAI histograms.
func TestMetricsTransportClientHistograms(t *testing.T) {
	tp, _ := newProvider(t, 0)
	mp, reader := newMeterProvider(t)
	const tokens = 6
	srv := httptest.NewServer(&engine{Tokens: tokens})
	defer srv.Close()
	client := &http.Client{Transport: instrument.Transport(nil, instrument.WithTracerProvider(tp), instrument.WithMeterProvider(mp))}
	resp, err := client.Do(newChatRequest(srv.URL, chatBody("m1", true, false)))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	ms := collect(t, reader)
	for name, want := range map[string]uint64{
		semconv.MetricClientTimeToFirstChunk:  1,
		semconv.MetricClientOperationDuration: 1,
		semconv.MetricClientTimePerOutputChnk: tokens - 1,
		semconv.MetricInterTokenLatency:       tokens - 1,
		semconv.MetricLLMTPOT:                 1,
	} {
		pts := float64Points(t, ms, name)
		if len(pts) != 1 || pts[0].Count != want {
			t.Errorf("%s: %d series, want one of count %d", name, len(pts), want)
			continue
		}
		if name != semconv.MetricLLMTPOT && name != semconv.MetricInterTokenLatency {
			if v, _ := pts[0].Attributes.Value(semconv.ServerAddress); v.AsString() != "127.0.0.1" {
				t.Errorf("%s: server.address %q", name, v.AsString())
			}
		}
	}
	if _, ok := ms[semconv.MetricServerTimeToFirstToken]; ok {
		t.Error("server metric recorded by a Transport")
	}
}

// TestMetricsCardinalityBounded floods unique model names (as a client
// could) and checks the series stay bounded, the excess folded into
// semconv.MetricValueOther.
func TestMetricsCardinalityBounded(t *testing.T) {
	tp, _ := newProvider(t, 0)
	mp, reader := newMeterProvider(t)
	const maxValues = 8
	srv := httptest.NewServer(instrument.Handler(&engine{Tokens: 2},
		instrument.WithTracerProvider(tp), instrument.WithMeterProvider(mp), instrument.WithMaxMetricValues(maxValues)))
	defer srv.Close()
	const flood = 300
	for i := range flood {
		model := fmt.Sprintf("model-%d-%s", i, strings.Repeat("x\t", 100)) // %q in chatBody: valid JSON
		resp, err := http.DefaultClient.Do(newChatRequest(srv.URL, chatBody(model, true, false)))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
	ms := collect(t, reader)
	pts := float64Points(t, ms, semconv.MetricServerRequestDuration)
	if len(pts) > maxValues+1 {
		t.Errorf("%d series after %d model names, want ≤ %d", len(pts), flood, maxValues+1)
	}
	var total, other uint64
	for _, p := range pts {
		total += p.Count
		v, _ := p.Attributes.Value(semconv.GenAIRequestModel)
		if v.AsString() == semconv.MetricValueOther {
			other += p.Count
		} else if len(v.AsString()) > 64 || strings.ContainsRune(v.AsString(), '\t') {
			t.Errorf("model value %q not normalised", v.AsString())
		}
	}
	if total != flood || other != flood-maxValues {
		t.Errorf("counted %d requests, %d as %s; want %d and %d", total, other, semconv.MetricValueOther, flood, flood-maxValues)
	}
}

// TestMetricsPrometheusScrape exports through the OpenTelemetry Prometheus
// exporter, scrapes it over loopback and parses the text with expfmt: the
// names the observability files query must be there.
func TestMetricsPrometheusScrape(t *testing.T) {
	tp, _ := newProvider(t, 0)
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	defer mp.Shutdown(context.Background())
	prom := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{}))
	defer prom.Close()
	srv := httptest.NewServer(instrument.Handler(&engine{Tokens: 5},
		instrument.WithTracerProvider(tp), instrument.WithMeterProvider(mp), instrument.WithClassifier(classify)))
	defer srv.Close()
	resp, err := http.DefaultClient.Do(newChatRequest(srv.URL, chatBody("m1", true, false)))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := instrument.Flush(ctx); err != nil {
		t.Fatal(err)
	}

	fams := scrape(t, prom.URL)
	for _, name := range []string{
		"llm_tpot",
		"gen_ai_server_time_to_first_token_seconds",
		"gen_ai_server_time_per_output_token_seconds",
		"gen_ai_server_request_duration_seconds",
		"tokentrace_inter_token_latency_seconds",
	} {
		f := fams[name]
		if f == nil || f.GetType() != dto.MetricType_HISTOGRAM {
			t.Errorf("scrape has no histogram %s; families: %v", name, familyNames(fams))
		}
	}
	f := fams["llm_tpot"]
	if f == nil {
		t.FailNow()
	}
	m := f.GetMetric()[0]
	labels := map[string]string{}
	for _, l := range m.GetLabel() {
		labels[l.GetName()] = l.GetValue()
	}
	if labels["model_version"] != "v2" || labels["prompt_type"] != "qa" {
		t.Errorf("llm_tpot labels %v", labels)
	}
	var les []float64
	for _, b := range m.GetHistogram().GetBucket() {
		if !math.IsInf(b.GetUpperBound(), 1) {
			les = append(les, b.GetUpperBound())
		}
	}
	if !slices.Equal(les, []float64{0.01, 0.05, 0.1, 0.5, 1.0}) {
		t.Errorf("llm_tpot buckets %v", les)
	}
	if m.GetHistogram().GetSampleCount() != 1 {
		t.Errorf("llm_tpot count %d", m.GetHistogram().GetSampleCount())
	}
}

func scrape(t testing.TB, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return fams
}

func familyNames(f map[string]*dto.MetricFamily) []string {
	var n []string
	for k := range f {
		n = append(n, k)
	}
	slices.Sort(n)
	return n
}

// BenchmarkMetrics measures what the metrics add to a 1,000-token stream,
// request path and background finisher together (ServeHTTP then Flush, as
// BenchmarkStream's "+finish" rows), beside the same without metrics:
// compare ns/token and allocs/token of the pairs. The per-token share of
// the metrics is the ITL Record of each gap; the rest is per request.
func BenchmarkMetrics(b *testing.B) {
	events := map[int][][]byte{streamTokens: vllmStream(streamTokens), 4 * streamTokens: vllmStream(4 * streamTokens)}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()), sdkmetric.WithExemplarFilter(exemplar.TraceBasedFilter))
	defer mp.Shutdown(context.Background())
	th := instrument.NewTokenHistograms()
	thmp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader(sdkmetric.WithProducer(th))))
	defer thmp.Shutdown(context.Background())
	cls := instrument.WithClassifier(classify)
	// The 4000-token rows show that what metrics allocate does not grow
	// with the stream (allocs/request as at 1,000 tokens).
	for _, bc := range []struct {
		name   string
		opts   []instrument.Option
		tokens int
	}{
		{"tracing-compact", []instrument.Option{cls, instrument.WithTokenRecording(instrument.RecordCompact)}, 0},
		{"tracing-compact+metrics", []instrument.Option{cls, instrument.WithTokenRecording(instrument.RecordCompact), instrument.WithMeterProvider(mp)}, 0},
		{"tracing", []instrument.Option{cls}, 0},
		{"tracing+metrics", []instrument.Option{cls, instrument.WithMeterProvider(mp)}, 0},
		{"tracing-compact+metrics+tokenhistograms", []instrument.Option{cls, instrument.WithTokenRecording(instrument.RecordCompact), instrument.WithMeterProvider(thmp), instrument.WithTokenHistograms(th)}, 0},
		{"tracing+metrics+tokenhistograms", []instrument.Option{cls, instrument.WithMeterProvider(thmp), instrument.WithTokenHistograms(th)}, 0},
		{"tracing-compact-4000tok", []instrument.Option{cls, instrument.WithTokenRecording(instrument.RecordCompact)}, 4 * streamTokens},
		{"tracing-compact+metrics+tokenhistograms-4000tok", []instrument.Option{cls, instrument.WithTokenRecording(instrument.RecordCompact), instrument.WithMeterProvider(thmp), instrument.WithTokenHistograms(th)}, 4 * streamTokens},
	} {
		b.Run(bc.name, func(b *testing.B) {
			defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(1))
			n := bc.tokens
			if n == 0 {
				n = streamTokens
			}
			h, _ := tokentraceWrap(bc.opts...)(b, &sseHandler{events: events[n]})
			w := newDiscardWriter()
			r, rewind := benchRequest()
			var before, after runtime.MemStats
			var mallocs uint64
			b.ResetTimer()
			for range b.N {
				b.StopTimer()
				flushFinisher(b)
				rewind()
				runtime.ReadMemStats(&before)
				b.StartTimer()
				h.ServeHTTP(w, r)
				flushFinisher(b)
				b.StopTimer()
				runtime.ReadMemStats(&after)
				mallocs += after.Mallocs - before.Mallocs
				b.StartTimer()
			}
			b.StopTimer()
			tokens := float64(b.N) * float64(n)
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/tokens, "ns/token")
			b.ReportMetric(float64(mallocs)/tokens, "allocs/token")
			b.ReportMetric(float64(mallocs)/float64(b.N), "allocs/request")
		})
	}
}
