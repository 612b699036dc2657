package sim

import (
	"net/http"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
)

// Metrics are the engine's vLLM-compatible Prometheus metrics, on a
// registry of their own (several engines can run in one process).
type Metrics struct {
	reg           *prometheus.Registry
	preemptions   prometheus.Counter
	running       prometheus.Gauge
	waiting       prometheus.Gauge
	swapped       prometheus.Gauge
	kvUsage       prometheus.Gauge
	finished      prometheus.Counter
	gcCollections *prometheus.CounterVec
	ttft          prometheus.Histogram
	itl           prometheus.Histogram
}

func newMetrics(model string) *Metrics {
	labels := prometheus.Labels{"model_name": model}
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		preemptions: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vllm:num_preemptions_total", Help: "Cumulative number of preemptions from the engine.", ConstLabels: labels}),
		running: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vllm:num_requests_running", Help: "Number of requests in model execution batches.", ConstLabels: labels}),
		waiting: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vllm:num_requests_waiting", Help: "Number of requests waiting to be processed.", ConstLabels: labels}),
		swapped: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vllm:num_requests_swapped", Help: "Number of requests swapped to CPU (vLLM V0).", ConstLabels: labels}),
		kvUsage: prometheus.NewGauge(prometheus.GaugeOpts{
			Name: "vllm:kv_cache_usage_perc", Help: "KV-cache usage. 1 means 100 percent usage.", ConstLabels: labels}),
		finished: prometheus.NewCounter(prometheus.CounterOpts{
			Name: "vllm:request_success_total", Help: "Count of successfully processed requests.", ConstLabels: labels}),
		gcCollections: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "python_gc_collections_total", Help: "Number of times this generation was collected"}, []string{"generation"}),
		ttft: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "vllm:time_to_first_token_seconds", Help: "Histogram of time to first token in seconds.", ConstLabels: labels,
			Buckets: []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0}}),
		itl: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name: "vllm:inter_token_latency_seconds", Help: "Histogram of inter-token latency in seconds.", ConstLabels: labels,
			Buckets: []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5}}),
	}
	m.reg.MustRegister(m.preemptions, m.running, m.waiting, m.swapped, m.kvUsage, m.finished, m.gcCollections, m.ttft, m.itl)
	for _, g := range []string{"0", "1", "2"} {
		m.gcCollections.WithLabelValues(g)
	}
	return m
}

func (m *Metrics) setQueue(running, waiting, swapped int, kv float64) {
	m.running.Set(float64(running))
	m.waiting.Set(float64(waiting))
	m.swapped.Set(float64(swapped))
	m.kvUsage.Set(kv)
}

// Handler serves the metrics in the Prometheus text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// Registry is the registry holding the metrics.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }
