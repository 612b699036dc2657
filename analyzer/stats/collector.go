package stats

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/tokentrace/tokentrace/analyzer/model"
	"github.com/tokentrace/tokentrace/analyzer/report"
	"github.com/tokentrace/tokentrace/semconv"
)

// Defaults of Config.
const (
	// DefaultColdRequests: the first 100 requests per instance are cold.
	DefaultColdRequests = 100
	// DefaultMaxErrorRate: more than 1 % of requests failing is a warning.
	DefaultMaxErrorRate = 0.01
	// DefaultTPOTAlertMs: P99 TPOT above 100 ms is what the usual alert
	// (histogram_quantile(0.99, llm_tpot) > 0.1 s) fires on.
	DefaultTPOTAlertMs = 100.0
	// DefaultMaxInstanceSpread: instances whose mean TPOT differ by more
	// than 20 % are a warning.
	DefaultMaxInstanceSpread = 0.20
	// DefaultMinInstanceRequests: an instance needs 10 TPOT samples to be
	// compared with another.
	DefaultMinInstanceRequests = 10
	// DefaultStallFactor: a gap ≥ 3× its request's median gap is a stall.
	DefaultStallFactor = 3.0
	// DefaultMinStallMs: a stall lasts at least 20 ms.
	DefaultMinStallMs = 20.0
	// DefaultStallMergeMs: stalls of one instance ending within 50 ms of
	// each other are one event (every stream resumes at once).
	DefaultStallMergeMs = 50.0
	// DefaultMinStalls: a period needs at least 4 stall events.
	DefaultMinStalls = 4
	// DefaultMaxPeriodCV: intervals between stalls whose coefficient of
	// variation is below 0.3 are periodic.
	DefaultMaxPeriodCV = 0.3
)

// Config tunes a Collector. A zero field takes its Default* value.
type Config struct {
	// ColdRequests is how many requests per instance count as cold, by
	// model.Request.InstanceOrdinal, else by Ordinal (both 1-based); a
	// negative value makes every request with an ordinal warm.
	ColdRequests int
	// MaxErrorRate is the error share above which the error check warns.
	MaxErrorRate float64
	// TPOTAlertMs is the P99 TPOT below which TPOT "looks normal".
	TPOTAlertMs float64
	// MaxInstanceSpread is the relative difference of mean TPOT between
	// two instances above which the imbalance check warns.
	MaxInstanceSpread float64
	// MinInstanceRequests is the TPOT samples an instance needs to take
	// part in the imbalance check.
	MinInstanceRequests int
	// StallFactor and MinStallMs define a stall: a gap ≥ StallFactor × the
	// request's median gap and ≥ MinStallMs.
	StallFactor float64
	MinStallMs  float64
	// StallMergeMs merges the stalls of an instance that end this close.
	StallMergeMs float64
	// MinStalls is the stall events an instance needs for a period.
	MinStalls int
	// MaxPeriodCV is the coefficient of variation of the intervals between
	// stalls below which they are called periodic.
	MaxPeriodCV float64
}

// DefaultConfig returns the Config with every field at its default (the
// zero Config means the same).
func DefaultConfig() Config { return Config{}.withDefaults() }

func (c Config) withDefaults() Config {
	if c.ColdRequests == 0 {
		c.ColdRequests = DefaultColdRequests
	}
	def := func(v *float64, d float64) {
		if !(*v > 0) || math.IsInf(*v, 0) {
			*v = d
		}
	}
	def(&c.MaxErrorRate, DefaultMaxErrorRate)
	def(&c.TPOTAlertMs, DefaultTPOTAlertMs)
	def(&c.MaxInstanceSpread, DefaultMaxInstanceSpread)
	def(&c.StallFactor, DefaultStallFactor)
	def(&c.MinStallMs, DefaultMinStallMs)
	def(&c.StallMergeMs, DefaultStallMergeMs)
	def(&c.MaxPeriodCV, DefaultMaxPeriodCV)
	if c.MinInstanceRequests <= 0 {
		c.MinInstanceRequests = DefaultMinInstanceRequests
	}
	if c.MinStalls <= 1 {
		c.MinStalls = DefaultMinStalls
	}
	return c
}

// Dimensions returns the dimensions Groups knows, in report order.
func Dimensions() []string {
	return []string{"context", "instance", "model", "model_version", "prompt_type", "warmth"}
}

// Keys of the context dimension (prompt tokens, else prompt chars / 4)
// and of the warmth dimension, in report order. An empty key means the
// request did not say (no label, no prompt size, no ordinal).
const (
	ContextSmall  = "<512"
	ContextMedium = "512-2k"
	ContextLarge  = "2k-8k"
	ContextHuge   = "≥8k"
	Cold          = "cold"
	Warm          = "warm"
)

// record is what the collector keeps of one request (~48 bytes).
type record struct {
	itl        int // first ITL sample in Collector.itl; the next record's is the end
	ttft, tpot float64
	labels     [4]uint32 // model, model_version, prompt_type, instance (label ids)
	context    uint8     // 0 unknown, 1..4 the Context* buckets
	warmth     uint8     // 0 unknown, 1 cold, 2 warm
	flags      uint8
}

const (
	hasTTFT uint8 = 1 << iota
	hasTPOT
	isError
	isDegraded
)

const (
	labModel = iota
	labModelVersion
	labPromptType
	labInstance
)

// stall is a gap that stalled one request: when it ended and how long it was.
type stall struct {
	end int64 // unix ns
	ms  float32
}

// window is when one request was decoding (first → last token, unix ns).
type window struct{ from, to int64 }

type instanceData struct {
	stalls  []stall
	windows []window
}

// Collector accumulates requests one at a time for Summary, Groups and
// Checks. It keeps every sample (see the package doc) and is not safe
// for concurrent use.
type Collector struct {
	cfg    Config
	recs   []record
	itl    []float32
	tokens int

	labelID map[string]uint32
	label   []string // by id; id 0 is ""

	errors map[string]int // by kind: an outcome or "error"
	inst   map[string]*instanceData

	gaps, scratch []float64
}

// NewCollector returns an empty Collector.
func NewCollector(cfg Config) *Collector {
	return &Collector{
		cfg:     cfg.withDefaults(),
		labelID: map[string]uint32{"": 0},
		label:   []string{""},
		errors:  map[string]int{},
		inst:    map[string]*instanceData{},
	}
}

// Add records one request; degraded says whether the detector found a
// segment in it. A nil request is ignored.
func (c *Collector) Add(r *model.Request, degraded bool) {
	if r == nil {
		return
	}
	rec := record{itl: len(c.itl)}
	if len(r.Tokens) > 0 {
		if v := ms(r.TTFT()); finite(v) {
			rec.ttft, rec.flags = v, rec.flags|hasTTFT
		}
	}
	if d, ok := r.TPOT(); ok {
		rec.tpot, rec.flags = ms(d), rec.flags|hasTPOT
	}
	if kind := errorKind(r); kind != "" {
		rec.flags |= isError
		c.errors[kind]++
	}
	if degraded {
		rec.flags |= isDegraded
	}
	rec.labels = [4]uint32{c.intern(r.Model), c.intern(r.ModelVersion), c.intern(r.PromptType), c.intern(r.Instance)}
	rec.context = contextBucket(r)
	rec.warmth = c.warmth(r)
	c.tokens += max(r.TokenCount(), 0)

	c.gaps = r.Gaps(c.gaps[:0])
	for _, g := range c.gaps {
		if finite(g) {
			c.itl = append(c.itl, float32(g))
		}
	}
	c.recs = append(c.recs, rec)
	c.addStalls(r)
}

// errorKind says why a request counts as failed: its outcome when the
// stream was cut short, "error" for a span error, "" when it did not fail.
func errorKind(r *model.Request) string {
	switch r.Outcome {
	case semconv.OutcomeTruncated, semconv.OutcomeClientDisconnect, semconv.OutcomeUpstreamError:
		return r.Outcome
	}
	if r.Error {
		return "error"
	}
	return ""
}

func contextBucket(r *model.Request) uint8 {
	n := r.PromptTokens
	if n <= 0 {
		if r.PromptChars <= 0 {
			return 0
		}
		n = r.PromptChars / 4
	}
	switch {
	case n < 512:
		return 1
	case n < 2048:
		return 2
	case n < 8192:
		return 3
	}
	return 4
}

var contextKeys = [...]string{"", ContextSmall, ContextMedium, ContextLarge, ContextHuge}
var warmthKeys = [...]string{"", Cold, Warm}

func (c *Collector) warmth(r *model.Request) uint8 {
	ord := r.InstanceOrdinal
	if ord <= 0 {
		ord = r.Ordinal
	}
	if ord <= 0 {
		return 0
	}
	if ord <= int64(c.cfg.ColdRequests) {
		return 1
	}
	return 2
}

func (c *Collector) intern(s string) uint32 {
	if id, ok := c.labelID[s]; ok {
		return id
	}
	id := uint32(len(c.label))
	c.labelID[s] = id
	c.label = append(c.label, s)
	return id
}

// addStalls records the request's decoding window and its stalls (gaps ≥
// StallFactor × its median gap and ≥ MinStallMs) on its instance; c.gaps
// holds the request's gaps.
func (c *Collector) addStalls(r *model.Request) {
	if r.Instance == "" || len(r.Tokens) < 2 {
		return
	}
	d := c.inst[r.Instance]
	if d == nil {
		d = &instanceData{}
		c.inst[r.Instance] = d
	}
	d.windows = append(d.windows, window{r.Tokens[0].Time.UnixNano(), r.Tokens[len(r.Tokens)-1].Time.UnixNano()})
	if len(c.gaps) < 4 {
		return // too few gaps for a median to mean "normal pace"
	}
	c.scratch = append(c.scratch[:0], c.gaps...)
	slices.Sort(c.scratch)
	med := quantile(c.scratch, 0.5)
	limit := max(c.cfg.StallFactor*med, c.cfg.MinStallMs)
	for i, g := range c.gaps {
		if g >= limit && finite(g) {
			d.stalls = append(d.stalls, stall{end: r.Tokens[i+1].Time.UnixNano(), ms: float32(g)})
		}
	}
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

// Summary returns the run-wide figures: Requests, Tokens,
// DegradedRequests, the TTFT, TPOT and ITL distributions and their
// histograms. Segments and Causes are the caller's to fill.
func (c *Collector) Summary() report.Summary {
	s := report.Summary{Requests: len(c.recs), Tokens: c.tokens}
	var ttft, tpot []float64
	for i := range c.recs {
		r := &c.recs[i]
		if r.flags&isDegraded != 0 {
			s.DegradedRequests++
		}
		if r.flags&hasTTFT != 0 {
			ttft = append(ttft, r.ttft)
		}
		if r.flags&hasTPOT != 0 {
			tpot = append(tpot, r.tpot)
		}
	}
	slices.Sort(ttft)
	slices.Sort(tpot)
	itl := slices.Clone(c.itl)
	sortFloat32(itl)
	s.TTFT, s.TPOT, s.ITL = sortedDist(ttft), sortedDist(tpot), sortedDist(itl)
	for _, h := range []report.Histogram{histogram("ttft_ms", ttft), histogram("tpot_ms", tpot), histogram("itl_ms", itl)} {
		if len(h.Counts) > 0 {
			s.Histograms = append(s.Histograms, h)
		}
	}
	return s
}

// Groups returns the statistics by each of dims (values of Dimensions();
// others are ignored), sorted by dimension, then key: context buckets
// from small to large, cold before warm, other keys alphabetically; the
// empty key (not known) last.
func (c *Collector) Groups(dims []string) []report.Group {
	var out []report.Group
	seen := map[string]bool{}
	for _, dim := range Dimensions() { // sorted
		if seen[dim] || !slices.Contains(dims, dim) {
			continue
		}
		seen[dim] = true
		out = append(out, c.groups(dim)...)
	}
	return out
}

// groups builds the groups of one dimension.
func (c *Collector) groups(dim string) []report.Group {
	type acc struct {
		key              string
		order            int
		recs             []int
		errors, degraded int
	}
	byKey := map[string]*acc{}
	for i := range c.recs {
		key, order := c.key(dim, &c.recs[i])
		a := byKey[key]
		if a == nil {
			a = &acc{key: key, order: order}
			byKey[key] = a
		}
		a.recs = append(a.recs, i)
	}
	accs := make([]*acc, 0, len(byKey))
	for _, a := range byKey {
		accs = append(accs, a)
	}
	slices.SortFunc(accs, func(a, b *acc) int {
		if (a.key == "") != (b.key == "") {
			if a.key == "" {
				return 1
			}
			return -1
		}
		return cmp.Or(cmp.Compare(a.order, b.order), cmp.Compare(a.key, b.key))
	})
	out := make([]report.Group, 0, len(accs))
	var ttft, tpot []float64
	var itl []float32
	for _, a := range accs {
		g := report.Group{Dimension: dim, Key: a.key, Requests: len(a.recs)}
		ttft, tpot, itl = ttft[:0], tpot[:0], itl[:0]
		for _, i := range a.recs {
			r := &c.recs[i]
			if r.flags&isError != 0 {
				g.Errors++
			}
			if r.flags&isDegraded != 0 {
				g.Degraded++
			}
			if r.flags&hasTTFT != 0 {
				ttft = append(ttft, r.ttft)
			}
			if r.flags&hasTPOT != 0 {
				tpot = append(tpot, r.tpot)
			}
			itl = append(itl, c.itl[r.itl:c.itlEnd(i)]...)
		}
		slices.Sort(ttft)
		slices.Sort(tpot)
		sortFloat32(itl)
		g.TTFT, g.TPOT, g.ITL = sortedDist(ttft), sortedDist(tpot), sortedDist(itl)
		out = append(out, g)
	}
	return out
}

func (c *Collector) itlEnd(i int) int {
	if i+1 < len(c.recs) {
		return c.recs[i+1].itl
	}
	return len(c.itl)
}

// key returns the group key of a record and its sort rank (0 for
// alphabetical dimensions).
func (c *Collector) key(dim string, r *record) (string, int) {
	switch dim {
	case "model":
		return c.label[r.labels[labModel]], 0
	case "model_version":
		return c.label[r.labels[labModelVersion]], 0
	case "prompt_type":
		return c.label[r.labels[labPromptType]], 0
	case "instance":
		return c.label[r.labels[labInstance]], 0
	case "context":
		return contextKeys[r.context], int(r.context)
	case "warmth":
		return warmthKeys[r.warmth], int(r.warmth)
	}
	return "", 0
}
