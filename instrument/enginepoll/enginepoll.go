// Package enginepoll turns an inference engine's Prometheus metrics into
// engine events on the spans of the requests in flight on it.
//
// A Poller reads a vLLM or SGLang /metrics endpoint every Interval (default
// 250 ms) and compares each read with the previous one. When, between two
// reads,
//
//   - the preemption counter rose (vllm:num_preemptions_total,
//     sglang:num_retractions), it records a recompute preemption;
//   - the swapped-request gauge rose (vllm:num_requests_swapped, vLLM V0),
//     a swap preemption;
//   - the KV-cache usage (vllm:kv_cache_usage_perc, vllm:gpu_cache_usage_perc,
//     sglang:token_usage) rose to or past KVThreshold, a kv_cache_high event;
//   - python_gc_collections_total{generation="2"} rose, a GC pause;
//
// on the instrument.Tracker, for the requests in flight on Instance. Each
// event spans the poll window (from the previous read to this one) and
// carries it as its uncertainty, with tokentrace.engine.source "metrics":
// a poll says that something happened in the window, not exactly when.
//
// The exposition is parsed with github.com/prometheus/common/expfmt. An
// endpoint that cannot be reached or does not answer with metrics is
// logged once (and once more when it recovers); it never affects requests:
// the poller runs on its own goroutine and only calls the Tracker's Record
// methods, which never block on the network.
package enginepoll

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"net/url"
	"sync"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/tokentrace/tokentrace/instrument"
	"github.com/tokentrace/tokentrace/semconv"
)

// Defaults of Config.
const (
	DefaultInterval    = 250 * time.Millisecond
	DefaultKVThreshold = 0.95
	// maxBody bounds one exposition read.
	maxBody = 16 << 20
)

// Metric names read, by what they mean. The first present is used.
var (
	preemptionNames = []string{"vllm:num_preemptions_total", "vllm:num_preemptions", "sglang:num_retractions", "sglang:num_retractions_total"}
	swappedNames    = []string{"vllm:num_requests_swapped"}
	kvUsageNames    = []string{"vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage"}
	gcNames         = []string{"python_gc_collections_total"}
)

// Config says what to poll.
type Config struct {
	// URL is the metrics endpoint, e.g. http://127.0.0.1:8000/metrics.
	URL string
	// Instance is the instance name the Tracker knows the engine's
	// requests by. Default: URL's host:port, which is what the Transport
	// names an instance by default.
	Instance string
	// Interval between reads. Default: DefaultInterval.
	Interval time.Duration
	// KVThreshold is the KV-cache usage (0–1) whose crossing is an event.
	// Default: DefaultKVThreshold.
	KVThreshold float64
	// Client makes the requests. Default: a client with a timeout of
	// Interval (at least 1 s).
	Client *http.Client
	// Logger gets the failures (each logged once). Default: slog.Default().
	Logger *slog.Logger
}

// Poller polls one engine's metrics endpoint.
type Poller struct {
	tracker  *instrument.Tracker
	url      string
	instance string
	interval time.Duration
	kvThresh float64
	client   *http.Client
	log      *slog.Logger

	mu     sync.Mutex // serialises Poll
	prev   *snapshot
	prevAt time.Time
	failed bool // the last poll failed (and was logged)
}

// New returns a poller of cfg.URL that records onto t.
func New(t *instrument.Tracker, cfg Config) (*Poller, error) {
	if t == nil {
		return nil, errors.New("enginepoll: nil tracker")
	}
	u, err := url.Parse(cfg.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("enginepoll: %q is not an http(s) URL", cfg.URL)
	}
	p := &Poller{
		tracker:  t,
		url:      cfg.URL,
		instance: cfg.Instance,
		interval: cfg.Interval,
		kvThresh: cfg.KVThreshold,
		client:   cfg.Client,
		log:      cfg.Logger,
	}
	if p.instance == "" {
		p.instance = u.Host
		if u.Port() == "" {
			if u.Scheme == "https" {
				p.instance += ":443"
			} else {
				p.instance += ":80"
			}
		}
	}
	if p.interval <= 0 {
		p.interval = DefaultInterval
	}
	if p.kvThresh <= 0 {
		p.kvThresh = DefaultKVThreshold
	}
	if p.client == nil {
		p.client = &http.Client{Timeout: max(p.interval, time.Second)}
	}
	if p.log == nil {
		p.log = slog.Default()
	}
	return p, nil
}

// Instance is the instance the poller's events go to.
func (p *Poller) Instance() string { return p.instance }

// Start polls every interval on a goroutine of its own until ctx is done
// or the returned stop is called; stop waits for the goroutine to end.
func (p *Poller) Start(ctx context.Context) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(p.interval)
		defer tick.Stop()
		_ = p.Poll(ctx)
		for {
			select {
			case <-ctx.Done():
				return
			case <-tick.C:
				_ = p.Poll(ctx)
			}
		}
	}()
	var once sync.Once
	return func() { once.Do(func() { cancel(); <-done }) }
}

// Poll reads the endpoint once and records the events since the previous
// successful read. The first read (and the first after a failure) only
// sets the baseline. The error is also logged, once per run of failures.
func (p *Poller) Poll(ctx context.Context) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	s, err := p.read(ctx)
	now := time.Now()
	if err != nil {
		if ctx.Err() != nil {
			return err // stopped mid-read: not the endpoint's fault
		}
		if !p.failed {
			p.failed = true
			p.log.Warn("engine metrics unavailable; no engine events from them until they are (logged once)",
				"url", p.url, "instance", p.instance, "err", err)
		}
		p.prev = nil
		return err
	}
	if p.failed {
		p.failed = false
		p.log.Info("engine metrics available again", "url", p.url, "instance", p.instance)
	}
	if p.prev != nil {
		p.diff(p.prev, s, p.prevAt, now)
	}
	p.prev, p.prevAt = s, now
	return nil
}

// snapshot holds the values read, NaN-free; has* say whether present.
type snapshot struct {
	preemptions, swapped, kvUsage, gc2    float64
	hasPreempt, hasSwapped, hasKV, hasGC2 bool
}

func (p *Poller) read(ctx context.Context) (*snapshot, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, p.url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "text/plain;version=0.0.4")
	resp, err := p.client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 4096))
		return nil, fmt.Errorf("status %s", resp.Status)
	}
	if ct := resp.Header.Get("Content-Type"); ct != "" {
		if mt, _, err := mime.ParseMediaType(ct); err == nil && mt != "text/plain" && mt != "application/openmetrics-text" {
			return nil, fmt.Errorf("content type %q is not the Prometheus text format", ct)
		}
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(io.LimitReader(resp.Body, maxBody))
	if err != nil {
		return nil, fmt.Errorf("parsing the exposition: %w", err)
	}
	if len(fams) == 0 {
		return nil, errors.New("no metrics in the exposition")
	}
	s := &snapshot{}
	s.preemptions, s.hasPreempt = sum(fams, preemptionNames, nil)
	s.swapped, s.hasSwapped = sum(fams, swappedNames, nil)
	s.kvUsage, s.hasKV = maxOf(fams, kvUsageNames)
	s.gc2, s.hasGC2 = sum(fams, gcNames, func(m *dto.Metric) bool {
		for _, l := range m.GetLabel() {
			if l.GetName() == "generation" {
				return l.GetValue() == "2"
			}
		}
		return false
	})
	return s, nil
}

func value(m *dto.Metric) float64 {
	switch {
	case m.Counter != nil:
		return m.GetCounter().GetValue()
	case m.Gauge != nil:
		return m.GetGauge().GetValue()
	case m.Untyped != nil:
		return m.GetUntyped().GetValue()
	}
	return 0
}

// sum adds the series of the first family present among names (across
// label sets, e.g. one per model), those keep accepts.
func sum(fams map[string]*dto.MetricFamily, names []string, keep func(*dto.Metric) bool) (float64, bool) {
	for _, n := range names {
		f := fams[n]
		if f == nil {
			continue
		}
		total, any := 0.0, false
		for _, m := range f.GetMetric() {
			if keep != nil && !keep(m) {
				continue
			}
			if v := value(m); v == v { // not NaN
				total += v
				any = true
			}
		}
		return total, any
	}
	return 0, false
}

func maxOf(fams map[string]*dto.MetricFamily, names []string) (float64, bool) {
	for _, n := range names {
		f := fams[n]
		if f == nil {
			continue
		}
		best, any := 0.0, false
		for _, m := range f.GetMetric() {
			if v := value(m); v == v && (!any || v > best) {
				best, any = v, true
			}
		}
		return best, any
	}
	return 0, false
}

// diff records what changed between two reads taken at from and to.
func (p *Poller) diff(a, b *snapshot, from, to time.Time) {
	window := to.Sub(from)
	if a.hasPreempt && b.hasPreempt && b.preemptions > a.preemptions {
		p.tracker.RecordPreemption(p.instance, instrument.Preemption{
			Mode:        semconv.PreemptionRecompute,
			Start:       from,
			Duration:    window,
			Count:       count(b.preemptions - a.preemptions),
			Uncertainty: window,
			Source:      semconv.SourceMetrics,
		})
	}
	if a.hasSwapped && b.hasSwapped && b.swapped > a.swapped {
		p.tracker.RecordPreemption(p.instance, instrument.Preemption{
			Mode:        semconv.PreemptionSwap,
			Start:       from,
			Duration:    window,
			Count:       count(b.swapped - a.swapped),
			Uncertainty: window,
			Source:      semconv.SourceMetrics,
		})
	}
	if a.hasKV && b.hasKV && a.kvUsage < p.kvThresh && b.kvUsage >= p.kvThresh {
		p.tracker.RecordKVCacheHigh(p.instance, instrument.KVCacheHigh{
			Usage:       b.kvUsage,
			Threshold:   p.kvThresh,
			Start:       from,
			Duration:    window,
			Uncertainty: window,
			Source:      semconv.SourceMetrics,
		})
	}
	if a.hasGC2 && b.hasGC2 && b.gc2 > a.gc2 {
		// The pause happened somewhere in the window; its length is not
		// in the counters.
		p.tracker.RecordGCPause(p.instance, instrument.GCPause{
			Source:      semconv.SourceMetrics,
			Start:       from,
			Duration:    window,
			Uncertainty: window,
		})
	}
	// A counter that went down was reset (engine restart): the new value
	// is the baseline, which the caller stores.
}

func count(d float64) int {
	if d >= 1<<30 {
		return 1 << 30
	}
	return max(int(d+0.5), 1)
}
