package instrument_test

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"go.opentelemetry.io/otel/attribute"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/tokentrace/tokentrace/instrument"
	"github.com/tokentrace/tokentrace/semconv"
)

// stallEngine streams tokens 2 ms apart with one 60 ms stall before the
// fifth: every request's longest gap is that one.
func stallEngine(tokens int) *engine {
	return &engine{Tokens: tokens, Usage: true, Gap: func(i int) time.Duration {
		if i == 4 {
			return 60 * time.Millisecond
		}
		return 2 * time.Millisecond
	}}
}

func serve(t *testing.T, url string, requests int) {
	t.Helper()
	for range requests {
		resp, err := http.DefaultClient.Do(newChatRequest(url, chatBody("m1", true, true)))
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
	}
}

// TestTokenHistogramsThroughHandler: with a TokenHistograms registered on
// the reader, the inter-token latency comes from it (once: not also from
// the SDK), counted exactly, with the classification's attributes and the
// requests' traces as exemplars in the stall's bucket; the per-request
// metrics still come from the meter provider.
func TestTokenHistogramsThroughHandler(t *testing.T) {
	tp, rec := newProvider(t, 0)
	th := instrument.NewTokenHistograms()
	reader := sdkmetric.NewManualReader(sdkmetric.WithProducer(th))
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	const tokens, requests = 10, 4
	srv := httptest.NewServer(instrument.Handler(stallEngine(tokens), instrument.WithTracerProvider(tp),
		instrument.WithMeterProvider(mp), instrument.WithTokenHistograms(th), instrument.WithClassifier(classify)))
	defer srv.Close()
	serve(t, srv.URL, requests)
	traceIDs := map[string]bool{}
	for _, s := range endedSpans(t, rec) {
		traceIDs[s.SpanContext().TraceID().String()] = true
	}

	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	var itl metricdata.Histogram[float64]
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			seen[m.Name]++
			if m.Name == semconv.MetricInterTokenLatency {
				itl = m.Data.(metricdata.Histogram[float64])
				if sm.Scope.Name != instrument.ScopeName || m.Unit != "s" {
					t.Errorf("ITL scope %q unit %q", sm.Scope.Name, m.Unit)
				}
			}
		}
	}
	if seen[semconv.MetricInterTokenLatency] != 1 || seen[semconv.MetricLLMTPOT] != 1 || seen[semconv.MetricServerTimeToFirstToken] != 1 {
		t.Fatalf("metrics collected %v: want the ITL, llm_tpot and TTFT once each", seen)
	}
	if itl.Temporality != metricdata.CumulativeTemporality || len(itl.DataPoints) != 1 {
		t.Fatalf("ITL %+v", itl)
	}
	p := itl.DataPoints[0]
	if p.Count != requests*(tokens-1) {
		t.Errorf("ITL count %d, want %d", p.Count, requests*(tokens-1))
	}
	want := attribute.NewSet(semconv.MetricModelVersion.String("v2"), semconv.MetricPromptType.String("qa"),
		semconv.Instance.String(strings.TrimPrefix(srv.URL, "http://")))
	if !p.Attributes.Equals(&want) {
		t.Errorf("ITL attributes %v, want %v", p.Attributes.ToSlice(), want.ToSlice())
	}
	// The stalls: ≥ 60 ms, so past the 0.05 edge (buckets ≤ 0.01, 0.025,
	// 0.05, then 0.075…); the rest are in the first buckets.
	var slow uint64
	for i, c := range p.BucketCounts {
		if i >= 3 {
			slow += c
		}
	}
	if slow != requests {
		t.Errorf("buckets %v: %d gaps above 50 ms, want the %d stalls", p.BucketCounts, slow, requests)
	}
	if max, _ := p.Max.Value(); max < 0.06 {
		t.Errorf("max %v, want ≥ the 60 ms stall", max)
	}
	if len(p.Exemplars) != 1 {
		t.Fatalf("exemplars %+v, want one: the stall bucket's latest", p.Exemplars)
	}
	if e := p.Exemplars[0]; e.Value < 0.06 || !traceIDs[fmt.Sprintf("%x", e.TraceID)] {
		t.Errorf("exemplar value %v trace %x: want the stall of a request", e.Value, e.TraceID)
	}
}

// TestTokenHistogramsAloneAndTransport: without a meter provider a
// TokenHistograms alone gets the per-gap histograms; a Transport used alone
// adds the client time per output chunk with the GenAI attributes.
func TestTokenHistogramsAloneAndTransport(t *testing.T) {
	tp, _ := newProvider(t, 0)
	th := instrument.NewTokenHistograms()
	const tokens = 7
	srv := httptest.NewServer(stallEngine(tokens))
	defer srv.Close()
	client := &http.Client{Transport: instrument.Transport(nil, instrument.WithTracerProvider(tp), instrument.WithTokenHistograms(th))}
	resp, err := client.Do(newChatRequest(srv.URL, chatBody("m1", true, true)))
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if err := instrument.Flush(context.Background()); err != nil {
		t.Fatal(err)
	}
	sms, err := th.Produce(context.Background())
	if err != nil || len(sms) != 1 {
		t.Fatalf("Produce: %v, %v", sms, err)
	}
	got := map[string]metricdata.HistogramDataPoint[float64]{}
	for _, m := range sms[0].Metrics {
		pts := m.Data.(metricdata.Histogram[float64]).DataPoints
		if len(pts) != 1 {
			t.Fatalf("%s: %d points", m.Name, len(pts))
		}
		got[m.Name] = pts[0]
	}
	if len(got) != 2 || got[semconv.MetricInterTokenLatency].Count != tokens-1 || got[semconv.MetricClientTimePerOutputChnk].Count != tokens-1 {
		t.Fatalf("produced %v", got)
	}
	tpoc := got[semconv.MetricClientTimePerOutputChnk]
	if v, _ := tpoc.Attributes.Value(semconv.ServerAddress); v.AsString() != "127.0.0.1" {
		t.Errorf("client TPOC server.address %q", v.AsString())
	}
	if v, _ := tpoc.Attributes.Value(semconv.GenAIRequestModel); v.AsString() != "m1" {
		t.Errorf("client TPOC model %q", v.AsString())
	}
	if !slicesEqual(tpoc.Bounds, instrument.BucketsOperation) {
		t.Errorf("client TPOC bounds %v", tpoc.Bounds)
	}
}

func slicesEqual(a, b []float64) bool {
	return fmt.Sprint(a) == fmt.Sprint(b)
}

// exemplarLine matches an OpenMetrics bucket line with an exemplar.
var exemplarLine = regexp.MustCompile(`^(\w+)_bucket\{[^}]*\} \d+ # \{[^}]*trace_id="([0-9a-f]{32})"[^}]*\} ([0-9.e+-]+)`)

// TestMetricsOpenMetricsExemplars scrapes the OpenTelemetry Prometheus
// exporter in the OpenMetrics format, as Prometheus does with exemplar
// storage on: the histograms recorded per request (through the SDK) and
// the inter-token latency (through a TokenHistograms) carry exemplars whose
// trace ids are the requests' — what Grafana follows to Jaeger.
func TestMetricsOpenMetricsExemplars(t *testing.T) {
	tp, rec := newProvider(t, 0)
	th := instrument.NewTokenHistograms()
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg), otelprom.WithProducer(th))
	if err != nil {
		t.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	defer mp.Shutdown(context.Background())
	prom := httptest.NewServer(promhttp.HandlerFor(reg, promhttp.HandlerOpts{EnableOpenMetrics: true}))
	defer prom.Close()
	srv := httptest.NewServer(instrument.Handler(stallEngine(8), instrument.WithTracerProvider(tp),
		instrument.WithMeterProvider(mp), instrument.WithTokenHistograms(th), instrument.WithClassifier(classify)))
	defer srv.Close()
	serve(t, srv.URL, 3)
	traceIDs := map[string]bool{}
	for _, s := range endedSpans(t, rec) {
		traceIDs[s.SpanContext().TraceID().String()] = true
	}

	req, _ := http.NewRequest(http.MethodGet, prom.URL, nil)
	req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0; charset=utf-8")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "application/openmetrics-text") {
		t.Fatalf("content type %q", ct)
	}
	exemplars := map[string]int{}
	types := map[string]int{}
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if strings.HasPrefix(line, "# TYPE ") {
			types[strings.Fields(line)[2]]++
		}
		m := exemplarLine.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if !traceIDs[m[2]] {
			t.Errorf("%s exemplar trace id %s is not a request's", m[1], m[2])
		}
		exemplars[m[1]]++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"llm_tpot", "gen_ai_server_time_to_first_token_seconds", "tokentrace_inter_token_latency_seconds"} {
		if exemplars[name] == 0 {
			t.Errorf("no exemplar on %s; exemplars %v", name, exemplars)
		}
		if types[name] != 1 {
			t.Errorf("%s declared %d times", name, types[name])
		}
	}
}
