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
// (a few hundred ns each in the SDK) never hold a response open. At most
// GOMAXPROCS workers complete spans at once; past maxPending waiting
// completions a request writes only the compact times, inline, and says so
// on the span: telemetry must not grow without bound when the gateway is
// busy.
//
// Handing a span over costs the request a mutex and an append, nothing
// more: while a worker is alive the request neither starts nor wakes a
// goroutine. Either would wake an OS thread when a P is idle (a futex
// wake, on a VM an inter-processor interrupt), which took 15–30 µs of the
// return path when every request started its own goroutine. Instead,
// workers drain the queue without sleeping while it holds jobs, and look
// at it on a timer when it is empty; the scheduler runs that timer, off
// the request path. The poll interval starts at minPoll after a job and
// doubles up to maxPoll while the queue stays empty, and Flush wakes a
// polling worker at once.
//
// A request starts a worker only when none is alive (the first request
// after idleTimeout without work); a worker starts another when it finds
// jobs still queued after taking one. Extra workers exit as soon as the
// queue is empty, the last one after idleTimeout of empty polls, so an
// idle process keeps no finisher goroutine (goleak stays clean).
type finisher struct {
	maxWorkers  int
	maxPending  int
	minPoll     time.Duration
	maxPoll     time.Duration
	idleTimeout time.Duration

	mu      sync.Mutex
	queue   []finishJob // waiting jobs: queue[head:]
	head    int
	pending int           // queued + being completed
	workers int           // alive
	idle    chan struct{} // made by a Flush that waits, closed when pending drops to 0
	kick    chan struct{} // Flush's wake-up for a polling worker
}

type finishJob struct {
	st     *reqState
	end    time.Time
	ctxErr error
}

// Defaults of the process-wide finisher.
const (
	// finisherMinPoll and finisherMaxPoll bound how long an ended span
	// waits for a polling worker: about 1 ms under steady traffic, at most
	// 16 ms after a lull. Spans are exported in batches every
	// DefaultBatchTimeout anyway.
	finisherMinPoll = time.Millisecond
	finisherMaxPoll = 16 * time.Millisecond
	// finisherIdleTimeout is how long the last worker keeps polling an
	// empty queue before it exits (about 9 polls). goleak's default
	// retries give up after about 0.4 s.
	finisherIdleTimeout = 100 * time.Millisecond
)

// finishers is process-wide because what it bounds, background CPU spent on
// telemetry, is a process-wide resource; Flush waits for it.
var finishers = newFinisher(runtime.GOMAXPROCS(0), DefaultMaxPendingFinishes, finisherMinPoll, finisherMaxPoll, finisherIdleTimeout)

func newFinisher(workers, maxPending int, minPoll, maxPoll, idleTimeout time.Duration) *finisher {
	return &finisher{
		maxWorkers:  max(workers, 1),
		maxPending:  maxPending,
		minPoll:     minPoll,
		maxPoll:     max(maxPoll, minPoll),
		idleTimeout: idleTimeout,
		kick:        make(chan struct{}, 1),
	}
}

func (f *finisher) submit(st *reqState, end time.Time, ctxErr error) {
	f.mu.Lock()
	if f.pending >= f.maxPending {
		f.mu.Unlock()
		st.complete(end, ctxErr, false)
		return
	}
	f.pending++
	f.queue = append(f.queue, finishJob{st: st, end: end, ctxErr: ctxErr})
	start := f.workers == 0
	if start {
		f.workers++
	}
	f.mu.Unlock()
	if start {
		go f.work()
	}
}

// work completes queued spans; see finisher.
func (f *finisher) work() {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	var idleSince time.Time
	poll := f.minPoll
	for {
		f.mu.Lock()
		if f.head < len(f.queue) {
			job := f.queue[f.head]
			f.queue[f.head] = finishJob{}
			f.head++
			if f.head == len(f.queue) {
				f.queue, f.head = f.queue[:0], 0
			}
			more := f.head < len(f.queue) && f.workers < f.maxWorkers
			if more {
				f.workers++
			}
			f.mu.Unlock()
			if more {
				go f.work()
			}
			job.st.complete(job.end, job.ctxErr, true)
			f.done()
			idleSince, poll = time.Time{}, f.minPoll
			continue
		}
		// Nothing queued: extra workers leave at once, the last one polls
		// until it has been idle for idleTimeout.
		if f.workers > 1 {
			f.workers--
			f.mu.Unlock()
			return
		}
		if now := time.Now(); idleSince.IsZero() {
			idleSince = now
		} else if now.Sub(idleSince) >= f.idleTimeout {
			f.workers--
			f.mu.Unlock()
			return
		}
		f.mu.Unlock()
		if timer == nil {
			timer = time.NewTimer(poll)
		} else {
			timer.Reset(poll)
		}
		select {
		case <-timer.C:
			poll = min(2*poll, f.maxPoll)
		case <-f.kick:
			poll = f.minPoll
		}
	}
}

func (f *finisher) done() {
	f.mu.Lock()
	f.pending--
	if f.pending == 0 && f.idle != nil {
		close(f.idle)
		f.idle = nil
	}
	f.mu.Unlock()
}

func (f *finisher) flush(ctx context.Context) error {
	f.mu.Lock()
	if f.pending == 0 {
		f.mu.Unlock()
		return nil
	}
	if f.idle == nil {
		f.idle = make(chan struct{})
	}
	idle := f.idle
	f.mu.Unlock()
	// Do not wait for the worker's next poll.
	select {
	case f.kick <- struct{}{}:
	default:
	}
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
