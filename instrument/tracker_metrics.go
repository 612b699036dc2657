package instrument

import (
	"time"

	"go.opentelemetry.io/otel/attribute"

	"github.com/tokentrace/tokentrace/semconv"
)

// KVCacheHigh describes an engine instance's KV-cache usage rising to or
// past a threshold: the batch is about to run out of blocks, and requests
// may be preempted or queued.
type KVCacheHigh struct {
	Usage     float64 // 0–1, as read
	Threshold float64 // 0–1
	// Start and Duration bound when it crossed (e.g. the poll window).
	Start       time.Time
	Duration    time.Duration
	Uncertainty time.Duration
	// Source is who reported it (default semconv.SourceMetrics).
	Source string
}

// RecordKVCacheHigh writes a kv_cache_high event on every request in
// flight on instance that started before the window ended.
func (t *Tracker) RecordKVCacheHigh(instance string, k KVCacheHigh) {
	attrs := []attribute.KeyValue{
		semconv.EngineSource.String(orDefault(k.Source, semconv.SourceMetrics)),
		semconv.EngineDurationMillis.Float64(millis(k.Duration)),
		semconv.KVCacheUsage.Float64(k.Usage),
		semconv.KVCacheThreshold.Float64(k.Threshold),
	}
	if k.Uncertainty > 0 {
		attrs = append(attrs, semconv.EngineUncertaintyMillis.Float64(millis(k.Uncertainty)))
	}
	t.deliver(instance, engineEvent{name: semconv.KVCacheHighEvent, at: k.Start, dur: k.Duration, attrs: attrs}, nil, nil)
}
