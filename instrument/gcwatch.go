package instrument

import (
	"runtime/debug"
	"runtime/metrics"
	"sync"
	"time"

	"github.com/tokentrace/tokentrace/semconv"
)

// Defaults of WatchGoGC.
const (
	// DefaultGCPollInterval is how often the gateway's GC records are read.
	DefaultGCPollInterval = 100 * time.Millisecond
	// DefaultMinGCPause is the shortest Go GC pause recorded: shorter
	// pauses cannot explain a slow token and would only add events.
	DefaultMinGCPause = time.Millisecond
)

// WatchGoGC records the gateway's own Go garbage-collection pauses as
// gc_pause events (source gateway_go_gc) on every request in flight while
// they happened. It polls every interval (DefaultGCPollInterval if ≤ 0)
// and records pauses of at least minPause (DefaultMinGCPause if ≤ 0).
// Call the returned function to stop it.
//
// It reads the cheap runtime/metrics GC cycle counter each poll, and
// debug.ReadGCStats (which has pause end times) only when a cycle ended;
// it never calls runtime.ReadMemStats, which stops the world. A pause is
// the sum of a cycle's stop-the-world phases ending at its PauseEnd, so
// its start is approximate; the poll interval bounds how late it arrives.
func (t *Tracker) WatchGoGC(interval, minPause time.Duration) (stop func()) {
	if interval <= 0 {
		interval = DefaultGCPollInterval
	}
	if minPause <= 0 {
		minPause = DefaultMinGCPause
	}
	quit := make(chan struct{})
	done := make(chan struct{})
	go func() {
		defer close(done)
		w := newGCWatcher()
		tick := time.NewTicker(interval)
		defer tick.Stop()
		for {
			select {
			case <-quit:
				return
			case <-tick.C:
				w.poll(func(start time.Time, d time.Duration) {
					if d >= minPause {
						t.RecordGCPause("", GCPause{Source: semconv.SourceGatewayGoGC, Start: start, Duration: d})
					}
				})
			}
		}
	}()
	return sync.OnceFunc(func() {
		close(quit)
		<-done
	})
}

type gcWatcher struct {
	sample []metrics.Sample
	cycles uint64
	stats  debug.GCStats
	numGC  int64
}

func newGCWatcher() *gcWatcher {
	w := &gcWatcher{sample: []metrics.Sample{{Name: "/gc/cycles/total:gc-cycles"}}}
	metrics.Read(w.sample)
	w.cycles = w.sample[0].Value.Uint64()
	w.stats.Pause = make([]time.Duration, 0, 256)
	w.stats.PauseEnd = make([]time.Time, 0, 256)
	debug.ReadGCStats(&w.stats)
	w.numGC = w.stats.NumGC
	return w
}

// poll reports each GC pause that ended since the last poll.
func (w *gcWatcher) poll(report func(start time.Time, d time.Duration)) {
	metrics.Read(w.sample)
	if c := w.sample[0].Value.Uint64(); c == w.cycles {
		return
	} else {
		w.cycles = c
	}
	debug.ReadGCStats(&w.stats)
	n := int(w.stats.NumGC - w.numGC)
	w.numGC = w.stats.NumGC
	// Pause and PauseEnd hold the most recent cycles first.
	n = min(n, len(w.stats.Pause), len(w.stats.PauseEnd))
	for i := n - 1; i >= 0; i-- {
		d := w.stats.Pause[i]
		report(w.stats.PauseEnd[i].Add(-d), d)
	}
}
