package sim

import (
	"encoding/json"
	"io"
	"slices"
	"sync"
	"time"
)

// Ground-truth causes, the analyzer's vocabulary (shared/DESIGN.md).
const (
	CausePrefill = "prefill"
	CauseBatch   = "batch"
	CauseKVSwap  = "kv_swap"
	CauseGC      = "gc"
	CauseUnknown = "unknown"
)

// Labelling thresholds of the ground truth (docs/simulator.md). They are
// the product's definition of a degradation, the same as the analyzer's
// defaults: a run is at least three gaps at ≥ 1.6× the request's baseline,
// a stall a gap (or two) at ≥ 4× — a late token at 1.5–3× happens from
// delivery and scheduling alone and is not what a root-cause report is for.
const (
	// TruthMinSlowdown: a run of at least TruthMinRun gaps with one cause
	// is a degradation when its median is at least this many times the
	// request's baseline.
	TruthMinSlowdown = 1.6
	TruthMinRun      = 3
	// TruthStallSlowdown: a shorter run (a stall) must be at least this.
	TruthStallSlowdown = 4
	// TruthBatchSlowdown and TruthBatchMinGaps: the stricter rule for the
	// batch cause, as in shared/data/realengine.
	TruthBatchSlowdown = 1.8
	TruthBatchMinGaps  = 3
)

// TruthSegment is one injected slow-down of one request.
type TruthSegment struct {
	// StartToken and EndToken are 0-based output-token indices; token i's
	// gap is t_i − t_{i−1}.
	StartToken int       `json:"start_token"`
	EndToken   int       `json:"end_token"`
	Cause      string    `json:"cause"`
	By         []string  `json:"by,omitempty"` // the requests that caused it
	Start      time.Time `json:"start"`        // token StartToken−1's time
	End        time.Time `json:"end"`          // token EndToken's time
	MedianMs   float64   `json:"median_ms"`
	BaselineMs float64   `json:"baseline_ms"`
	Slowdown   float64   `json:"slowdown"`
}

// TruthRecord is the ground truth of one request.
type TruthRecord struct {
	Schema       string         `json:"schema"`
	Instance     string         `json:"instance"`
	RequestID    string         `json:"request_id"`
	TraceID      string         `json:"trace_id,omitempty"`
	Ordinal      int            `json:"ordinal"`
	PromptTokens int            `json:"prompt_tokens"`
	Tokens       int            `json:"tokens"`
	Arrived      time.Time      `json:"arrived"`
	FirstToken   time.Time      `json:"first_token"`
	BaselineMs   float64        `json:"baseline_ms"`
	Segments     []TruthSegment `json:"segments"`
}

// TruthSchema names the ground-truth JSONL format.
const TruthSchema = "tokentrace.simtruth/v1"

// TruthWriter collects ground-truth records and writes them as JSON lines.
type TruthWriter struct {
	mu      sync.Mutex
	w       io.Writer
	err     error
	records []TruthRecord
}

// NewTruthWriter returns a writer to w (nil: keep records in memory only).
func NewTruthWriter(w io.Writer) *TruthWriter { return &TruthWriter{w: w} }

// Records returns the records written so far.
func (t *TruthWriter) Records() []TruthRecord {
	t.mu.Lock()
	defer t.mu.Unlock()
	return slices.Clone(t.records)
}

// Err returns the first write error.
func (t *TruthWriter) Err() error {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.err
}

func (t *TruthWriter) write(instance string, r *Request) {
	rec := label(instance, r)
	t.mu.Lock()
	defer t.mu.Unlock()
	t.records = append(t.records, rec)
	if t.w != nil && t.err == nil {
		b, _ := json.Marshal(rec)
		_, t.err = t.w.Write(append(b, '\n'))
	}
}

func causeOf(f *stepFlags) string {
	switch {
	case f.preempted:
		return CauseKVSwap
	case f.gc:
		return CauseGC
	case len(f.prefillBy) > 0:
		return CausePrefill
	case f.swap:
		return CauseKVSwap
	case len(f.longBy) > 0:
		return CauseBatch
	case f.spike:
		return CauseUnknown
	}
	return ""
}

// label applies the ground-truth rule to a finished request, on the
// simulated duration of each gap (so host scheduling noise is not labelled
// as an injected cause): the baseline is the median of its gaps in steps
// where nothing was injected; each run of consecutive gaps with one cause
// is a segment when its median is at least TruthMinSlowdown × baseline
// (TruthStallSlowdown for runs shorter than TruthMinRun; TruthBatchSlowdown
// and at least TruthBatchMinGaps gaps for batch).
func label(instance string, r *Request) TruthRecord {
	rec := TruthRecord{
		Schema: TruthSchema, Instance: instance, RequestID: r.ID, Ordinal: r.ordinal,
		PromptTokens: r.PromptTokens, Tokens: r.generated, Arrived: r.arrived, FirstToken: r.first,
		Segments: []TruthSegment{},
	}
	if r.TraceID.IsValid() {
		rec.TraceID = r.TraceID.String()
	}
	causes := make([]string, len(r.gaps))
	var clean, all []time.Duration
	for i := range r.gaps {
		causes[i] = causeOf(&r.gaps[i].flags)
		all = append(all, r.gaps[i].gap)
		if causes[i] == "" {
			clean = append(clean, r.gaps[i].gap)
		}
	}
	if len(all) == 0 {
		return rec
	}
	base := median(clean)
	if len(clean) < 3 {
		base = quantile(all, 0.2)
	}
	rec.BaselineMs = ms(base)
	for i := 0; i < len(causes); {
		j := i
		for j+1 < len(causes) && causes[j+1] == causes[i] {
			j++
		}
		if c := causes[i]; c != "" {
			gaps := make([]time.Duration, 0, j-i+1)
			var by []string
			for k := i; k <= j; k++ {
				gaps = append(gaps, r.gaps[k].gap)
				f := &r.gaps[k].flags
				src := f.prefillBy
				if c == CauseBatch {
					src = f.longBy
				}
				for _, id := range src {
					if !slices.Contains(by, id) {
						by = append(by, id)
					}
				}
			}
			med := median(gaps)
			need, minGaps := TruthMinSlowdown, 1
			if len(gaps) < TruthMinRun {
				need = TruthStallSlowdown
			}
			if c == CauseBatch {
				need, minGaps = TruthBatchSlowdown, TruthBatchMinGaps
			}
			if base > 0 && float64(med) >= need*float64(base) && len(gaps) >= minGaps {
				start := r.first
				if i > 0 {
					start = r.gaps[i-1].at
				}
				rec.Segments = append(rec.Segments, TruthSegment{
					StartToken: i + 1, EndToken: j + 1, Cause: c, By: by,
					Start: start, End: r.gaps[j].at,
					MedianMs: ms(med), BaselineMs: ms(base), Slowdown: float64(med) / float64(base),
				})
			}
		}
		i = j + 1
	}
	return rec
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func median(d []time.Duration) time.Duration { return quantile(d, 0.5) }

// quantile is the nearest-rank quantile of d (d is not modified).
func quantile(d []time.Duration, q float64) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	i := int(q * float64(len(s)-1))
	if len(s)%2 == 0 && q == 0.5 {
		return (s[i] + s[i+1]) / 2
	}
	return s[i]
}
