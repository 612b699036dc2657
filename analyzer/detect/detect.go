package detect

import (
	"math"
	"slices"
)

// Segment kinds.
const (
	// KindRun is a run of at least Config.MinRun degraded gaps.
	KindRun = "run"
	// KindStall is one long gap (or a few consecutive ones): an event such
	// as a GC pause, a preemption or an unchunked prefill.
	KindStall = "stall"
)

// Defaults of Config; see doc.go for the reasons behind each.
const (
	DefaultSensitivity = 1.0
	DefaultMinSlowdown = 1.6
	DefaultMinRun      = 3
	DefaultStallFactor = 4.0
	DefaultStallMinMs  = 20.0
)

// Constants of the method that are not configuration; see doc.go.
const (
	// MinGaps is the shortest request (in gaps) that is searched for runs;
	// shorter ones are only checked for stalls.
	MinGaps = 8
	// PenaltyFactor is c in the change-point penalty β = c·ln(n)/Sensitivity
	// (in units of the noise variance): 3·ln n is the MBIC penalty of a
	// change in mean.
	PenaltyFactor = 3.0
	// floorFrac bounds log(gap) from below at floorFrac × the request's
	// median gap: shorter gaps are delivery artefacts (two tokens read
	// together), not a compute pace, and would otherwise dominate the
	// squared-error cost in log space.
	floorFrac = 0.1
	// minSigma is the smallest noise scale (in log units, i.e. 1 % jitter),
	// so that perfectly regular or coarsely quantised gaps do not turn
	// every rounding step into a change point.
	minSigma = 0.01
	// edgeWindow is how many gaps on each side of a boundary decide
	// whether it is a step (see levels): short enough that a drift moves
	// little within it, long enough for a median robust to jitter.
	edgeWindow = 10
	// maxGapMs caps a gap (and +Inf) so that sums stay finite.
	maxGapMs = 1e12
)

// Config tunes Detect. A zero or invalid field takes its default, so the
// zero Config is the default configuration.
type Config struct {
	// Sensitivity divides the penalty of the change-point search
	// (default 1; higher finds more, smaller changes). It does not change
	// the effect-size rules below.
	Sensitivity float64
	// MinSlowdown is the effect size of a run: it must begin with a step
	// up and end with a step down of at least MinSlowdown, and its level
	// must be at least MinSlowdown × the pace around it (default 1.6;
	// must be > 1). It is also the least difference between the levels of
	// two adjacent runs reported separately.
	MinSlowdown float64
	// MinRun is the shortest run of gaps reported as a run (default 3).
	// Shorter elevated stretches are judged gap by gap as stalls.
	MinRun int
	// StallFactor: a gap is a stall when it is at least StallFactor × the
	// local pace and × the request's baseline (default 4; must be > 1).
	StallFactor float64
	// StallMinMs is the absolute floor of a stall in milliseconds
	// (default 20). It only matters for fast streams, with a baseline
	// below StallMinMs/StallFactor (5 ms by default).
	StallMinMs float64
}

// DefaultConfig returns the default configuration.
func DefaultConfig() Config {
	return Config{
		Sensitivity: DefaultSensitivity,
		MinSlowdown: DefaultMinSlowdown,
		MinRun:      DefaultMinRun,
		StallFactor: DefaultStallFactor,
		StallMinMs:  DefaultStallMinMs,
	}
}

func finite(f float64) bool { return !math.IsNaN(f) && !math.IsInf(f, 0) }

// resolve replaces zero or invalid fields with their defaults.
func (c Config) resolve() Config {
	if !(c.Sensitivity > 0) || !finite(c.Sensitivity) {
		c.Sensitivity = DefaultSensitivity
	}
	if !(c.MinSlowdown > 1) || !finite(c.MinSlowdown) {
		c.MinSlowdown = DefaultMinSlowdown
	}
	if c.MinRun < 1 {
		c.MinRun = DefaultMinRun
	}
	if !(c.StallFactor > 1) || !finite(c.StallFactor) {
		c.StallFactor = DefaultStallFactor
	}
	if !(c.StallMinMs > 0) || !finite(c.StallMinMs) {
		c.StallMinMs = DefaultStallMinMs
	}
	return c
}

// Segment is one degraded stretch of a request's gaps.
type Segment struct {
	// Start and End are gap indices, inclusive; gap i is the time between
	// chunk i and chunk i+1 (gap 0 is the first gap after the first
	// token).
	Start, End int
	// Kind is KindRun or KindStall.
	Kind string
	// BaselineMs is the undegraded pace around the segment. For a run it is
	// the geometric mean of the pace of the gaps just before it and just
	// after it (the pace the request would have had, interpolated across
	// the run), or the one side at an end of the request; for a stall it
	// is the pace of the undegraded segment it interrupts, or of the run's
	// surroundings when it interrupts a run.
	BaselineMs float64
	// MedianMs is the median gap of the segment.
	MedianMs float64
	// Slowdown is MedianMs / BaselineMs (0 when BaselineMs is 0).
	Slowdown float64
	// LostMs is the sum over the segment of (gap − BaselineMs).
	LostMs float64
}

// Len returns the number of gaps in s.
func (s Segment) Len() int { return s.End - s.Start + 1 }

// Detect returns the degraded segments of gaps (milliseconds, one per
// token after the first), in order, and the request's baseline pace: the
// median gap of its undegraded segments. It allocates; use a Detector to
// analyse many requests.
func Detect(gaps []float64, cfg Config) (segs []Segment, baselineMs float64) {
	return NewDetector(cfg).Detect(nil, gaps)
}

// A Detector runs Detect with buffers reused across calls: once warmed up
// it does not allocate, apart from growing dst. It is not safe for
// concurrent use; use one per goroutine.
type Detector struct {
	cfg      Config
	x        []float64 // sanitised gaps
	y        []float64 // centred log gaps
	s1       []float64 // prefix sums of y
	sc       []float64 // scratch for medians
	pace     []float64 // per gap: the pace of its surroundings
	base     []float64 // per gap: the undegraded pace around it
	lab      []int32   // per gap: 0 normal, >0 run id, labStall
	cps      []int
	stack    []ival
	raw      []span // change-point segments
	segs     []span // plateaus
	lvl      []int
	edges    []edge // per long segment: levels of its first and last gaps
	reach    []int
	minRight []float64
	pieces   []piece
}

type ival struct{ a, b int }

// span is one segment of the change-point partition, [a, b).
type span struct {
	a, b     int
	med      float64
	lo, hi   float64 // range of the medians of the merged segments
	merged   bool    // absorbed an outlier stretch
	long     bool    // at least MinRun gaps: part of the level structure
	deg      bool    // degraded
	base     float64 // undegraded pace: med, or the region's reference
	sub      int32   // run id when degraded
	nextLong int     // index of the next long span (len(segs) if none)
}

// edge holds the levels around the edges of a long segment (see levels).
type edge struct{ headIn, tailIn, leftOut, rightOut float64 }

type piece struct {
	a, b int // [a, b)
	lab  int32
}

const labStall int32 = -1

// NewDetector returns a Detector with cfg (zero or invalid fields take
// their defaults).
func NewDetector(cfg Config) *Detector {
	return &Detector{cfg: cfg.resolve()}
}

// Config returns the detector's configuration, defaults filled in.
func (d *Detector) Config() Config { return d.cfg }

// Detect appends the degraded segments of gaps to dst, in order, and
// returns it with the request's baseline pace (see the package Detect).
func (d *Detector) Detect(dst []Segment, gaps []float64) ([]Segment, float64) {
	n := len(gaps)
	if n == 0 {
		return dst, 0
	}
	d.x = grow(d.x, n)
	for i, g := range gaps {
		switch {
		case g > maxGapMs: // also +Inf
			g = maxGapMs
		case !(g > 0): // NaN, negative (clock skew), zero
			g = 0
		}
		d.x[i] = g
	}
	d.sc = grow(d.sc, n)
	if n < MinGaps {
		return d.stallsOnly(dst)
	}
	d.partition()
	d.levels()
	baseline := d.label()
	return d.emit(dst), baseline
}

// stallsOnly handles requests too short to establish a run: each gap is
// compared with the request's lower median.
func (d *Detector) stallsOnly(dst []Segment) ([]Segment, float64) {
	x, sc := d.x, d.sc
	copy(sc, x)
	b := lowerMedian(sc)
	thr := max(d.cfg.StallFactor*b, d.cfg.StallMinMs)
	d.base = grow(d.base, len(x))
	d.lab = grow(d.lab, len(x))
	for i, g := range x {
		d.base[i] = b
		d.lab[i] = 0
		if len(x) > 1 && g >= thr {
			d.lab[i] = labStall
		}
	}
	d.split()
	return d.emit(dst), b
}

// partition computes the robust scale and the change points of log(gap)
// by binary segmentation, and fills d.segs with the resulting segments.
func (d *Detector) partition() {
	x, sc := d.x, d.sc
	n := len(x)
	copy(sc, x)
	med := median(sc)
	floor := med * floorFrac
	if !(floor > 0) {
		floor = 1e-3
	}
	centre := math.Log(max(med, floor))
	d.y = grow(d.y, n)
	y := d.y
	for i, g := range x {
		y[i] = math.Log(max(g, floor)) - centre
	}

	// Robust noise scale from first differences: a level shift moves one
	// difference, a spike two, so the MAD ignores both; for independent
	// noise Var(Δy) = 2σ², hence the 1/√2.
	dy := sc[:n-1]
	for i := range dy {
		dy[i] = y[i+1] - y[i]
	}
	md := median(dy)
	for i := range dy {
		dy[i] = math.Abs(dy[i] - md)
	}
	sigma := 1.4826 * median(dy) / math.Sqrt2
	if sigma == 0 { // more than half the differences are exactly equal
		s := 0.0
		for _, v := range dy {
			s += v
		}
		sigma = 1.2533 * s / float64(len(dy)) / math.Sqrt2
	}
	sigma = max(sigma, minSigma)

	d.s1 = grow(d.s1, n+1)
	s1 := d.s1
	s1[0] = 0
	for i, v := range y {
		s1[i+1] = s1[i] + v
	}
	beta := PenaltyFactor * math.Log(float64(n)) / d.cfg.Sensitivity * sigma * sigma
	d.binseg(n, beta)

	// The change-point segments, with their medians.
	d.raw = d.raw[:0]
	prev := 0
	for k := 0; k <= len(d.cps); k++ {
		end := n
		if k < len(d.cps) {
			end = d.cps[k]
		}
		d.raw = append(d.raw, span{a: prev, b: end, med: median(sc[:copy(sc, x[prev:end])])})
		prev = end
	}

	// Plateaus: consecutive segments whose medians stay within a factor
	// MinSlowdown of each other are one level. A change smaller than the
	// effect size can never be the edge of a degraded run, and merging
	// keeps a steep but steady ramp (a chunked prefill grows along its
	// run) one unit. A stretch of fewer than MinRun gaps between two
	// segments of one level, each of at least MinRun gaps, is an outlier
	// of that level and joins it without moving its range, so that a 2×
	// gap inside a run or inside the baseline does not cut either in two.
	r := d.cfg.MinSlowdown
	within := func(p *span, med float64) bool { return max(p.hi, med) < r*min(p.lo, med) }
	raw := d.raw
	d.segs = d.segs[:0]
	for i := 0; i < len(raw); i++ {
		sg := raw[i]
		if m := len(d.segs); m > 0 {
			last := &d.segs[m-1]
			if within(last, sg.med) {
				last.b, last.lo, last.hi = sg.b, min(last.lo, sg.med), max(last.hi, sg.med)
				continue
			}
			// Look past a short outlier stretch for the same level.
			j, w := i, 0
			for j < len(raw) && w+raw[j].b-raw[j].a < d.cfg.MinRun && !within(last, raw[j].med) {
				w += raw[j].b - raw[j].a
				j++
			}
			if j > i && j < len(raw) && last.b-last.a >= d.cfg.MinRun && raw[j].b-raw[j].a >= d.cfg.MinRun &&
				within(last, raw[j].med) {
				last.b, last.lo, last.hi = raw[j].b, min(last.lo, raw[j].med), max(last.hi, raw[j].med)
				last.merged = true
				i = j
				continue
			}
		}
		d.segs = append(d.segs, span{a: sg.a, b: sg.b, med: sg.med, lo: sg.med, hi: sg.med})
	}
	for i := range d.segs {
		s := &d.segs[i]
		s.long = s.b-s.a >= d.cfg.MinRun
		if s.lo != s.hi || s.merged || s.long {
			s.med = d.slowLevel(sc[:copy(sc, x[s.a:s.b])])
		}
	}
}

// slowLevel and fastLevel are the pace of a stretch of gaps judged from
// either side of a step. slowLevel, for a stretch claimed to be slow, is
// the largest value that at least MinRun of its gaps and half of them
// reach; fastLevel, for a stretch it is compared with, the smallest value
// that at least MinRun of its gaps and half of them stay under. Both are
// the median when the stretch has 2·MinRun gaps or more; on shorter ones
// they keep a step from resting on fewer than MinRun gaps on either side
// (two 2× outliers among three gaps are not a 2× run; one tiny gap among
// three is not a fast baseline). They reorder v.
func (d *Detector) slowLevel(v []float64) float64 {
	k := d.cfg.MinRun
	if len(v) < k || len(v) >= 2*k {
		return median(v)
	}
	return selectK(v, len(v)-k)
}

func (d *Detector) fastLevel(v []float64) float64 {
	k := d.cfg.MinRun
	if len(v) < k || len(v) >= 2*k {
		return median(v)
	}
	return selectK(v, k-1)
}

// binseg is binary segmentation with the Gaussian change-in-mean cost on
// the centred log gaps: an interval [a, b) is split at the k maximising
// the cost reduction n₁n₂/(n₁+n₂)·(ȳ₁−ȳ₂)² when that reduction exceeds
// beta, and both halves are searched again. Each level of the recursion
// is one O(n) scan over prefix sums. Split points do not depend on beta,
// so a smaller beta returns a superset of the change points.
func (d *Detector) binseg(n int, beta float64) {
	s1 := d.s1
	d.cps = d.cps[:0]
	d.stack = append(d.stack[:0], ival{0, n})
	for len(d.stack) > 0 {
		iv := d.stack[len(d.stack)-1]
		d.stack = d.stack[:len(d.stack)-1]
		a, b := iv.a, iv.b
		if b-a < 2 {
			continue
		}
		m := float64(b - a)
		base, tot := s1[a], s1[b]-s1[a]
		best, bk := 0.0, -1
		for k := a + 1; k < b; k++ {
			n1 := float64(k - a)
			n2 := m - n1
			l := s1[k] - base
			diff := l/n1 - (tot-l)/n2
			if g := n1 * n2 / m * diff * diff; g > best {
				best, bk = g, k
			}
		}
		if bk < 0 || best <= beta {
			continue
		}
		d.cps = append(d.cps, bk)
		d.stack = append(d.stack, ival{bk, b}, ival{a, bk})
	}
	slices.Sort(d.cps)
}

// levels finds the degraded segments. The long segments (plateaus of at
// least MinRun gaps) form a sequence of levels L₀…L_{K−1} (medians). A
// block of consecutive long segments p…q is degraded when
//
//   - it starts with a step up and ends with a step down, each of at least
//     MinSlowdown, measured locally: the slow level of the edgeWindow gaps
//     just inside the block against the fast level of the edgeWindow raw
//     gaps just outside it. A smooth drift has no such step, however
//     coarsely the change points cut it;
//   - every level in it (slowLevel of each long segment) is at least
//     MinSlowdown × the reference: the geometric mean of those two
//     outside levels (the pace the request
//     would have had, interpolated in log space across the block, so a
//     baseline that drifted up during the block is neither ignored nor
//     held against it), or the one outside level at an end of the
//     request;
//   - it covers less than half of the request's gaps: the request's own
//     pace is what most of its tokens did.
//
// The degraded segments are the union of the degraded blocks; each
// maximal run of them (a region) takes as reference the same
// interpolation between its outer neighbours, and is split into runs
// where two adjacent levels differ by MinSlowdown or more.
func (d *Detector) levels() {
	r := d.cfg.MinSlowdown
	segs := d.segs
	d.lvl = d.lvl[:0]
	for i := range segs {
		if segs[i].long {
			d.lvl = append(d.lvl, i)
		}
	}
	lvl := d.lvl
	K := len(lvl)
	x := d.x
	n := len(x)
	L := func(j int) float64 { return segs[lvl[j]].med }

	// Local levels at the edges of every long segment: its first and last
	// edgeWindow gaps as the slow side of a step (headIn, tailIn), and the
	// edgeWindow raw gaps just before and just after it as the fast side
	// (leftOut, rightOut) — raw gaps, so that a short piece of baseline cut
	// off by an outlier does not stand for the whole baseline — but not
	// past the neighbouring level: two runs a few gaps apart (chunked
	// prefills of two newcomers) each step down to the baseline between
	// them, which a window reaching into the other run would hide.
	d.edges = grow(d.edges, K)
	for j := range K {
		s := segs[lvl[j]]
		e := &d.edges[j]
		w := min(edgeWindow, s.b-s.a)
		lo, hi := max(0, s.a-edgeWindow), min(n, s.b+edgeWindow)
		if j > 0 {
			lo = max(lo, segs[lvl[j-1]].a)
		}
		if j < K-1 {
			hi = min(hi, segs[lvl[j+1]].b)
		}
		e.headIn = d.slowLevel(d.sc[:copy(d.sc, x[s.a:s.a+w])])
		e.tailIn = d.slowLevel(d.sc[:copy(d.sc, x[s.b-w:s.b])])
		e.leftOut = d.fastLevel(d.sc[:copy(d.sc, x[lo:s.a])])
		e.rightOut = d.fastLevel(d.sc[:copy(d.sc, x[s.b:hi])])
	}
	ed := d.edges
	// ref returns the reference pace of the block p…q.
	ref := func(p, q int) float64 {
		switch {
		case p > 0 && q < K-1:
			return math.Sqrt(ed[p].leftOut * ed[q].rightOut)
		case p > 0:
			return ed[p].leftOut
		case q < K-1:
			return ed[q].rightOut
		}
		return 0
	}

	// minRight[q] is the smallest rightOut of the long segments q…K−2
	// (those with a right neighbour): no block p…q' with q' ≥ q can have
	// a lower right-hand reference.
	d.minRight = grow(d.minRight, K+1)
	minRight := d.minRight
	minRight[K] = math.Inf(1)
	if K > 0 {
		minRight[K-1] = math.Inf(1)
	}
	for q := K - 2; q >= 0; q-- {
		minRight[q] = min(minRight[q+1], ed[q].rightOut)
	}

	// reach[p] is the last q of a degraded block p…q (−1 if none); the
	// union of the blocks starting at p is p…reach[p].
	d.reach = grow(d.reach, K)
	reach := d.reach
	for p := range K {
		reach[p] = -1
		if p > 0 && ed[p].headIn < r*ed[p].leftOut {
			continue // no step up into p
		}
		mn := math.Inf(1)
		for q := p; q < K; q++ {
			mn = min(mn, L(q))
			if 2*(segs[lvl[q]].b-segs[lvl[p]].a) >= n {
				break // half the request or more: only grows with q
			}
			// The block's minimum only falls as q grows: stop when no
			// later q can pass the level test, two-sided (against the
			// lowest right reference to come) or one-sided at the end.
			if p > 0 {
				lo := ed[p].leftOut
				if mn < r*lo && mn*mn < r*r*lo*minRight[q] {
					break
				}
			} else if mn < r*minRight[q] {
				break
			}
			if q < K-1 && r*ed[q].rightOut > ed[q].tailIn {
				continue // no step down out of q
			}
			if p == 0 && q == K-1 {
				break
			}
			if mn >= r*ref(p, q) {
				reach[p] = q
			}
		}
	}
	end := -1
	for j := range K {
		end = max(end, reach[j])
		segs[lvl[j]].deg = j <= end
	}

	var sub int32
	for j := 0; j < K; {
		s := &segs[lvl[j]]
		if !s.deg {
			s.base = s.med
			j++
			continue
		}
		p := j
		for j < K && segs[lvl[j]].deg {
			j++
		}
		q := j - 1
		rf := ref(p, q)
		sub++
		for t := p; t <= q; t++ {
			if t > p && max(L(t-1), L(t)) >= r*min(L(t-1), L(t)) {
				sub++
			}
			segs[lvl[t]].base = rf
			segs[lvl[t]].sub = sub
		}
	}
	// Short segments: inside a region they belong to its run; next to a
	// region they join it while they are slow themselves (MinSlowdown ×
	// its reference): an outlier at the edge of a run is part of it.
	next := len(segs)
	for i := len(segs) - 1; i >= 0; i-- {
		segs[i].nextLong = next
		if segs[i].long {
			next = i
		}
	}
	var open *span // the degraded long segment a slow stretch continues
	for i := range segs {
		s := &segs[i]
		switch {
		case s.long:
			open = nil
			if s.deg {
				open = s
			}
		case open != nil && (s.nextLong < len(segs) && segs[s.nextLong].deg || s.med >= r*open.base):
			s.deg, s.base, s.sub = true, open.base, open.sub
		default:
			open = nil
		}
	}
	open = nil
	for i := len(segs) - 1; i >= 0; i-- {
		s := &segs[i]
		switch {
		case s.long:
			open = nil
			if s.deg {
				open = s
			}
		case s.deg:
		case open != nil && s.med >= r*open.base:
			s.deg, s.base, s.sub = true, open.base, open.sub
		default:
			open = nil
		}
	}
}

// label gives every gap its pace, its undegraded baseline and its label
// (normal, run id, stall), and returns the request's baseline: the median
// gap of the undegraded long segments.
func (d *Detector) label() float64 {
	x, segs := d.x, d.segs
	n := len(x)
	d.pace = grow(d.pace, n)
	d.base = grow(d.base, n)
	d.lab = grow(d.lab, n)
	pace, base, lab := d.pace, d.base, d.lab

	// Request baseline.
	m := 0
	for _, s := range segs {
		if s.long && !s.deg {
			m += copy(d.sc[m:], x[s.a:s.b])
		}
	}
	if m == 0 {
		m = copy(d.sc, x)
	}
	baseline := median(d.sc[:m])

	prev := -1
	for i := range segs {
		s := &segs[i]
		p, b, l := s.med, s.base, s.sub
		if !s.long {
			// A short segment is an outlier of its surroundings: its pace
			// is the higher of the levels around it, its baseline the
			// higher of their baselines (its run's when it is in one).
			p, b = 0, 0
			if prev >= 0 {
				p, b = segs[prev].med, segs[prev].base
			}
			if nx := s.nextLong; nx < len(segs) {
				p, b = max(p, segs[nx].med), max(b, segs[nx].base)
			}
			if prev < 0 && s.nextLong == len(segs) {
				p, b = baseline, baseline
			}
			if s.deg {
				b = s.base
			}
		} else {
			prev = i
		}
		for k := s.a; k < s.b; k++ {
			pace[k], base[k], lab[k] = p, b, l
		}
	}

	// Stalls: large against the request's baseline and against the local
	// pace: the level of the run the gap is in, and the pace of the
	// edgeWindow gaps on either side (the higher of the two, so that a
	// gap at the edge of a run is judged against the run). Outside runs
	// the windows are raw gaps, not segments, so the verdict does not
	// depend on how finely the change points cut the request.
	for k, g := range x {
		if g < d.cfg.StallMinMs || g < d.cfg.StallFactor*baseline {
			continue
		}
		p := 0.0
		if lab[k] > 0 {
			p = pace[k]
		}
		if k > 0 {
			w := x[max(0, k-edgeWindow):k]
			p = max(p, d.fastLevel(d.sc[:copy(d.sc, w)]))
		}
		if k+1 < n {
			w := x[k+1 : min(n, k+1+edgeWindow)]
			p = max(p, d.fastLevel(d.sc[:copy(d.sc, w)]))
		}
		if g >= d.cfg.StallFactor*p {
			lab[k] = labStall
		}
	}
	d.split()
	return baseline
}

// split turns the labels into pieces: maximal stretches of one label,
// normal gaps dropped. A run fragment shorter than MinRun that a stall
// cut off is absorbed into that stall, and stalls merge when adjacent or
// bridged by a few slow gaps.
func (d *Detector) split() {
	lab := d.lab
	d.pieces = d.pieces[:0]
	for i := 0; i < len(lab); {
		j := i + 1
		for j < len(lab) && lab[j] == lab[i] {
			j++
		}
		if lab[i] != 0 {
			d.pieces = append(d.pieces, piece{i, j, lab[i]})
		}
		i = j
	}
	ps := d.pieces
	out := ps[:0]
	for k := 0; k < len(ps); k++ {
		p := ps[k]
		if p.lab > 0 && p.b-p.a < d.cfg.MinRun {
			switch {
			case len(out) > 0 && out[len(out)-1].lab == labStall && out[len(out)-1].b == p.a:
				out[len(out)-1].b = p.b
			case k+1 < len(ps) && ps[k+1].lab == labStall && ps[k+1].a == p.b:
				ps[k+1].a = p.a
			}
			continue
		}
		if p.lab == labStall && len(out) > 0 && out[len(out)-1].lab == labStall && d.bridged(out[len(out)-1].b, p.a) {
			out[len(out)-1].b = p.b
			continue
		}
		out = append(out, p)
	}
	d.pieces = out
}

// bridged reports whether two stalls ending at a and starting at b are
// one event: adjacent, or separated by fewer than MinRun gaps that are
// all slow (MinSlowdown × their baseline or more).
func (d *Detector) bridged(a, b int) bool {
	if b-a >= d.cfg.MinRun {
		return false
	}
	for k := a; k < b; k++ {
		if d.x[k] < d.cfg.MinSlowdown*d.base[k] {
			return false
		}
	}
	return true
}

// emit appends the pieces to dst as Segments.
func (d *Detector) emit(dst []Segment) []Segment {
	x, base := d.x, d.base
	for _, p := range d.pieces {
		b := 0.0
		for k := p.a; k < p.b; k++ {
			b = max(b, base[k])
		}
		seg := d.sc[:p.b-p.a]
		copy(seg, x[p.a:p.b])
		med := median(seg)
		lost := 0.0
		for _, g := range x[p.a:p.b] {
			lost += g - b
		}
		slow := 0.0
		if b > 0 {
			slow = med / b
		}
		kind := KindStall
		if p.lab > 0 {
			kind = KindRun
			// A run is at least MinRun slow gaps, and mostly slow.
			slowGaps := 0
			for _, g := range x[p.a:p.b] {
				if g >= d.cfg.MinSlowdown*b {
					slowGaps++
				}
			}
			if slow < d.cfg.MinSlowdown || slowGaps < d.cfg.MinRun {
				continue
			}
		}
		dst = append(dst, Segment{
			Start: p.a, End: p.b - 1, Kind: kind,
			BaselineMs: b, MedianMs: med, Slowdown: slow, LostMs: lost,
		})
	}
	return dst
}
