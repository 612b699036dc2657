package instrument

import (
	"context"
	"runtime"
	"sync"
	"time"

	"github.com/tokentrace/tokentrace/instrument/tokentimes"
)

// finisher writes the token events of ended requests and ends their spans
// in the background, so that the thousand AddEvent calls of a long stream
// (about 0.8 µs each in the SDK) never hold a response open. It runs at
// most GOMAXPROCS span completions at once; past maxPending waiting
// completions it writes only the compact times, inline, and says so on the
// span: telemetry must not grow without bound when the gateway is busy.
type finisher struct {
	sem        chan struct{}
	maxPending int

	mu      sync.Mutex
	pending int
	idle    chan struct{} // closed while pending == 0
}

// finishers is process-wide because what it bounds, background CPU spent on
// telemetry, is a process-wide resource; Flush waits for it.
var finishers = newFinisher(runtime.GOMAXPROCS(0), DefaultMaxPendingFinishes)

func newFinisher(workers, maxPending int) *finisher {
	f := &finisher{sem: make(chan struct{}, max(workers, 1)), maxPending: maxPending, idle: make(chan struct{})}
	close(f.idle)
	return f
}

func (f *finisher) submit(st *reqState, end time.Time, ctxErr error) {
	f.mu.Lock()
	if f.pending >= f.maxPending {
		f.mu.Unlock()
		st.complete(end, ctxErr, false)
		return
	}
	if f.pending == 0 {
		f.idle = make(chan struct{})
	}
	f.pending++
	f.mu.Unlock()
	go func() {
		defer f.done()
		f.sem <- struct{}{}
		defer func() { <-f.sem }()
		st.complete(end, ctxErr, true)
	}()
}

func (f *finisher) done() {
	f.mu.Lock()
	f.pending--
	if f.pending == 0 {
		close(f.idle)
	}
	f.mu.Unlock()
}

func (f *finisher) flush(ctx context.Context) error {
	f.mu.Lock()
	idle := f.idle
	f.mu.Unlock()
	select {
	case <-idle:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Flush waits until every request that has ended has its span ended (its
// token events written), or ctx is done. Call it before shutting down the
// TracerProvider; the provider from [NewTracerProvider] does so itself.
func Flush(ctx context.Context) error { return finishers.flush(ctx) }

func encodeTimes(offs []time.Duration) string { return tokentimes.Encode(offs) }

func encodeCounts(c []uint32) string { return tokentimes.EncodeCounts(c) }
