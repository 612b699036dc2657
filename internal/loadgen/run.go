package loadgen

import (
	"context"
	"math"
	"net/http"
	"sort"
	"sync"
	"time"
)

// Run sends the requests of cfg and measures them on the client side.
//
// Arrivals follow the seeded schedule (see [Schedule]). An arrival that
// finds Concurrency requests in flight waits for one to end (later
// arrivals queue behind it in order) and the wait is recorded. The
// arrivals stop at the first bound reached (Requests sent, Duration
// elapsed) or when Config.Stop is closed; the requests in flight then run
// to their end, and Run returns when the last one has.
//
// Cancelling ctx stops the arrivals and aborts the requests in flight
// (recorded as canceled); Run then returns promptly what it measured, with
// Stopped == StopCanceled and a nil error. Run returns an error only for
// an invalid config, and then no result.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	c, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	client := c.Client
	if client == nil {
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.MaxIdleConnsPerHost = max(c.Concurrency, 100)
		tr.DisableCompression = true // compressed streams arrive in bursts
		client = &http.Client{Transport: tr}
		defer tr.CloseIdleConnections()
	}
	q := &requester{client: client, baseURL: c.BaseURL, headers: c.Headers,
		includeUsage: c.IncludeUsage, seed: c.Seed}

	// The bar's target: the count bound, or the arrivals a fixed rate
	// makes in Duration; none (a spinner) for Poisson arrivals by time.
	target := max(c.Requests, 0)
	if c.Duration > 0 && !math.IsInf(c.Rate, 1) && c.Arrival == ArrivalFixed {
		if n := int(math.Ceil(c.Duration.Seconds() * c.Rate)); target == 0 || n < target {
			target = n
		}
	}
	prog := newProgress(c.Progress, target)

	res := &Result{Types: make([]string, len(c.Types))}
	for i, t := range c.Types {
		res.Types[i] = t.Name
	}
	var (
		mu      sync.Mutex
		wg      sync.WaitGroup
		records []Record
	)
	if c.Requests > 0 {
		records = make([]Record, 0, min(c.Requests, 1<<16))
	}
	var sem chan struct{}
	if c.Concurrency > 0 {
		sem = make(chan struct{}, c.Concurrency)
	}
	var deadline <-chan time.Time
	start := time.Now()
	res.Start = start
	if c.Duration > 0 {
		dt := time.NewTimer(c.Duration)
		defer dt.Stop()
		deadline = dt.C
	}
	timer := time.NewTimer(time.Hour)
	timer.Stop()
	defer timer.Stop()

	sched := newScheduler(c)
	// interrupted returns why the arrivals must stop now, or "".
	interrupted := func() StopReason {
		select {
		case <-ctx.Done():
			return StopCanceled
		case <-c.Stop:
			return StopStopped
		case <-deadline:
			return StopDuration
		default:
			return ""
		}
	}
	queued := false // the previous arrival waited for the limit
	for {
		a := sched.next()
		if c.Requests > 0 && a.Index >= c.Requests {
			res.Stopped = StopRequests
			break
		}
		if c.Duration > 0 && a.Offset >= c.Duration {
			res.Stopped = StopDuration
			break
		}
		// Wait until the arrival is due.
		due := start.Add(a.Offset)
		ready, overdue := time.Now(), false
		if d := due.Sub(ready); d > 0 {
			timer.Reset(d)
			select {
			case <-timer.C:
			case <-ctx.Done():
			case <-c.Stop:
			case <-deadline:
				res.Stopped = StopDuration
			}
			ready = time.Now()
		} else if queued {
			// Overdue because it queued behind the previous arrival: it
			// has been waiting since it was due. (Otherwise the timer's
			// own lateness is not a wait.)
			ready, overdue = due, true
		}
		if res.Stopped == StopDuration {
			break
		}
		if r := interrupted(); r != "" {
			res.Stopped = r
			break
		}
		// Take a place under the concurrency limit.
		var wait time.Duration
		if sem != nil {
			select {
			case sem <- struct{}{}:
				if overdue {
					wait = time.Since(ready)
				}
			default:
				select {
				case sem <- struct{}{}:
					wait = time.Since(ready)
				case <-ctx.Done():
					res.Stopped = StopCanceled
				case <-c.Stop:
					res.Stopped = StopStopped
				case <-deadline:
					res.Stopped = StopDuration
				}
			}
		}
		if res.Stopped == "" {
			// The bounds win over a place that came free at the same time.
			res.Stopped = interrupted()
			if res.Stopped == "" && c.Duration > 0 && time.Since(start) >= c.Duration {
				res.Stopped = StopDuration
			}
			if res.Stopped != "" && sem != nil {
				<-sem
			}
		}
		if res.Stopped != "" {
			break
		}
		queued = wait > 0
		t := c.Types[a.Type]
		wg.Add(1)
		go func() {
			defer wg.Done()
			rec := q.do(ctx, a, t)
			rec.Wait = wait
			if sem != nil {
				<-sem
			}
			mu.Lock()
			records = append(records, rec)
			mu.Unlock()
			prog.done(rec.OK() || rec.Canceled)
		}()
	}
	wg.Wait()
	res.Duration = time.Since(start)
	prog.finish()
	sort.Slice(records, func(i, j int) bool { return records[i].Index < records[j].Index })
	res.Records = records
	return res, nil
}
