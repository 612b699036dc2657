package instrument

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/trace"
)

func TestDurationAtMost(t *testing.T) {
	for _, s := range append(slices.Clone(BucketsOperation), append(BucketsTimePerOutputTok, 0, 1e-10, 0.1+0.2, 1e-9, -0.5, 9.3e9, math.Inf(1))...) {
		d := durationAtMost(s)
		if d.Seconds() > s {
			t.Errorf("durationAtMost(%v) = %v: its seconds %v exceed the bound", s, d, d.Seconds())
		}
		if d < math.MaxInt64 && (d+1).Seconds() <= s {
			t.Errorf("durationAtMost(%v) = %v: %v is also ≤ the bound", s, d, d+1)
		}
	}
}

// offsetsOf turns gaps into the offsets of timed chunks.
func offsetsOf(gaps []time.Duration) []time.Duration {
	offs := []time.Duration{180 * time.Millisecond}
	for _, g := range gaps {
		offs = append(offs, offs[len(offs)-1]+g)
	}
	return offs
}

// TestGapHistogramMatchesSDK records the same gaps through the metrics SDK
// (one Record each, the fallback path) and through a gapHistogram and
// wants the same histogram: bucket edges land alike (gaps exactly on and
// one nanosecond either side of every edge included), count, min and max
// equal, sum within float rounding.
func TestGapHistogramMatchesSDK(t *testing.T) {
	bounds := BucketsTimePerOutputTok
	rng := rand.New(rand.NewPCG(1, 2))
	var streams [][]time.Duration
	for range 40 {
		var gaps []time.Duration
		n := 1 + rng.IntN(300)
		for range n {
			switch rng.IntN(4) {
			case 0: // an exact edge, or a nanosecond either side
				e := time.Duration(bounds[rng.IntN(len(bounds))] * 1e9)
				gaps = append(gaps, e+time.Duration(rng.IntN(3)-1))
			case 1: // a stall past the last edge
				gaps = append(gaps, time.Duration(2.5e9+rng.Float64()*3e9))
			default:
				gaps = append(gaps, time.Duration(rng.ExpFloat64()*30e6))
			}
		}
		streams = append(streams, gaps)
	}
	attrs := attribute.NewSet(attribute.String("prompt_type", "qa"))

	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	defer mp.Shutdown(context.Background())
	inst, err := mp.Meter("t").Float64Histogram("itl", metric.WithExplicitBucketBoundaries(bounds...))
	if err != nil {
		t.Fatal(err)
	}
	h := newGapHistogram("itl", "s", "", bounds, DefaultMaxTokenHistogramPoints)
	for _, gaps := range streams {
		for _, g := range gaps {
			inst.Record(context.Background(), g.Seconds(), metric.WithAttributeSet(attrs))
		}
		b := h.count(offsetsOf(gaps))
		h.record(attrs, b, trace.SpanContext{}, time.Now())
		h.putBatch(b)
	}
	var rm metricdata.ResourceMetrics
	if err := reader.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	want := rm.ScopeMetrics[0].Metrics[0].Data.(metricdata.Histogram[float64]).DataPoints[0]
	m, ok := h.produce(time.Now(), time.Now())
	if !ok {
		t.Fatal("nothing produced")
	}
	got := m.Data.(metricdata.Histogram[float64]).DataPoints[0]
	if !slices.Equal(got.BucketCounts, want.BucketCounts) || got.Count != want.Count {
		t.Errorf("buckets %v count %d, SDK %v count %d", got.BucketCounts, got.Count, want.BucketCounts, want.Count)
	}
	if math.Abs(got.Sum-want.Sum) > 1e-9*want.Sum {
		t.Errorf("sum %v, SDK %v", got.Sum, want.Sum)
	}
	for _, e := range [][2]metricdata.Extrema[float64]{{got.Min, want.Min}, {got.Max, want.Max}} {
		g, _ := e[0].Value()
		w, _ := e[1].Value()
		if g != w {
			t.Errorf("extremum %v, SDK %v", g, w)
		}
	}
	if !slices.Equal(got.Bounds, bounds) || !got.Attributes.Equals(&attrs) {
		t.Errorf("bounds %v attributes %v", got.Bounds, got.Attributes.ToSlice())
	}
}

// TestGapHistogramExemplarsAndOverflow: a sampled request's longest gap is
// its bucket's exemplar (an unsampled one leaves none), and past the point
// limit new attribute sets are counted in the overflow point.
func TestGapHistogramExemplarsAndOverflow(t *testing.T) {
	h := newGapHistogram("itl", "s", "", BucketsTimePerOutputTok, 3)
	sampled := trace.NewSpanContext(trace.SpanContextConfig{
		TraceID: trace.TraceID{1, 2, 3}, SpanID: trace.SpanID{4, 5}, TraceFlags: trace.FlagsSampled})
	unsampled := trace.NewSpanContext(trace.SpanContextConfig{TraceID: trace.TraceID{9}, SpanID: trace.SpanID{9}})
	at := time.Unix(1700000000, 0)
	rec := func(attrs attribute.Set, sc trace.SpanContext, gaps ...time.Duration) {
		b := h.count(offsetsOf(gaps))
		h.record(attrs, b, sc, at)
		h.putBatch(b)
	}
	a := attribute.NewSet(attribute.String("instance", "a"))
	rec(a, sampled, 15*time.Millisecond, 16*time.Millisecond, 120*time.Millisecond, 14*time.Millisecond)
	rec(a, unsampled, 15*time.Millisecond, 900*time.Millisecond)
	for i := range 5 {
		rec(attribute.NewSet(attribute.Int("n", i)), unsampled, time.Millisecond)
	}
	m, _ := h.produce(at, at)
	pts := m.Data.(metricdata.Histogram[float64]).DataPoints
	if len(pts) != 3 {
		t.Fatalf("%d points, want the limit 3", len(pts))
	}
	var overflow, first *metricdata.HistogramDataPoint[float64]
	for i := range pts {
		if v, ok := pts[i].Attributes.Value("otel.metric.overflow"); ok && v.AsBool() {
			overflow = &pts[i]
		}
		if pts[i].Attributes.Equals(&a) {
			first = &pts[i]
		}
	}
	if overflow == nil || first == nil {
		t.Fatalf("points %v", pts)
	}
	if overflow.Count != 4 { // sets n=1…4 once the limit was reached
		t.Errorf("overflow point counts %d gaps, want 4", overflow.Count)
	}
	if first.Count != 6 {
		t.Errorf("count %d, want 6", first.Count)
	}
	if len(first.Exemplars) != 1 {
		t.Fatalf("exemplars %v, want the sampled request's longest gap only", first.Exemplars)
	}
	e := first.Exemplars[0]
	if e.Value != 0.12 || !slices.Equal(e.TraceID, []byte{1, 2, 3, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0}) || !e.Time.Equal(at) {
		t.Errorf("exemplar %+v", e)
	}
}

// TestTokenHistogramsConcurrent records from many goroutines while
// collecting (run with -race): nothing is lost.
func TestTokenHistogramsConcurrent(t *testing.T) {
	th := NewTokenHistograms()
	const workers, requests, gaps = 8, 200, 50
	var wg sync.WaitGroup
	stop := make(chan struct{})
	go func() {
		for {
			select {
			case <-stop:
				return
			default:
				_, _ = th.Produce(context.Background())
			}
		}
	}()
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := th.histogram("itl", "s", "", BucketsTimePerOutputTok)
			attrs := attribute.NewSet(attribute.Int("w", w%3))
			g := make([]time.Duration, gaps)
			for i := range g {
				g[i] = time.Duration(i+1) * time.Millisecond
			}
			offs := offsetsOf(g)
			for range requests {
				b := h.count(offs)
				h.record(attrs, b, trace.SpanContext{}, time.Now())
				h.putBatch(b)
			}
		}()
	}
	wg.Wait()
	close(stop)
	sms, err := th.Produce(context.Background())
	if err != nil || len(sms) != 1 || len(sms[0].Metrics) != 1 {
		t.Fatalf("produced %v, %v", sms, err)
	}
	var total uint64
	for _, p := range sms[0].Metrics[0].Data.(metricdata.Histogram[float64]).DataPoints {
		total += p.Count
	}
	if total != workers*requests*gaps {
		t.Errorf("counted %d gaps, want %d", total, workers*requests*gaps)
	}
}
