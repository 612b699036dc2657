package jaegerquery

import (
	"context"
	"encoding/hex"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/tokentrace/tokentrace/analyzer/model"
	"github.com/tokentrace/tokentrace/analyzer/source"
	du "github.com/tokentrace/tokentrace/analyzer/source/internal/decodeutil"
	"github.com/tokentrace/tokentrace/semconv"
)

// Query says which traces to fetch.
type Query struct {
	// Service is required to search (Jaeger's storage backends index
	// traces by service). Operation (a span name) is optional.
	Service, Operation string
	// Start and End bound the start times of the spans searched. Default:
	// End is now, Start is End - DefaultLookback.
	Start, End time.Time
	// MinDuration and MaxDuration bound span durations (0: no bound).
	MinDuration, MaxDuration time.Duration
	// Attributes must all be on one span of a trace for it to match, as
	// Jaeger's search understands tags. Short names are accepted (see
	// AttributeKey): "model" (gen_ai.request.model), "prompt_type"
	// (tokentrace.prompt_type), "instance" (tokentrace.instance),
	// "model_version" (tokentrace.model_version); other keys are
	// attribute names. They are sent as tags (api_v2, legacy HTTP) or
	// attributes (api_v3 gRPC). api_v3 over HTTP cannot filter on
	// attributes: the traces are then filtered here, after decoding, which
	// also means the search depth counts traces before that filter.
	Attributes map[string]string
	// Limit is the search depth: the most traces one FindTraces call
	// returns. Always 1 ≤ depth ≤ MaxLimit is sent; 0 means DefaultLimit.
	// When a time window comes back with Limit traces it is split in two
	// halves, each searched again (recursively, up to MaxSplitDepth), so
	// every trace of the window is found once whatever Limit is.
	Limit int
	// TraceIDs, when set, are fetched directly (GetTrace) instead of
	// searching: the search fields are ignored, Start and End (when set)
	// are passed as hints of the traces' time range. Ids are hex, 32
	// digits or fewer (64-bit ids are padded).
	TraceIDs []string
}

// MaxWindows bounds the FindTraces calls of one search. A window that
// comes back full is halved, down to windows of 2 µs, while the budget
// lasts; a full window that cannot be split any more is counted as skipped
// (ReasonWindowFull), its traces beyond the search depth not fetched.
const MaxWindows = 1 << 14

// AttributeKey maps the short attribute names of Query.Attributes to the
// attribute names of the trace schema; other names pass unchanged.
func AttributeKey(name string) string {
	switch strings.ToLower(strings.ReplaceAll(strings.TrimSpace(name), "-", "_")) {
	case "model":
		return string(semconv.GenAIRequestModel)
	case "prompt_type", "prompt type", "prompttype":
		return string(semconv.PromptType)
	case "instance":
		return string(semconv.Instance)
	case "model_version", "modelversion":
		return string(semconv.ModelVersion)
	}
	return name
}

// plan is a Query checked and with its defaults.
type plan struct {
	q        Query
	ids      []string // normalised TraceIDs
	s        search   // the whole window
	hintFrom time.Time
	hintTo   time.Time
}

func (q Query) plan(now time.Time) (*plan, error) {
	p := &plan{q: q, hintFrom: q.Start, hintTo: q.End}
	if len(q.TraceIDs) > 0 {
		seen := map[string]bool{}
		for _, raw := range q.TraceIDs {
			id, ok := du.HexID(strings.TrimSpace(raw), 16)
			if !ok || !isHex(raw) {
				return nil, fmt.Errorf("jaegerquery: trace id %q is not 1 to 32 hex digits (and not zero)", raw)
			}
			if !seen[id] {
				seen[id] = true
				p.ids = append(p.ids, id)
			}
		}
		return p, nil
	}
	if q.Service == "" {
		return nil, errors.New("jaegerquery: Query.Service is required to search (or give TraceIDs)")
	}
	end, start := q.End, q.Start
	if end.IsZero() {
		end = now
	}
	if start.IsZero() {
		start = end.Add(-DefaultLookback)
	}
	if !start.Before(end) {
		return nil, fmt.Errorf("jaegerquery: empty time window %s..%s", start.Format(time.RFC3339Nano), end.Format(time.RFC3339Nano))
	}
	if q.MinDuration < 0 || q.MaxDuration < 0 || (q.MaxDuration > 0 && q.MinDuration > q.MaxDuration) {
		return nil, fmt.Errorf("jaegerquery: bad duration bounds %v..%v", q.MinDuration, q.MaxDuration)
	}
	depth := q.Limit
	switch {
	case depth < 0:
		return nil, fmt.Errorf("jaegerquery: negative Limit %d", depth)
	case depth == 0:
		depth = DefaultLimit
	case depth > MaxLimit:
		depth = MaxLimit
	}
	var attrs map[string]string
	if len(q.Attributes) > 0 {
		attrs = make(map[string]string, len(q.Attributes))
		for k, v := range q.Attributes {
			attrs[AttributeKey(k)] = v
		}
	}
	p.s = search{
		service: q.Service, operation: q.Operation, attrs: attrs,
		start: start, end: end, minDur: q.MinDuration, maxDur: q.MaxDuration, depth: depth,
	}
	return p, nil
}

func isHex(s string) bool {
	s = strings.TrimSpace(s)
	_, err := hex.DecodeString(strings.Repeat("0", len(s)%2) + s)
	return err == nil
}

// Source returns a source.Source that yields every span of every trace
// the query finds (or of the TraceIDs), each span once. Spans are passed
// to the visitor one at a time, from several fetches running in parallel
// (WithParallel), so the spans of different traces may interleave. The
// query is checked, and the protocol probed, when Spans is called.
//
// Errors: Jaeger unreachable → an *Error naming the endpoint and the
// protocol (errors.Is(err, ErrUnreachable)); a trace id Jaeger does not
// have → *NotFoundError, after the others were visited; a Jaeger error
// answer → *Error. Malformed replies are counted in WithSkips' Skips.
func (c *Client) Source(q Query) source.Source {
	return source.Func(func(ctx context.Context, visit source.Visitor) error {
		p, err := q.plan(time.Now())
		if err != nil {
			return err
		}
		be, err := c.backend(ctx)
		if err != nil {
			return err
		}
		r := &run{c: c, be: be, p: p, visit: visit, seen: source.NewSeenSpans(), traces: map[string]struct{}{}}
		total := -1
		if p.ids != nil {
			total = len(p.ids)
		}
		r.bar = newProgress(c.cfg.progress, total)
		defer r.bar.finish()
		if p.ids != nil {
			return r.byID(ctx)
		}
		return r.search(ctx)
	})
}

// run is one call of a Source's Spans.
type run struct {
	c   *Client
	be  backend
	p   *plan
	bar progress

	mu     sync.Mutex // serialises visit and guards what follows
	visit  source.Visitor
	seen   *source.SeenSpans
	traces map[string]struct{}
}

func (r *run) sink() sink {
	return sink{emit: r.emit, skip: r.c.cfg.skips.Add}
}

// emit passes a span to the visitor unless it was passed before (search
// windows overlap at their edges, halves repeat their parent's traces,
// and a retried call repeats what it had sent).
func (r *run) emit(s *model.Span) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen.Repeat(s) {
		return nil
	}
	if _, ok := r.traces[s.TraceID]; !ok {
		r.traces[s.TraceID] = struct{}{}
		r.bar.add(1)
	}
	if err := r.visit(s); err != nil {
		return visitError{err}
	}
	return nil
}

// group runs tasks with at most WithParallel of them fetching at once;
// the first error cancels the others.
type group struct {
	parent context.Context
	ctx    context.Context
	cancel context.CancelCauseFunc
	sem    chan struct{}
	wg     sync.WaitGroup
	once   sync.Once
	err    error
}

func newGroup(ctx context.Context, n int) *group {
	g := &group{parent: ctx, sem: make(chan struct{}, n)}
	g.ctx, g.cancel = context.WithCancelCause(ctx)
	return g
}

// goFetch runs fetch in a goroutine once a slot is free; then, outside the
// slot, next (which may start more tasks).
func (g *group) goFetch(fetch func(ctx context.Context) error, next func()) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		select {
		case g.sem <- struct{}{}:
		case <-g.ctx.Done():
			return
		}
		err := fetch(g.ctx)
		<-g.sem
		if err != nil {
			g.fail(err)
			return
		}
		if next != nil {
			next()
		}
	}()
}

func (g *group) fail(err error) {
	g.once.Do(func() {
		g.err = err
		g.cancel(err)
	})
}

func (g *group) wait() error {
	g.wg.Wait()
	g.cancel(nil)
	if g.err == nil && g.parent.Err() != nil {
		// Cancelled by the caller: tasks may have ended without a word.
		return context.Cause(g.parent)
	}
	return g.err
}

// search fetches the query's window, halving every window that comes back
// full (as many traces as the search depth) until none does.
func (r *run) search(ctx context.Context) error {
	g := newGroup(ctx, r.c.cfg.parallel)
	calls := 1
	var callsMu sync.Mutex
	budget := func() bool {
		callsMu.Lock()
		defer callsMu.Unlock()
		if calls+2 > MaxWindows {
			return false
		}
		calls += 2
		return true
	}
	var window func(start, end time.Time)
	window = func(start, end time.Time) {
		s := r.p.s
		s.start, s.end = start, end
		var n int
		g.goFetch(func(ctx context.Context) error {
			return r.c.call(ctx, r.be.protocol(), "FindTraces", func(ctx context.Context) error {
				r.c.finds.Add(1)
				var err error
				n, err = r.be.find(ctx, s, r.sink())
				return err
			})
		}, func() {
			if n < s.depth {
				return
			}
			// Halves on whole microseconds (the legacy API's precision),
			// sharing the middle: Jaeger's windows include both ends.
			mid := start.Add(end.Sub(start) / 2).Truncate(time.Microsecond)
			if !mid.After(start) || !end.After(mid) || !budget() {
				r.c.cfg.skips.Add(ReasonWindowFull, fmt.Sprintf("%s %s..%s: %d traces (the search depth); raise Query.Limit or narrow the window",
					s.service, start.UTC().Format(time.RFC3339Nano), end.UTC().Format(time.RFC3339Nano), n))
				return
			}
			window(start, mid)
			window(mid, end)
		})
	}
	window(r.p.s.start, r.p.s.end)
	return g.wait()
}

// byID fetches the TraceIDs; the ids Jaeger does not have are reported
// together after the others were visited.
func (r *run) byID(ctx context.Context) error {
	g := newGroup(ctx, r.c.cfg.parallel)
	var (
		mu      sync.Mutex
		missing = map[string]bool{}
	)
	for _, id := range r.p.ids {
		g.goFetch(func(ctx context.Context) error {
			return r.c.call(ctx, r.be.protocol(), "GetTrace "+id, func(ctx context.Context) error {
				found, err := r.be.get(ctx, id, r.p.hintFrom, r.p.hintTo, r.sink())
				if err == nil && !found {
					mu.Lock()
					missing[id] = true
					mu.Unlock()
				}
				return err
			})
		}, nil)
	}
	if err := g.wait(); err != nil {
		return err
	}
	if len(missing) == 0 {
		return nil
	}
	var ids []string
	for _, id := range r.p.ids {
		if missing[id] {
			ids = append(ids, id)
		}
	}
	return &NotFoundError{Endpoint: r.c.endpoint, Protocol: r.be.protocol(), TraceIDs: ids}
}
