package analyzer

import (
	"context"
	"slices"
	"sort"
	"time"

	"github.com/tokentrace/tokentrace/analyzer/correlate"
	"github.com/tokentrace/tokentrace/analyzer/detect"
	"github.com/tokentrace/tokentrace/analyzer/model"
	"github.com/tokentrace/tokentrace/analyzer/report"
	"github.com/tokentrace/tokentrace/analyzer/source"
	"github.com/tokentrace/tokentrace/analyzer/stats"
)

// Config configures an analysis.
type Config struct {
	Detect    detect.Config
	Correlate correlate.Config
	Stats     stats.Config
	// GroupBy lists the dimensions of the grouped statistics.
	GroupBy []string
	// Detail is how many of the worst requests keep their gap series in
	// the report (for timelines and charts).
	Detail int
	// JaegerUI, when set, links every request to <JaegerUI>/trace/<id>.
	JaegerUI string
	// Source describes the input in the report.
	Source string
	// StallFactor marks the gaps kept for the same-instant check: gaps of
	// at least StallFactor × the request's baseline.
	StallFactor float64
	// Focus is a trace id whose request keeps its gap series whatever
	// its rank (tokentrace trace).
	Focus string
	// Skips collects what was not analysed (default: a new one); share it
	// with a source that reports skips of its own.
	Skips *source.Skips
	// Now stamps the report (default time.Now).
	Now func() time.Time
}

// DefaultConfig returns the defaults of every stage.
func DefaultConfig() Config {
	return Config{
		Detect:      detect.DefaultConfig(),
		Correlate:   correlate.DefaultConfig(),
		Stats:       stats.DefaultConfig(),
		GroupBy:     []string{"model", "prompt_type", "instance", "warmth"},
		Detail:      10,
		StallFactor: 3,
		Now:         time.Now,
	}
}

// maxKeptGaps bounds how many degraded requests keep their gaps until the
// worst are known.
const maxKeptGaps = 2000

// Analyze reads every request of src and returns the report.
func Analyze(ctx context.Context, src source.Source, cfg Config) (*report.Report, error) {
	a := newRun(cfg)
	skips := cfg.Skips
	if skips == nil {
		skips = &source.Skips{}
	}
	if err := source.Requests(ctx, src, skips, a.add); err != nil {
		return nil, err
	}
	rpt := a.finish()
	rpt.Skipped = skips.List()
	return rpt, nil
}

// AnalyzeRequests analyses requests already in memory.
func AnalyzeRequests(reqs []*model.Request, cfg Config) *report.Report {
	a := newRun(cfg)
	for _, r := range reqs {
		_ = a.add(r)
	}
	return a.finish()
}

type run struct {
	cfg   Config
	det   *detect.Detector
	col   *stats.Collector
	idx   *correlate.Index
	out   []report.Request
	items []*correlate.Item
	gaps  map[int][]float64 // kept gap series, by request position
	toks  map[int][]int
	buf   []float64
	segs  []detect.Segment
}

func newRun(cfg Config) *run {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.StallFactor <= 0 {
		cfg.StallFactor = 3
	}
	return &run{
		cfg: cfg, det: detect.NewDetector(cfg.Detect), col: stats.NewCollector(cfg.Stats),
		idx: correlate.NewIndex(cfg.Correlate), gaps: map[int][]float64{}, toks: map[int][]int{},
	}
}

func (a *run) add(r *model.Request) error {
	a.buf = r.Gaps(a.buf[:0])
	var base float64
	a.segs, base = a.det.Detect(a.segs[:0], a.buf)
	a.col.Add(r, len(a.segs) > 0)

	it := &correlate.Item{
		TraceID: r.TraceID, Instance: r.Instance, Start: r.Start, End: r.End,
		Context: correlate.ContextOf(r), Events: r.Events, Generated: len(r.Tokens) >= 2,
	}
	if len(r.Tokens) > 0 {
		it.First = r.Tokens[0].Time
	}
	for i, g := range a.buf {
		if base > 0 && g >= a.cfg.StallFactor*base && len(it.Stalls) < 256 {
			it.Stalls = append(it.Stalls, correlate.Window{Start: r.Tokens[i].Time, End: r.Tokens[i+1].Time})
		}
	}
	for _, s := range a.segs {
		cs := correlate.Segment{
			Window:     correlate.Window{Start: r.Tokens[s.Start].Time, End: r.Tokens[s.End+1].Time},
			Stall:      s.Kind == detect.KindStall,
			Gaps:       slices.Clone(a.buf[s.Start : s.End+1]),
			BaselineMs: base,
		}
		for i := s.Start; i <= s.End; i++ {
			t := r.Tokens[i+1]
			cs.Ends = append(cs.Ends, t.Time)
			cs.FirstTokens = append(cs.FirstTokens, t.Index)
			cs.LastTokens = append(cs.LastTokens, t.Index+t.Count-1)
		}
		it.Segments = append(it.Segments, cs)
	}
	a.idx.Add(it)
	a.items = append(a.items, it)

	rr := report.Request{
		TraceID: r.TraceID, SpanID: r.SpanID, Service: r.Service, Instance: r.Instance, Model: r.Model,
		PromptType: r.PromptType, ModelVersion: r.ModelVersion, Ordinal: r.Ordinal,
		Start: r.Start, Tokens: r.TokenCount(), TTFTMs: ms(r.TTFT()), Outcome: r.Outcome, Error: r.Error,
		TimesFrom: string(r.TimesFrom), Warnings: r.Warnings, Segments: []report.Segment{},
	}
	if tpot, ok := r.TPOT(); ok {
		rr.TPOTMs = ms(tpot)
	}
	if a.cfg.JaegerUI != "" {
		rr.URL = a.cfg.JaegerUI + "/trace/" + r.TraceID
	}
	if (len(a.segs) > 0 && len(a.gaps) < maxKeptGaps) || (a.cfg.Focus != "" && r.TraceID == a.cfg.Focus) {
		pos := len(a.out)
		a.gaps[pos] = slices.Clone(a.buf)
		t := make([]int, len(a.buf))
		for i := range t {
			t[i] = r.Tokens[i+1].Index
		}
		a.toks[pos] = t
	}
	a.out = append(a.out, rr)
	return nil
}

func (a *run) finish() *report.Report {
	a.idx.Attribute(a.cfg.Detect.MinSlowdown)
	causes := map[string]int{}
	nseg, degraded := 0, 0
	for i, it := range a.items {
		rr := &a.out[i]
		for _, s := range it.Segments {
			med, slow, lost := s.Stats()
			kind := "run"
			if s.Stall {
				kind = "stall"
			}
			rr.Segments = append(rr.Segments, report.Segment{
				StartToken: s.FirstTokens[0], EndToken: s.LastTokens[len(s.LastTokens)-1], Kind: kind,
				Start: s.Start, End: s.End, BaselineMs: round3(s.BaselineMs), MedianMs: round3(med),
				Slowdown: round3(slow), LostMs: round3(lost), Cause: s.Cause, Confidence: s.Confidence,
				Detail: s.Detail, Evidence: nonNil(s.Evidence),
			})
			causes[s.Cause]++
			nseg++
		}
		if len(rr.Segments) > 0 {
			degraded++
		}
	}
	// The worst requests (most time lost) keep their gap series.
	order := make([]int, len(a.out))
	for i := range order {
		order[i] = i
	}
	lost := func(r *report.Request) float64 {
		s := 0.0
		for _, g := range r.Segments {
			s += g.LostMs
		}
		return s
	}
	sort.SliceStable(order, func(i, j int) bool { return lost(&a.out[order[i]]) > lost(&a.out[order[j]]) })
	for rank, pos := range order {
		if (rank < a.cfg.Detail || a.out[pos].TraceID == a.cfg.Focus) && a.gaps[pos] != nil {
			a.out[pos].GapsMs = roundAll(a.gaps[pos])
			a.out[pos].GapTokens = a.toks[pos]
		}
	}
	sum := a.col.Summary()
	sum.Segments = nseg
	sum.DegradedRequests = degraded
	if len(causes) > 0 {
		sum.Causes = causes
	}
	return &report.Report{
		Schema: report.Schema, Generated: a.cfg.Now().UTC(), Source: a.cfg.Source,
		Summary: sum, Groups: a.col.Groups(a.cfg.GroupBy), Checks: a.col.Checks(),
		Requests: a.out, Sensitivity: a.cfg.Detect.Sensitivity,
	}
}

func ms(d time.Duration) float64 { return round3(float64(d) / float64(time.Millisecond)) }

func round3(f float64) float64 { return float64(int64(f*1000+0.5)) / 1000 }

func roundAll(v []float64) []float64 {
	out := make([]float64, len(v))
	for i, f := range v {
		out[i] = round3(f)
	}
	return out
}

func nonNil(e []report.Evidence) []report.Evidence {
	if e == nil {
		return []report.Evidence{}
	}
	return e
}
