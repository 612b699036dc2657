package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync/atomic"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/tokentrace/tokentrace/instrument"
	"github.com/tokentrace/tokentrace/semconv"
)

// Token is one output token as the engine produced it.
type Token struct {
	Index int
	Time  time.Time
}

// Request is one generation request inside the engine.
type Request struct {
	ID           string
	TraceID      trace.TraceID
	PromptTokens int
	MaxTokens    int

	// Tokens delivers every output token, then is closed. It is buffered
	// for MaxTokens so the engine never waits on a slow reader.
	Tokens <-chan Token

	out      chan Token
	canceled atomic.Bool
	arrived  time.Time
	ordinal  int

	// Scheduler state, owned by the engine goroutine.
	target       int // tokens to prefill: the prompt, or prompt+output after a recompute
	prefilled    int
	generated    int
	blocks       int
	prefillStart time.Time
	prefilling   bool
	preempted    bool
	preemptedAt  time.Time
	swapped      bool
	lastToken    time.Time
	pending      stepFlags // what happened since the last token
	gaps         []gapRecord
	first        time.Time
}

// Cancel tells the engine the client went away; its blocks are freed at
// the next step.
func (r *Request) Cancel() { r.canceled.Store(true) }

func (r *Request) context() int { return r.PromptTokens + r.generated }

// Engine is a simulated continuous-batching engine instance.
type Engine struct {
	cfg     Config
	rng     *rand.Rand
	tracker *instrument.Tracker
	metrics *Metrics
	truth   *TruthWriter

	arrivals chan *Request
	nextID   atomic.Int64
	admitted int

	waiting, running, swapped []*Request
	freeBlocks                int
	// simNow is the engine's own clock: the sum of its step costs plus idle
	// time, unscaled. GC is scheduled on it, so that the same submissions
	// give the same decisions at any TimeScale.
	simNow time.Duration
	nextGC time.Duration // 0: no GC
	active atomic.Int64

	done chan struct{}
}

// Option configures an Engine beyond its Config.
type Option func(*Engine)

// WithTracker makes the engine report every prefill, preemption and GC
// pause to t, on its instance, as it happens.
func WithTracker(t *instrument.Tracker) Option { return func(e *Engine) { e.tracker = t } }

// WithTruth makes the engine write a ground-truth record per request.
func WithTruth(w *TruthWriter) Option { return func(e *Engine) { e.truth = w } }

// New returns an engine; Run starts it.
func New(cfg Config, opts ...Option) (*Engine, error) {
	if err := cfg.setDefaults(); err != nil {
		return nil, err
	}
	e := &Engine{
		cfg:        cfg,
		rng:        rand.New(rand.NewPCG(cfg.Seed, cfg.Seed^0x9e3779b97f4a7c15)),
		metrics:    newMetrics(cfg.Model),
		arrivals:   make(chan *Request, 4096),
		freeBlocks: cfg.KV.Blocks,
		done:       make(chan struct{}),
	}
	for _, o := range opts {
		o(e)
	}
	return e, nil
}

// Config returns the engine's configuration with defaults applied.
func (e *Engine) Config() Config { return e.cfg }

// Metrics returns the engine's vLLM-compatible metrics.
func (e *Engine) Metrics() *Metrics { return e.metrics }

// ErrOverloaded is returned by Submit when the arrival queue is full.
var ErrOverloaded = errors.New("sim: engine queue full")

// Submit queues a request. The engine must be running.
func (e *Engine) Submit(promptTokens, maxTokens int, tid trace.TraceID) (*Request, error) {
	if promptTokens < 1 || maxTokens < 1 {
		return nil, fmt.Errorf("sim: prompt and max tokens must be ≥ 1 (got %d, %d)", promptTokens, maxTokens)
	}
	if promptTokens+maxTokens > e.cfg.Profile.MaxContext {
		return nil, fmt.Errorf("sim: prompt (%d) + max_tokens (%d) exceeds the context of %d tokens", promptTokens, maxTokens, e.cfg.Profile.MaxContext)
	}
	out := make(chan Token, maxTokens+1)
	r := &Request{
		ID:           fmt.Sprintf("chatcmpl-%s-%d", e.cfg.Instance, e.nextID.Add(1)),
		TraceID:      tid,
		PromptTokens: promptTokens,
		MaxTokens:    maxTokens,
		Tokens:       out,
		out:          out,
		arrived:      time.Now(),
		target:       promptTokens,
	}
	select {
	case e.arrivals <- r:
		e.active.Add(1)
		return r, nil
	default:
		return nil, ErrOverloaded
	}
}

// Run drives the scheduler until ctx is done.
func (e *Engine) Run(ctx context.Context) {
	defer close(e.done)
	e.scheduleGC()
	for {
		if len(e.running)+len(e.waiting)+len(e.swapped) == 0 {
			e.metrics.setQueue(0, 0, 0, 0)
			select {
			case r := <-e.arrivals: // already queued: no idle time
				e.waiting = append(e.waiting, r)
			default:
				idle := time.Now()
				select {
				case <-ctx.Done():
					return
				case r := <-e.arrivals:
					e.waiting = append(e.waiting, r)
				}
				e.simNow += time.Duration(float64(time.Since(idle)) / e.cfg.TimeScale)
			}
			if e.nextGC > 0 && e.nextGC < e.simNow {
				e.scheduleGC() // nobody saw the collections while idle
			}
		}
		for drained := false; !drained; {
			select {
			case r := <-e.arrivals:
				e.waiting = append(e.waiting, r)
			default:
				drained = true
			}
		}
		if ctx.Err() != nil {
			e.abortAll()
			return
		}
		e.step(ctx)
	}
}

// Wait blocks until Run returned.
func (e *Engine) Wait() { <-e.done }

func (e *Engine) abortAll() {
	for _, q := range [][]*Request{e.waiting, e.running, e.swapped} {
		for _, r := range q {
			close(r.out)
		}
	}
	e.waiting, e.running, e.swapped = nil, nil, nil
}

func (e *Engine) blocksFor(tokens int) int {
	if e.cfg.KV.Blocks == 0 {
		return 0
	}
	return (tokens + e.cfg.KV.BlockSize - 1) / e.cfg.KV.BlockSize
}

func (e *Engine) scheduleGC() {
	g := e.cfg.GC
	if g.Period <= 0 {
		return
	}
	d := g.Period
	if g.Random {
		d = time.Duration(e.rng.ExpFloat64() * float64(g.Period))
	} else if g.Jitter > 0 {
		d += time.Duration((e.rng.Float64()*2 - 1) * float64(g.Jitter))
	}
	e.nextGC = e.simNow + max(d, time.Millisecond)
}

func (e *Engine) scaled(d time.Duration) time.Duration {
	return time.Duration(float64(d) * e.cfg.TimeScale)
}

// dropCanceled removes requests whose client went away and frees their
// blocks.
func (e *Engine) dropCanceled() {
	keep := func(q []*Request) []*Request {
		return slices.DeleteFunc(q, func(r *Request) bool {
			if !r.canceled.Load() {
				return false
			}
			if !r.swapped {
				e.freeBlocks += r.blocks
			}
			r.blocks = 0
			close(r.out)
			e.active.Add(-1)
			return true
		})
	}
	e.waiting, e.running, e.swapped = keep(e.waiting), keep(e.running), keep(e.swapped)
}

// step plans one engine iteration, sleeps for its duration, and delivers
// its tokens.
func (e *Engine) step(ctx context.Context) {
	e.dropCanceled()
	var flags stepFlags
	var extra time.Duration // swap traffic

	// Swapped requests come back first, when their blocks fit.
	for len(e.swapped) > 0 && len(e.running) < e.cfg.MaxRunning && e.freeBlocks >= e.swapped[0].blocks {
		r := e.swapped[0]
		e.swapped = e.swapped[1:]
		e.freeBlocks -= r.blocks
		extra += time.Duration(r.blocks) * e.cfg.KV.SwapPerBlock
		r.swapped = false
		e.running = append(e.running, r)
		flags.swap = true
	}
	// Admit waiting requests in order while a sequence slot and the blocks
	// for their prompt are free.
	for len(e.waiting) > 0 && len(e.running) < e.cfg.MaxRunning {
		r := e.waiting[0]
		need := e.blocksFor(r.target + 1)
		if need > e.freeBlocks && e.cfg.KV.Blocks > 0 {
			break
		}
		e.waiting = e.waiting[1:]
		e.freeBlocks -= need
		r.blocks = need
		if r.ordinal == 0 {
			e.admitted++
			r.ordinal = e.admitted
		}
		e.running = append(e.running, r)
	}

	// Decoders need a block each time their context crosses a block edge;
	// when the cache is full, preempt the most recently admitted request.
	var decoders, prefillers []*Request
	split := func() {
		decoders, prefillers = decoders[:0], prefillers[:0]
		for _, r := range e.running {
			if r.prefilled >= r.target {
				decoders = append(decoders, r)
			} else {
				prefillers = append(prefillers, r)
			}
		}
	}
	split()
	if e.cfg.KV.Blocks > 0 {
		for {
			need := 0
			for _, r := range decoders {
				if e.blocksFor(r.context()+1) > r.blocks {
					need++
				}
			}
			if need <= e.freeBlocks || len(e.running) <= 1 {
				break
			}
			victim := e.running[len(e.running)-1]
			e.running = e.running[:len(e.running)-1]
			extra += e.preempt(victim)
			split()
		}
		for _, r := range decoders {
			if b := e.blocksFor(r.context() + 1); b > r.blocks && e.freeBlocks > 0 {
				e.freeBlocks -= b - r.blocks
				r.blocks = b
			}
		}
	}

	// Prefill work for this step.
	budget := math.MaxInt
	if e.cfg.Prefill.Chunked {
		budget = max(e.cfg.Prefill.TokenBudget-len(decoders), 0)
	}
	chunks := make([]int, len(prefillers))
	prefillTokens := 0
	for i, r := range prefillers {
		take := min(r.target-r.prefilled, budget)
		chunks[i] = take
		budget -= take
		prefillTokens += take
		if take > 0 {
			flags.prefillBy = append(flags.prefillBy, r.ID)
		}
	}
	ctxTokens := 0
	for _, r := range decoders {
		ctxTokens += r.context()
		if r.context() >= e.cfg.LongContext {
			flags.longBy = append(flags.longBy, r.ID)
		}
	}

	cost := e.cfg.Profile.StepCost(len(decoders), prefillTokens, ctxTokens)
	if w := e.cfg.Warmup; w.Requests > 0 && w.Slowdown > 0 {
		for _, r := range e.running {
			if r.ordinal <= w.Requests {
				cost = time.Duration(float64(cost) * (1 + w.Slowdown))
				flags.cold = true
				break
			}
		}
	}
	p := e.cfg.Profile
	if p.Noise > 0 {
		cost = time.Duration(float64(cost) * math.Exp(e.rng.NormFloat64()*p.Noise))
	}
	if p.SpikeProb > 0 && e.rng.Float64() < p.SpikeProb {
		cost = time.Duration(float64(cost) * p.SpikeFactor)
		flags.spike = true
	}
	cost += extra
	stepStart := time.Now()
	stepEnd := stepStart.Add(e.scaled(cost))
	e.simNow += cost
	flags.cost = cost
	var gcStart time.Time
	if e.nextGC > 0 && e.nextGC <= e.simNow {
		g := e.cfg.GC
		pause := g.MinPause + time.Duration(e.rng.Float64()*float64(g.MaxPause-g.MinPause))
		gcStart = stepEnd
		stepEnd = stepEnd.Add(e.scaled(pause))
		e.simNow += pause
		flags.cost += pause
		flags.gc = true
		e.scheduleGC()
	}
	e.metrics.setQueue(len(e.running), len(e.waiting), len(e.swapped), e.kvUsage())
	sleepUntil(ctx, stepEnd)
	now := time.Now()
	if flags.gc {
		e.metrics.gcCollections.WithLabelValues("2").Inc()
		if e.tracker != nil {
			e.tracker.RecordGCPause(e.cfg.Instance, instrument.GCPause{Source: semconv.SourceEngine, Start: gcStart, Duration: now.Sub(gcStart)})
		}
	}
	e.metrics.gcCollections.WithLabelValues("0").Inc()

	// What happened in this step touches every request still in flight.
	for _, q := range [][]*Request{e.running, e.waiting, e.swapped} {
		for _, r := range q {
			if r.generated > 0 {
				r.pending.merge(&flags, r.ID)
			}
		}
	}
	for i, r := range prefillers {
		if chunks[i] == 0 {
			continue
		}
		if !r.prefilling {
			r.prefilling = true
			r.prefillStart = stepStart
		}
		r.prefilled += chunks[i]
		if r.prefilled >= r.target {
			r.prefilling = false
			e.prefillDone(r, now)
			e.emit(r, now)
		}
	}
	for _, r := range decoders {
		e.emit(r, now)
	}
	e.running = slices.DeleteFunc(e.running, func(r *Request) bool {
		if r.generated < r.MaxTokens {
			return false
		}
		e.finish(r)
		return true
	})
}

func (e *Engine) kvUsage() float64 {
	if e.cfg.KV.Blocks == 0 {
		return 0
	}
	return 1 - float64(e.freeBlocks)/float64(e.cfg.KV.Blocks)
}

// preempt removes r from the batch; it returns the swap traffic time.
func (e *Engine) preempt(r *Request) time.Duration {
	// A request swapped back in and out again before it produced a token
	// (thrashing) is still in the same preemption: it began the first
	// time.
	if !r.preempted {
		r.preemptedAt = time.Now()
	}
	r.preempted = true
	r.pending.preempted = true
	e.metrics.preemptions.Inc()
	if e.cfg.KV.Swap {
		r.swapped = true
		e.freeBlocks += r.blocks
		e.swapped = append(e.swapped, r)
		return time.Duration(r.blocks) * e.cfg.KV.SwapPerBlock
	}
	e.freeBlocks += r.blocks
	r.blocks = 0
	r.target = r.PromptTokens + r.generated
	r.prefilled = 0
	r.prefilling = false
	e.waiting = append([]*Request{r}, e.waiting...)
	return 0
}

// prefillDone reports a finished prefill (first, or recompute) to the
// tracker, and the preemption it ended.
func (e *Engine) prefillDone(r *Request, now time.Time) {
	if e.tracker == nil {
		return
	}
	e.tracker.RecordPrefill(e.cfg.Instance, instrument.Prefill{
		TraceID: r.TraceID, RequestID: r.ID, PromptTokens: r.target,
		Start: r.prefillStart, Duration: now.Sub(r.prefillStart),
	})
}

func (e *Engine) emit(r *Request, now time.Time) {
	if r.preempted {
		r.preempted = false
		mode := semconv.PreemptionRecompute
		if e.cfg.KV.Swap {
			mode = semconv.PreemptionSwap
		}
		if e.tracker != nil {
			e.tracker.RecordPreemption(e.cfg.Instance, instrument.Preemption{
				TraceID: r.TraceID, RequestID: r.ID, Mode: mode,
				Start: r.preemptedAt, Duration: now.Sub(r.preemptedAt),
			})
		}
	}
	if r.generated == 0 {
		r.first = now
		e.metrics.ttft.Observe(now.Sub(r.arrived).Seconds())
	} else {
		gap := now.Sub(r.lastToken)
		e.metrics.itl.Observe(gap.Seconds())
		// The truth judges the simulated time, not the wall clock: a host
		// hiccup is no injected cause.
		r.gaps = append(r.gaps, gapRecord{at: now, gap: r.pending.cost, flags: r.pending})
	}
	r.pending = stepFlags{}
	r.lastToken = now
	r.out <- Token{Index: r.generated, Time: now}
	r.generated++
}

func (e *Engine) finish(r *Request) {
	e.freeBlocks += r.blocks
	r.blocks = 0
	if e.truth != nil {
		e.truth.write(e.cfg.Instance, r) // before close: a reader at EOF finds it
	}
	close(r.out)
	e.active.Add(-1)
	e.metrics.finished.Inc()
}

// Active is the number of requests submitted and not yet finished.
func (e *Engine) Active() int { return int(e.active.Load()) }

// timerSlack is how late a Go timer can fire: on Linux the runtime waits
// for timers in whole milliseconds, so a 1.3 ms timer fires after about
// 2 ms.
const timerSlack = time.Millisecond

// sleepUntil waits until t or until ctx is done. It sleeps on a timer until
// timerSlack before t and yields the processor in a loop for the rest, so
// that steps keep their length to a few microseconds: a timer alone would
// add up to a millisecond to every step (+50 % on the fast profile, more
// in scaled runs). The loop costs at most timerSlack of CPU per step.
func sleepUntil(ctx context.Context, t time.Time) {
	if d := time.Until(t) - timerSlack; d > 0 {
		timer := time.NewTimer(d)
		select {
		case <-timer.C:
		case <-ctx.Done():
			timer.Stop()
			return
		}
	}
	for time.Now().Before(t) && ctx.Err() == nil {
		runtime.Gosched()
	}
}

// stepFlags records what made steps slower since a request's last token.
type stepFlags struct {
	prefillBy []string // other requests whose prefill ran
	longBy    []string // other long-context requests decoding alongside
	gc        bool
	swap      bool
	preempted bool // this request was preempted
	cold      bool
	spike     bool
	// cost is the simulated (unscaled) time of the steps since the last
	// token.
	cost time.Duration
}

func (f *stepFlags) merge(s *stepFlags, self string) {
	for _, id := range s.prefillBy {
		if id != self && !slices.Contains(f.prefillBy, id) {
			f.prefillBy = append(f.prefillBy, id)
		}
	}
	for _, id := range s.longBy {
		if id != self && !slices.Contains(f.longBy, id) {
			f.longBy = append(f.longBy, id)
		}
	}
	f.gc = f.gc || s.gc
	f.swap = f.swap || s.swap
	f.cold = f.cold || s.cold
	f.spike = f.spike || s.spike
	f.cost += s.cost
}

type gapRecord struct {
	at    time.Time // when the token ending the gap was produced
	gap   time.Duration
	flags stepFlags
}
