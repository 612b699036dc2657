// Package correlate names the likely cause of each degradation segment.
//
// A segment is a time window of one request. Candidate causes are what
// overlapped that window: engine events recorded on the request's span
// (prefill insertions, preemptions or swaps, GC pauses), other requests of
// the same engine instance whose prefill (start → first token) ran then —
// the cross-trace evidence one span cannot show — or that decoded a long
// context alongside, and two signatures when nothing was recorded: every
// request of the instance stalling at the same instant (GC-like), or only
// this request stalling while the others ran on (preemption-like). Each
// candidate is scored by how much of the window it covers, weighted by how
// direct the evidence is; the best one wins if it covers enough, and the
// segment is "unknown" otherwise: never a guess dressed as fact.
package correlate

import (
	"fmt"
	"math"
	"slices"
	"sort"
	"time"

	"github.com/tokentrace/tokentrace/analyzer/model"
	"github.com/tokentrace/tokentrace/analyzer/report"
)

// Config tunes the attribution.
type Config struct {
	// MinScore is the lowest score (covered fraction × evidence weight)
	// that names a cause; below it the segment is "unknown".
	MinScore float64
	// LongContext is the prompt length (tokens) from which a request
	// decoding alongside is taken to make every step dearer (batch),
	// together with LongContextRatio × the victim's own context.
	LongContext      int
	LongContextRatio float64
	// StallTolerance is how far apart two stalls may be to count as the
	// same instant (clock skew between spans, scheduling).
	StallTolerance time.Duration
}

// DefaultConfig returns the defaults.
func DefaultConfig() Config {
	return Config{MinScore: 0.3, LongContext: 512, LongContextRatio: 2, StallTolerance: 5 * time.Millisecond}
}

// Evidence weights: an event the engine or gateway recorded on this very
// span is direct; another trace's timing is strong but circumstantial; a
// signature is a pattern, not a record.
const (
	weightEvent      = 1.0
	weightCrossTrace = 0.9
	weightSignature  = 0.6
	weightImprecise  = 0.6
)

// Window is a time interval.
type Window struct{ Start, End time.Time }

func (w Window) overlap(o Window) time.Duration {
	s, e := w.Start, w.End
	if o.Start.After(s) {
		s = o.Start
	}
	if o.End.Before(e) {
		e = o.End
	}
	if e.Before(s) {
		return 0
	}
	return e.Sub(s)
}

// intersect returns the part of w that o covers (empty when none).
func (w Window) intersect(o Window) Window {
	if o.Start.After(w.Start) {
		w.Start = o.Start
	}
	if o.End.Before(w.End) {
		w.End = o.End
	}
	if w.End.Before(w.Start) {
		w.End = w.Start
	}
	return w
}

func (w Window) len() time.Duration { return w.End.Sub(w.Start) }

// Item is what the correlator keeps of one request: no token times, only
// its windows, its large gaps and its segments.
type Item struct {
	TraceID   string
	Instance  string
	Start     time.Time
	First     time.Time // first token (zero when none)
	End       time.Time
	Context   int // prompt tokens, or prompt chars / 4
	Events    []model.Event
	Stalls    []Window // gaps ≥ a few × baseline, for the same-instant check
	Segments  []Segment
	Generated bool // has ≥ 2 tokens
}

// Segment is a degraded window of an Item, to be attributed.
type Segment struct {
	Window
	// Stall is true for a single-gap stall.
	Stall bool
	// Per gap of the segment: its length (ms), the time it ended, and the
	// first and last token index of the chunk that ended it.
	Gaps        []float64
	Ends        []time.Time
	FirstTokens []int
	LastTokens  []int
	BaselineMs  float64
	// runLevelMs is, for a gap splitGC took out of a run, the run's
	// median gap.
	runLevelMs float64
	// Result, filled by Attribute.
	Cause      string
	Confidence float64
	Detail     string
	Evidence   []report.Evidence
}

// ContextOf estimates a request's prompt length in tokens.
func ContextOf(r *model.Request) int {
	if r.PromptTokens > 0 {
		return r.PromptTokens
	}
	return r.PromptChars / 4
}

// Index holds the items of one analysis, by instance.
type Index struct {
	cfg   Config
	items []*Item
	byIns map[string][]*Item // sorted by Start
}

// NewIndex returns an empty index.
func NewIndex(cfg Config) *Index { return &Index{cfg: cfg, byIns: map[string][]*Item{}} }

// Add adds an item. Call Attribute after the last Add.
func (x *Index) Add(it *Item) {
	x.items = append(x.items, it)
	x.byIns[it.Instance] = append(x.byIns[it.Instance], it)
}

// Attribute names the cause of every segment of every item. Runs that a
// prefill ends inside are first split there (see split).
func (x *Index) Attribute(minSlowdown float64) {
	for _, its := range x.byIns {
		sort.Slice(its, func(i, j int) bool { return its[i].Start.Before(its[j].Start) })
	}
	for _, it := range x.items {
		var segs []Segment
		for _, sg := range it.Segments {
			for _, part := range x.split(it, sg, minSlowdown) {
				segs = append(segs, splitGC(it, part, minSlowdown)...)
			}
		}
		it.Segments = segs
		for i := range it.Segments {
			x.attribute(it, &it.Segments[i])
		}
		it.Segments = mergeAlike(it.Segments)
	}
}

// mergeAlike joins back-to-back segments that name the same cause through
// the same request: a chunked prefill whose last, longest chunk the
// detector reported as a stall after the run of the others is one
// prefill of one newcomer, and a report that says so once is the truer
// one.
func mergeAlike(segs []Segment) []Segment {
	if len(segs) < 2 {
		return segs
	}
	out := segs[:1]
	for _, s := range segs[1:] {
		p := &out[len(out)-1]
		if !p.End.Equal(s.Start) || p.Cause != s.Cause || p.Cause == report.CauseUnknown ||
			primary(p) == "" || primary(p) != primary(&s) {
			out = append(out, s)
			continue
		}
		p.End = s.End
		p.Stall = false
		p.Gaps = append(slices.Clip(p.Gaps), s.Gaps...)
		p.Ends = append(slices.Clip(p.Ends), s.Ends...)
		p.FirstTokens = append(slices.Clip(p.FirstTokens), s.FirstTokens...)
		p.LastTokens = append(slices.Clip(p.LastTokens), s.LastTokens...)
		p.Confidence = max(p.Confidence, s.Confidence)
		for _, e := range s.Evidence {
			if !slices.ContainsFunc(p.Evidence, func(o report.Evidence) bool { return o.Kind == e.Kind && o.TraceID == e.TraceID }) {
				p.Evidence = append(p.Evidence, e)
			}
		}
	}
	return out
}

// primary is the request the segment's strongest evidence names.
func primary(s *Segment) string {
	if len(s.Evidence) == 0 {
		return ""
	}
	return s.Evidence[0].TraceID
}

// split cuts a run at the end of a prefill that ends inside it: on a
// continuous-batching engine the prefill's steps come first, then the
// newcomer decodes in the same batch and may keep every step dearer (the
// batch cause) — two causes, two segments. The tail is kept when it is
// itself degraded (≥ 3 gaps at ≥ minSlowdown × baseline), else dropped.
func (x *Index) split(it *Item, sg Segment, minSlowdown float64) []Segment {
	if sg.Stall || len(sg.Gaps) < 2 {
		return []Segment{sg}
	}
	var cut time.Time
	consider := func(end time.Time) {
		if end.After(sg.Start) && end.Before(sg.End) && end.After(cut) {
			cut = end
		}
	}
	for _, ev := range it.Events {
		if ev.Kind == model.KindPrefill && ev.TraceID != it.TraceID {
			consider(ev.End())
		}
	}
	for _, o := range x.byIns[it.Instance] {
		if o != it && !o.First.IsZero() {
			consider(o.First)
		}
	}
	if cut.IsZero() {
		return []Segment{sg}
	}
	k := 0 // gaps [0, k) end by the cut (with tolerance)
	for k < len(sg.Ends) && !sg.Ends[k].After(cut.Add(x.cfg.StallTolerance)) {
		k++
	}
	if k == 0 || k == len(sg.Gaps) {
		return []Segment{sg}
	}
	head, tail := sg.sub(0, k), sg.sub(k, len(sg.Gaps))
	if len(tail.Gaps) >= 3 && median(tail.Gaps) >= minSlowdown*sg.BaselineMs {
		return []Segment{head, tail}
	}
	return []Segment{head}
}

// splitGC takes out of a run every gap that a GC pause recorded on the
// request fills for a third or more: the pause is a cause of its own (a
// stall), not part of the prefill or batch run it landed in. The pieces
// of the run around it are kept when they are still degraded (median ≥
// minSlowdown × baseline). Pauses whose timing is uncertain by more than a
// quarter of the gap (polled from an engine's metrics) cut nothing.
func splitGC(it *Item, sg Segment, minSlowdown float64) []Segment {
	if len(sg.Gaps) < 2 {
		return []Segment{sg}
	}
	paused := func(i int) bool {
		gw := Window{sg.Start, sg.Ends[i]}
		if i > 0 {
			gw.Start = sg.Ends[i-1]
		}
		for _, ev := range it.Events {
			if ev.Kind != model.KindGCPause || !placed(ev, gw.len()) {
				continue
			}
			if 3*gw.overlap(Window{ev.Start, ev.End()}) >= gw.len() {
				return true
			}
		}
		return false
	}
	var out []Segment
	keep := func(i, j int) { // gaps [i, j)
		if j > i && median(sg.Gaps[i:j]) >= minSlowdown*sg.BaselineMs {
			out = append(out, sg.sub(i, j))
		}
	}
	from := 0
	for i := range sg.Gaps {
		if !paused(i) {
			continue
		}
		keep(from, i)
		st := sg.sub(i, i+1)
		st.Stall = true
		// What the pause must explain is the gap's excess over the run
		// it interrupted, not the whole gap (attribute).
		st.runLevelMs = median(sg.Gaps)
		out = append(out, st)
		from = i + 1
	}
	if from == 0 {
		return []Segment{sg}
	}
	keep(from, len(sg.Gaps))
	return out
}

// placed says whether an event's time is known well enough to place it
// within a window of length d: uncertain by at most a quarter of it
// (events counted by a metrics poll are known only to the poll window).
func placed(ev model.Event, d time.Duration) bool { return 4*ev.Uncertainty <= d }

// sub is the segment of gaps [i, j).
func (s Segment) sub(i, j int) Segment {
	start := s.Start
	if i > 0 {
		start = s.Ends[i-1]
	}
	return Segment{
		Window: Window{start, s.Ends[j-1]}, Stall: s.Stall,
		Gaps: s.Gaps[i:j], Ends: s.Ends[i:j], FirstTokens: s.FirstTokens[i:j], LastTokens: s.LastTokens[i:j],
		BaselineMs: s.BaselineMs,
	}
}

// Stats returns the segment's median gap, slowdown and time lost against
// its baseline.
func (s *Segment) Stats() (medianMs, slowdown, lostMs float64) {
	medianMs = median(s.Gaps)
	if s.BaselineMs > 0 {
		slowdown = medianMs / s.BaselineMs
	}
	for _, g := range s.Gaps {
		if d := g - s.BaselineMs; d > 0 {
			lostMs += d
		}
	}
	return medianMs, slowdown, lostMs
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	s := slices.Clone(v)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

type candidate struct {
	cause    string
	score    float64
	detail   string // of the best-scoring evidence
	evidence []report.Evidence
	parts    []weighted // the piece of the segment each evidence covers
}

// weighted is a piece of a segment's window covered by one piece of
// evidence, with that evidence's weight.
type weighted struct {
	Window
	weight float64
}

// union raises the score to the weighted share of the window that the
// evidence covers together (each instant counted once, at the highest
// weight covering it): successive events of one cause — the swap-ins of
// several victims, the prefills of several newcomers — each covering a
// few gaps of a run explain the run together. The detail says so when
// that is what names the cause.
func (c *candidate) union(win Window) {
	wl := win.len()
	if len(c.parts) < 2 || wl <= 0 {
		return
	}
	cuts := make([]time.Time, 0, 2*len(c.parts))
	for _, p := range c.parts {
		if p.len() > 0 {
			cuts = append(cuts, p.Start, p.End)
		}
	}
	slices.SortFunc(cuts, func(a, b time.Time) int { return a.Compare(b) })
	var sum float64
	for i := 1; i < len(cuts); i++ {
		piece := Window{cuts[i-1], cuts[i]}
		if piece.len() <= 0 {
			continue
		}
		w := 0.0
		for _, p := range c.parts {
			if !p.Start.After(piece.Start) && !p.End.Before(piece.End) {
				w = max(w, p.weight)
			}
		}
		sum += w * float64(piece.len())
	}
	if u := min(sum/float64(wl), 1); u > c.score+0.05 {
		c.score = u
		c.detail += fmt.Sprintf("; with %d other pieces of evidence of this cause, %.0f%% of the segment", len(c.parts)-1, 100*u)
	}
}

// add records one piece of evidence covering covered of the window of
// length win, with the given weight; the candidate's score and detail are
// those of its best evidence.
func (c *candidate) add(ev report.Evidence, part Window, win time.Duration, weight float64, detail string) {
	c.evidence = append(c.evidence, ev)
	c.parts = append(c.parts, weighted{part, weight})
	if win <= 0 {
		win = time.Microsecond
	}
	s := float64(part.len()) / float64(win)
	if s > 1 {
		s = 1
	}
	if s*weight > c.score || c.detail == "" {
		if s*weight > c.score {
			c.score = s * weight
		}
		c.detail = detail
	}
}

// batchMaxSlowdown is the most a long context decoding alongside makes a
// step dearer (2–3× in the real-engine recordings and the simulator's
// profiles): a run slower than that needs more than the batch to explain
// it, typically a prefill.
const batchMaxSlowdown = 4

// batchPlausibility scales the batch evidence of a segment down by how far
// its slowdown exceeds batchMaxSlowdown.
func batchPlausibility(seg *Segment) float64 {
	if _, slow, _ := seg.Stats(); slow > batchMaxSlowdown {
		return batchMaxSlowdown / slow
	}
	return 1
}

// specificity discounts evidence whose window is much longer than the
// segment: a GC pause that spans exactly the stalled gap explains it
// better than a prefill window of several seconds around it. The fourth
// root keeps the discount gentle (a window 16× longer halves the weight).
func specificity(seg, ev time.Duration) float64 {
	if ev <= seg || ev <= 0 {
		return 1
	}
	return math.Sqrt(math.Sqrt(float64(seg) / float64(ev)))
}

// eventPrompt is a prefill event's prompt size in tokens (0 unknown).
func eventPrompt(ev model.Event) int {
	if ev.PromptTokens > 0 {
		return ev.PromptTokens
	}
	return ev.PromptChars / 4
}

// sizeWeight discounts the prefill of a short prompt: a window from
// admission to first token includes queueing (and any pause that delayed
// the first token), but the prefill's compute is proportional to the
// prompt's length, and a few dozen tokens cannot stall a batch.
func sizeWeight(context int) float64 {
	const full = 256 // tokens from which a prefill is taken at face value
	if context <= 0 {
		return 0.5 // unknown size
	}
	return min(1, max(0.05, float64(context)/full))
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func short(id string) string {
	if len(id) > 8 {
		return id[:8] + "…"
	}
	return id
}

func (x *Index) attribute(it *Item, seg *Segment) {
	win := seg.Window
	wl := win.len()
	cands := map[string]*candidate{}
	get := func(cause string) *candidate {
		if cands[cause] == nil {
			cands[cause] = &candidate{cause: cause}
		}
		return cands[cause]
	}
	// 1. Engine events on this span.
	seenPrefill := map[string]bool{}
	for _, ev := range it.Events {
		ew := Window{ev.Start, ev.End()}
		if ev.Uncertainty > 0 {
			ew.Start, ew.End = ew.Start.Add(-ev.Uncertainty), ew.End.Add(ev.Uncertainty)
		}
		ov := win.overlap(ew)
		if ov <= 0 {
			continue
		}
		// An event placed only to within a poll window (uncertain by more
		// than a quarter of the segment) says that it happened, not when:
		// it is weighed as a pattern is, below an exact record.
		imprecise := !placed(ev, wl)
		we := weightEvent
		if imprecise {
			we = weightImprecise
		}
		switch ev.Kind {
		case model.KindPrefill:
			if ev.TraceID != "" && ev.TraceID == it.TraceID {
				continue // its own (re-)prefill is its TTFT or its preemption
			}
			get(report.CausePrefill).add(report.Evidence{Kind: "prefill_event", TraceID: ev.TraceID, OverlapMs: ms(ov),
				PromptTokens: ev.PromptTokens, Detail: prefillDetail(ev)}, win.intersect(ew), wl, we*specificity(wl, ew.len())*sizeWeight(eventPrompt(ev)),
				"prefill of "+who(ev.TraceID, ev.RequestID)+promptSize(ev.PromptTokens, ev.PromptChars))
			seenPrefill[ev.TraceID+ev.RequestID] = true
			if ev.TraceID != "" {
				seenPrefill[ev.TraceID] = true // no second, cross-trace entry for it
			}
		case model.KindPreemption:
			w := we
			if !ev.Victim && !imprecise {
				// Another request's preemption frees capacity more than it
				// slows us. (A polled count names no victim: it may be us.)
				w = 0.5
			}
			mode := ev.Mode
			if mode == "" {
				mode = "recompute"
			}
			detail := mode + " preemption on the instance"
			if ev.Victim {
				detail = fmt.Sprintf("preempted (%s) for %.0f ms", mode, ms(ev.Duration))
			}
			get(report.CauseKVSwap).add(report.Evidence{Kind: "preemption_event", TraceID: ev.TraceID, OverlapMs: ms(ov),
				Detail: fmt.Sprintf("%s preemption, %.0f ms, victim=%t", mode, ms(ev.Duration), ev.Victim)}, win.intersect(ew), wl, w*specificity(wl, ew.len()), detail)
		case model.KindGCPause:
			// A pause inside a run explains the gap's excess over the run.
			need, detail := wl, fmt.Sprintf("GC pause (%s) of %.0f ms", ev.Source, ms(ev.Duration))
			if lvl := time.Duration(seg.runLevelMs * float64(time.Millisecond)); seg.runLevelMs > 0 && wl > lvl {
				need = wl - lvl
				detail += fmt.Sprintf(", the gap's %.0f ms over the %.0f ms pace of the run around it", ms(need), seg.runLevelMs)
			}
			get(report.CauseGC).add(report.Evidence{Kind: "gc_event", OverlapMs: ms(ov),
				Detail: fmt.Sprintf("%s GC pause of %.0f ms", ev.Source, ms(ev.Duration))}, win.intersect(ew), need, we*specificity(need, ew.len()), detail)
		}
	}
	// 2. Other requests of the instance.
	var others []*Item
	for _, o := range x.byIns[it.Instance] {
		if o == it || !o.Start.Before(win.End) || o.End.Before(win.Start) {
			continue
		}
		others = append(others, o)
		if !o.First.IsZero() {
			pw := Window{o.Start, o.First}
			if ov := win.overlap(pw); ov > 0 && !seenPrefill[o.TraceID] {
				get(report.CausePrefill).add(report.Evidence{Kind: "cross_trace_prefill", TraceID: o.TraceID, OverlapMs: ms(ov),
					PromptTokens: o.Context, Detail: fmt.Sprintf("prefill %s%s", short(o.TraceID), promptSize(o.Context, 0))},
					win.intersect(pw), wl, weightCrossTrace*sizeWeight(o.Context)*specificity(wl, pw.len()), "prefill of "+short(o.TraceID)+promptSize(o.Context, 0))
			}
			// A long context decoding alongside makes every step dearer:
			// a run of moderately slow gaps, never a single stall.
			long := o.Context >= x.cfg.LongContext && float64(o.Context) >= x.cfg.LongContextRatio*float64(max(it.Context, 1))
			if long && o.Generated && !seg.Stall {
				dw := Window{o.First, o.End}
				if ov := win.overlap(dw); ov > 0 {
					get(report.CauseBatch).add(report.Evidence{Kind: "cross_trace_batch", TraceID: o.TraceID, OverlapMs: ms(ov),
						PromptTokens: o.Context, Detail: fmt.Sprintf("%s decoding with %d tokens of context", short(o.TraceID), o.Context)},
						win.intersect(dw), wl, weightCrossTrace*batchPlausibility(seg), fmt.Sprintf("long-context request %s (%s prompt tokens) decoding in the same batch", short(o.TraceID), thousands(o.Context)))
				}
			}
		}
	}
	// 3. Signatures, for stalls nothing recorded explains.
	if seg.Stall && cands[report.CausePrefill] == nil && cands[report.CauseGC] == nil && cands[report.CauseKVSwap] == nil {
		running, stalled := 0, 0
		var with []string
		for _, o := range others {
			if o.First.IsZero() || !o.First.Before(win.Start) || o.End.Before(win.End) {
				continue // not decoding across the whole window
			}
			running++
			for _, s := range o.Stalls {
				tol := Window{s.Start.Add(-x.cfg.StallTolerance), s.End.Add(x.cfg.StallTolerance)}
				if ov := win.overlap(tol); ov >= wl/2 {
					stalled++
					with = append(with, o.TraceID)
					break
				}
			}
		}
		switch {
		case running > 0 && stalled == running:
			c := get(report.CauseGC)
			detail := fmt.Sprintf("every request decoding on %s stalled at the same instant (%d others): a stop-the-world pause, likely GC", it.Instance, stalled)
			for _, id := range with {
				c.add(report.Evidence{Kind: "same_instant_stall", TraceID: id, OverlapMs: ms(wl)}, win, wl, weightSignature, detail)
			}
		case running > 0 && stalled == 0:
			// Only this request stalled. A recompute preemption looks like
			// this, and its re-prefill then slows the others at the end of
			// the stall; without that corroboration the pattern alone is
			// too weak to name a cause (a client-side hiccup looks the same).
			tail := Window{win.End.Add(-wl / 3), win.End.Add(x.cfg.StallTolerance)}
			reprefill := 0
			for _, o := range others {
				for _, s := range o.Stalls {
					if tail.overlap(s) > 0 {
						reprefill++
						break
					}
				}
			}
			weight := 0.25
			detail := fmt.Sprintf("only this request stalled while %d others on %s decoded on; no engine event or re-prefill confirms a preemption", running, it.Instance)
			if reprefill > 0 {
				weight = weightSignature
				detail = fmt.Sprintf("only this request stalled while %d others on %s decoded on, and %d of them slowed as it resumed (a re-prefill): likely preempted", running, it.Instance, reprefill)
			}
			get(report.CauseKVSwap).add(report.Evidence{Kind: "victim_gap", OverlapMs: ms(wl),
				Detail: fmt.Sprintf("%d other requests decoded through it, %d slowed at its end", running, reprefill)}, win, wl, weight, detail)
		}
	}
	for _, c := range cands {
		c.union(win)
	}
	best := pickBest(cands)
	if best == nil || best.score < x.cfg.MinScore {
		seg.Cause, seg.Confidence = report.CauseUnknown, 0
		seg.Detail = "no cause found"
		if best != nil {
			seg.Detail = fmt.Sprintf("no cause found (best candidate %s covers too little: score %.2f)", best.cause, best.score)
			seg.Evidence = best.evidence
		}
		return
	}
	seg.Cause, seg.Confidence, seg.Detail, seg.Evidence = best.cause, round2(best.score), best.detail, best.evidence
	slices.SortStableFunc(seg.Evidence, func(a, b report.Evidence) int {
		switch {
		case a.OverlapMs > b.OverlapMs:
			return -1
		case a.OverlapMs < b.OverlapMs:
			return 1
		}
		return 0
	})
	if len(seg.Evidence) > 8 {
		seg.Evidence = seg.Evidence[:8]
	}
}

// pickBest returns the best-scoring candidate; ties go to the more
// specific cause (kv_swap, gc, prefill, batch).
func pickBest(c map[string]*candidate) *candidate {
	order := []string{report.CauseKVSwap, report.CauseGC, report.CausePrefill, report.CauseBatch}
	var best *candidate
	for _, k := range order {
		if v := c[k]; v != nil && (best == nil || v.score > best.score+1e-9) {
			best = v
		}
	}
	return best
}

func round2(f float64) float64 { return float64(int(f*100+0.5)) / 100 }

func who(traceID, requestID string) string {
	if traceID != "" {
		return short(traceID)
	}
	if requestID != "" {
		return requestID
	}
	return "another request"
}

func promptSize(tokens, chars int) string {
	switch {
	case tokens > 0:
		return fmt.Sprintf(" (%s prompt tokens)", thousands(tokens))
	case chars > 0:
		return fmt.Sprintf(" (~%s prompt tokens)", thousands(chars/4))
	}
	return ""
}

func prefillDetail(ev model.Event) string {
	return fmt.Sprintf("%s prefill of %s, %.0f ms%s", ev.Source, who(ev.TraceID, ev.RequestID), ms(ev.Duration), promptSize(ev.PromptTokens, ev.PromptChars))
}

func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}
