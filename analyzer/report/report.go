// Package report holds the analyzer's results as data — the JSON report
// tokentrace.report/v1 (docs/report.md) — and renders them as text for a
// terminal, JSON, Markdown for write-ups and a self-contained HTML page.
// Results are computed first, then rendered: every format is one
// function from *Report to an io.Writer.
package report

import "time"

// Schema is the version of the JSON report.
const Schema = "tokentrace.report/v1"

// Report is the result of one analysis.
type Report struct {
	Schema    string    `json:"schema"`
	Generated time.Time `json:"generated"`
	// Source says where the traces came from (files, a Jaeger endpoint).
	Source  string  `json:"source"`
	Summary Summary `json:"summary"`
	// Groups are the statistics by dimension (model, prompt type, ...).
	Groups []Group `json:"groups,omitempty"`
	// Checks are the distortion checks (error rate hiding behind a normal
	// TPOT, instance imbalance, sawtooth ITL).
	Checks   []Check   `json:"checks,omitempty"`
	Requests []Request `json:"requests"`
	// Skipped counts what could not be analysed, by reason.
	Skipped  []Skip   `json:"skipped,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
	// Sensitivity is the detector setting used.
	Sensitivity float64 `json:"sensitivity"`
}

// Summary is the whole run at a glance.
type Summary struct {
	Requests         int  `json:"requests"`
	Tokens           int  `json:"tokens"`
	DegradedRequests int  `json:"degraded_requests"`
	Segments         int  `json:"segments"`
	TTFT             Dist `json:"ttft_ms"`
	TPOT             Dist `json:"tpot_ms"`
	ITL              Dist `json:"itl_ms"`
	// Causes counts segments by cause.
	Causes map[string]int `json:"causes,omitempty"`
	// Histograms are the TTFT, TPOT and ITL samples counted in
	// log-spaced buckets, for charts (the exact figures are the Dists).
	Histograms []Histogram `json:"histograms,omitempty"`
}

// Histogram counts samples in buckets: Counts[i] is the number of samples
// in (Bounds[i-1], Bounds[i]] (the first bucket is (−∞, Bounds[0]]);
// len(Counts) == len(Bounds)+1, the last count is the overflow above the
// last bound. Bounds are in milliseconds and log-spaced (1, 1.5, 2, 3, 5,
// 7 per decade), trimmed to the samples' range.
type Histogram struct {
	// Name is "ttft_ms", "tpot_ms" or "itl_ms".
	Name   string    `json:"name"`
	Bounds []float64 `json:"bounds_ms"`
	Counts []int     `json:"counts"`
}

// Dist is an exact distribution summary in milliseconds, computed from
// the samples (not from histogram buckets).
type Dist struct {
	Count int     `json:"count"`
	Mean  float64 `json:"mean"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
	P999  float64 `json:"p999"`
	P9999 float64 `json:"p9999"`
	Max   float64 `json:"max"`
}

// Group is the statistics of the requests sharing one value of a
// dimension: model, model_version, prompt_type, instance, context
// (prompt-length bucket) or warmth (cold/warm).
type Group struct {
	Dimension string `json:"dimension"`
	Key       string `json:"key"`
	Requests  int    `json:"requests"`
	Errors    int    `json:"errors"`
	Degraded  int    `json:"degraded"`
	TTFT      Dist   `json:"ttft_ms"`
	TPOT      Dist   `json:"tpot_ms"`
	ITL       Dist   `json:"itl_ms"`
}

// Check is one distortion check.
type Check struct {
	Name   string `json:"name"`
	Status string `json:"status"` // "ok" or "warn"
	Detail string `json:"detail"`
}

// Skip counts inputs not analysed for one reason.
type Skip struct {
	Reason string `json:"reason"`
	Count  int    `json:"count"`
	// Example names one trace (or file:line) that was skipped.
	Example string `json:"example,omitempty"`
}

// Request is one analysed request.
type Request struct {
	TraceID      string    `json:"trace_id"`
	SpanID       string    `json:"span_id"`
	Service      string    `json:"service"`
	Instance     string    `json:"instance"`
	Model        string    `json:"model"`
	PromptType   string    `json:"prompt_type,omitempty"`
	ModelVersion string    `json:"model_version,omitempty"`
	Ordinal      int64     `json:"ordinal,omitempty"`
	Start        time.Time `json:"start"`
	Tokens       int       `json:"tokens"`
	TTFTMs       float64   `json:"ttft_ms"`
	TPOTMs       float64   `json:"tpot_ms"`
	Outcome      string    `json:"outcome,omitempty"`
	Error        bool      `json:"error,omitempty"`
	// TimesFrom is "events", "compact" or "none".
	TimesFrom string    `json:"times_from"`
	Segments  []Segment `json:"segments"`
	// URL opens the trace in the Jaeger UI (when --jaeger-ui is given).
	URL      string   `json:"url,omitempty"`
	Warnings []string `json:"warnings,omitempty"`
	// GapsMs is the per-token gap after each chunk (gap i ends token
	// Tokens[i+1]); filled only for requests shown in depth, for the
	// timeline charts.
	GapsMs []float64 `json:"gaps_ms,omitempty"`
	// GapTokens is the token index at which each gap of GapsMs ends.
	GapTokens []int `json:"gap_tokens,omitempty"`
}

// Degraded reports whether the request has a segment.
func (r *Request) Degraded() bool { return len(r.Segments) > 0 }

// Causes of a segment.
const (
	CausePrefill = "prefill"
	CauseBatch   = "batch"
	CauseKVSwap  = "kv_swap"
	CauseGC      = "gc"
	CauseUnknown = "unknown"
)

// Segment is a run of tokens that came out much slower than the request's
// own baseline (Kind "run"), or a single stalled gap (Kind "stall").
type Segment struct {
	// StartToken and EndToken are 0-based output-token indices: the tokens
	// whose gaps (t_i − t_{i−1}) are degraded.
	StartToken int       `json:"start_token"`
	EndToken   int       `json:"end_token"`
	Kind       string    `json:"kind"`
	Start      time.Time `json:"start"` // time of token StartToken−1
	End        time.Time `json:"end"`   // time of token EndToken
	BaselineMs float64   `json:"baseline_ms"`
	MedianMs   float64   `json:"median_ms"`
	Slowdown   float64   `json:"slowdown"`
	// LostMs is the time lost against the baseline pace.
	LostMs     float64    `json:"lost_ms"`
	Cause      string     `json:"cause"`
	Confidence float64    `json:"confidence"`
	Detail     string     `json:"detail,omitempty"`
	Evidence   []Evidence `json:"evidence"`
}

// Evidence is one fact a cause rests on.
type Evidence struct {
	// Kind: prefill_event, preemption_event, gc_event (an engine event on
	// this span), cross_trace_prefill (another request of the instance was
	// prefilling), cross_trace_batch (a long-context request decoding
	// alongside), same_instant_stall (every request of the instance
	// stalled at once), victim_gap (only this request stalled).
	Kind      string  `json:"kind"`
	TraceID   string  `json:"trace_id,omitempty"`
	OverlapMs float64 `json:"overlap_ms"`
	// PromptTokens is the other request's prompt size (prefill and batch
	// evidence), when known.
	PromptTokens int    `json:"prompt_tokens,omitempty"`
	Detail       string `json:"detail,omitempty"`
}
