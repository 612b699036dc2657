package instrument

import (
	"context"
	"math"
	"slices"
	"sort"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/trace"
)

// DefaultMaxTokenHistogramPoints bounds the attribute sets (data points)
// each histogram of a [TokenHistograms] keeps, as the metrics SDK's default
// cardinality limit does; later sets are counted in one point with the
// attribute otel.metric.overflow=true.
const DefaultMaxTokenHistogramPoints = 2000

// overflowSet is the attribute set of the overflow point, named as the
// metrics SDK names it.
var overflowSet = attribute.NewSet(attribute.Bool("otel.metric.overflow", true))

// TokenHistograms aggregates the histograms that take one measurement per
// gap between a stream's tokens — tokentrace.inter_token_latency and, for a
// Transport used alone, gen_ai.client.operation.time_per_output_chunk — and
// hands them to an OpenTelemetry metric reader as an [sdkmetric.Producer].
//
// Recorded through the metrics SDK, every gap is one Record (≈200 ns with
// its attribute set, see BenchmarkMetrics). A TokenHistograms counts a
// request's gaps into their buckets locally and merges them once per
// request, so a token costs a bucket lookup. The histograms are exactly
// those the SDK would make (same bucket edges, count, sum, min and max),
// with cumulative temporality, and one exemplar per bucket: the request's
// longest gap, with its trace, when the span is sampled.
//
// Register it with the reader that exports the other metrics, and pass it
// to the middleware with [WithTokenHistograms]:
//
//	th := instrument.NewTokenHistograms()
//	exp, _ := otelprom.New(otelprom.WithProducer(th))            // or
//	reader := sdkmetric.NewPeriodicReader(otlp, sdkmetric.WithProducer(th))
//
// Handlers sharing it should use the same inter-token buckets; points with
// other bucket edges are kept as separate histograms of the same name.
type TokenHistograms struct {
	start     time.Time
	maxPoints int

	mu    sync.RWMutex
	hists []*gapHistogram
}

var _ sdkmetric.Producer = (*TokenHistograms)(nil)

// NewTokenHistograms returns an empty TokenHistograms.
func NewTokenHistograms() *TokenHistograms {
	return &TokenHistograms{start: time.Now(), maxPoints: DefaultMaxTokenHistogramPoints}
}

// WithTokenHistograms makes the middleware record its per-gap histograms
// into th instead of through the meter provider's instruments (which it
// still uses for the per-request metrics). Without a meter provider, th
// alone gets metrics. Nil is ignored.
func WithTokenHistograms(th *TokenHistograms) Option {
	return optionFunc(func(c *config) {
		if th != nil {
			c.metricsCfg().tokenHists = th
		}
	})
}

// histogram returns the histogram of that name and bucket edges, made on
// first use.
func (th *TokenHistograms) histogram(name, unit, desc string, bounds []float64) *gapHistogram {
	th.mu.RLock()
	for _, h := range th.hists {
		if h.name == name && slices.Equal(h.bounds, bounds) {
			th.mu.RUnlock()
			return h
		}
	}
	th.mu.RUnlock()
	th.mu.Lock()
	defer th.mu.Unlock()
	for _, h := range th.hists {
		if h.name == name && slices.Equal(h.bounds, bounds) {
			return h
		}
	}
	h := newGapHistogram(name, unit, desc, bounds, th.maxPoints)
	th.hists = append(th.hists, h)
	return h
}

// Produce returns the histograms recorded so far (cumulative since
// NewTokenHistograms). It implements [sdkmetric.Producer].
func (th *TokenHistograms) Produce(context.Context) ([]metricdata.ScopeMetrics, error) {
	th.mu.RLock()
	hists := append([]*gapHistogram(nil), th.hists...)
	th.mu.RUnlock()
	now := time.Now()
	sm := metricdata.ScopeMetrics{Scope: instrumentation.Scope{Name: ScopeName, Version: Version}}
	for _, h := range hists {
		if m, ok := h.produce(th.start, now); ok {
			sm.Metrics = append(sm.Metrics, m)
		}
	}
	if len(sm.Metrics) == 0 {
		return nil, nil
	}
	return []metricdata.ScopeMetrics{sm}, nil
}

// gapHistogram is one explicit-bucket histogram of durations.
type gapHistogram struct {
	name, unit, desc string
	bounds           []float64
	// upper[i] is the longest duration whose Seconds() is ≤ bounds[i]: a
	// gap is bucketed by integer comparison, exactly as its float value
	// would be by the SDK.
	upper     []time.Duration
	maxPoints int

	mu     sync.RWMutex
	points map[attribute.Distinct]*gapPoint

	batches sync.Pool // *gapBatch, so that a request allocates none
}

func newGapHistogram(name, unit, desc string, bounds []float64, maxPoints int) *gapHistogram {
	h := &gapHistogram{
		name: name, unit: unit, desc: desc,
		bounds:    append([]float64(nil), bounds...),
		upper:     make([]time.Duration, len(bounds)),
		maxPoints: maxPoints,
		points:    make(map[attribute.Distinct]*gapPoint),
	}
	for i, b := range bounds {
		h.upper[i] = durationAtMost(b)
	}
	return h
}

// durationAtMost is the largest duration d with d.Seconds() ≤ s.
func durationAtMost(s float64) time.Duration {
	switch {
	case s >= float64(math.MaxInt64)/1e9:
		return math.MaxInt64
	case s < float64(math.MinInt64)/1e9:
		return math.MinInt64
	}
	d := time.Duration(math.Floor(s * 1e9))
	for d.Seconds() > s && d > math.MinInt64 {
		d--
	}
	for d < math.MaxInt64 && (d+1).Seconds() <= s {
		d++
	}
	return d
}

// gapPoint is one attribute set's cumulative histogram.
type gapPoint struct {
	attrs attribute.Set

	mu        sync.Mutex
	counts    []uint64
	count     uint64
	sum       time.Duration
	min, max  time.Duration
	exemplars []metricdata.Exemplar[float64] // per bucket; zero Time: none
}

// gapBatch is one request's gaps counted locally before they are merged.
type gapBatch struct {
	counts     []uint64
	count      uint64
	sum        time.Duration
	min, max   time.Duration
	worst      time.Duration
	worstIndex int // the offset index of the longest gap
}

// bucket returns the index of the bucket of d, starting from the guess
// (the previous gap's bucket: a stream's gaps are alike).
func (h *gapHistogram) bucket(d time.Duration, guess int) int {
	u := h.upper
	if guess < len(u) && d <= u[guess] && (guess == 0 || d > u[guess-1]) {
		return guess
	}
	if guess == len(u) && (len(u) == 0 || d > u[len(u)-1]) {
		return guess
	}
	return sort.Search(len(u), func(i int) bool { return d <= u[i] })
}

// count returns the gaps between consecutive offsets counted into a
// batch; give it back with putBatch.
func (h *gapHistogram) count(offs []time.Duration) *gapBatch {
	b, _ := h.batches.Get().(*gapBatch)
	if b == nil {
		b = &gapBatch{counts: make([]uint64, len(h.upper)+1)}
	}
	h.fill(b, offs)
	return b
}

func (h *gapHistogram) putBatch(b *gapBatch) { h.batches.Put(b) }

func (h *gapHistogram) fill(b *gapBatch, offs []time.Duration) {
	clear(b.counts)
	b.count, b.sum, b.worst, b.worstIndex = 0, 0, 0, 0
	if len(offs) < 2 {
		return
	}
	b.min, b.max = math.MaxInt64, math.MinInt64
	k := len(h.upper)
	for i := 1; i < len(offs); i++ {
		d := offs[i] - offs[i-1]
		k = h.bucket(d, k)
		b.counts[k]++
		b.sum += d
		b.min = min(b.min, d)
		if d > b.max {
			b.max = d
			b.worstIndex = i
		}
	}
	b.count = uint64(len(offs) - 1)
	b.worst = b.max
}

// record merges one request's gaps (offsets of its timed chunks) into the
// point of attrs; the longest gap becomes its bucket's exemplar when sc is
// sampled. worstAt is when that gap ended.
func (h *gapHistogram) record(attrs attribute.Set, b *gapBatch, sc trace.SpanContext, worstAt time.Time) {
	if b.count == 0 {
		return
	}
	p := h.point(attrs)
	p.mu.Lock()
	defer p.mu.Unlock()
	for i, n := range b.counts {
		p.counts[i] += n
	}
	if p.count == 0 {
		p.min, p.max = b.min, b.max
	} else {
		p.min, p.max = min(p.min, b.min), max(p.max, b.max)
	}
	p.count += b.count
	p.sum += b.sum
	if sc.IsSampled() {
		tid, sid := sc.TraceID(), sc.SpanID()
		e := &p.exemplars[h.bucket(b.worst, len(h.upper))]
		e.Time, e.Value = worstAt, b.worst.Seconds()
		e.TraceID = append(e.TraceID[:0], tid[:]...)
		e.SpanID = append(e.SpanID[:0], sid[:]...)
	}
}

// point returns the point of attrs, made on first use; past maxPoints new
// sets share the overflow point.
func (h *gapHistogram) point(attrs attribute.Set) *gapPoint {
	key := attrs.Equivalent()
	h.mu.RLock()
	p, ok := h.points[key]
	h.mu.RUnlock()
	if ok {
		return p
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	if p, ok := h.points[key]; ok {
		return p
	}
	if len(h.points) >= h.maxPoints-1 {
		attrs, key = overflowSet, overflowSet.Equivalent()
		if p, ok := h.points[key]; ok {
			return p
		}
	}
	p = &gapPoint{
		attrs:     attrs,
		counts:    make([]uint64, len(h.upper)+1),
		exemplars: make([]metricdata.Exemplar[float64], len(h.upper)+1),
	}
	h.points[key] = p
	return p
}

func (h *gapHistogram) produce(start, now time.Time) (metricdata.Metrics, bool) {
	h.mu.RLock()
	points := make([]*gapPoint, 0, len(h.points))
	for _, p := range h.points {
		points = append(points, p)
	}
	h.mu.RUnlock()
	if len(points) == 0 {
		return metricdata.Metrics{}, false
	}
	// A stable order: readers and tests compare collections.
	enc := attribute.DefaultEncoder()
	sort.Slice(points, func(i, j int) bool { return points[i].attrs.Encoded(enc) < points[j].attrs.Encoded(enc) })
	data := metricdata.Histogram[float64]{
		Temporality: metricdata.CumulativeTemporality,
		DataPoints:  make([]metricdata.HistogramDataPoint[float64], 0, len(points)),
	}
	for _, p := range points {
		p.mu.Lock()
		dp := metricdata.HistogramDataPoint[float64]{
			Attributes:   p.attrs,
			StartTime:    start,
			Time:         now,
			Count:        p.count,
			Bounds:       h.bounds,
			BucketCounts: append([]uint64(nil), p.counts...),
			Min:          metricdata.NewExtrema(p.min.Seconds()),
			Max:          metricdata.NewExtrema(p.max.Seconds()),
			Sum:          p.sum.Seconds(),
		}
		for _, e := range p.exemplars {
			if !e.Time.IsZero() {
				e.TraceID = append([]byte(nil), e.TraceID...)
				e.SpanID = append([]byte(nil), e.SpanID...)
				dp.Exemplars = append(dp.Exemplars, e)
			}
		}
		p.mu.Unlock()
		data.DataPoints = append(data.DataPoints, dp)
	}
	return metricdata.Metrics{Name: h.name, Description: h.desc, Unit: h.unit, Data: data}, true
}
