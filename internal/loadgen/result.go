package loadgen

import (
	"encoding/json"
	"io"
	"math"
	"slices"
	"sort"
	"time"
)

// StopReason says what ended the arrivals of a run.
type StopReason string

// The reasons a run stops.
const (
	StopRequests StopReason = "requests" // the count bound was reached
	StopDuration StopReason = "duration" // the time bound was reached
	StopStopped  StopReason = "stopped"  // Config.Stop was closed
	StopCanceled StopReason = "canceled" // Run's context was cancelled
)

// Record is the measurement of one request, taken by the client. Times are
// offsets from Start, the moment the request was handed to the HTTP client.
type Record struct {
	// Index is the arrival's ordinal, from 0.
	Index int `json:"index"`
	// Type is the request type's name.
	Type string `json:"type"`
	// Scheduled is when the arrival was due, from the start of the run.
	Scheduled time.Duration `json:"scheduled_ns"`
	// Wait is how long the arrival waited for the concurrency limit.
	Wait time.Duration `json:"wait_ns"`
	// Start is when the request was sent.
	Start time.Time `json:"start"`
	// Stream says whether the request was streamed.
	Stream bool `json:"stream"`
	// TTFT is the time to the first content-bearing chunk (0 when none).
	TTFT time.Duration `json:"ttft_ns"`
	// TokenTimes are the arrival times of the content-bearing chunks. A
	// chunk that carries several tokens is one time.
	TokenTimes []time.Duration `json:"token_times_ns,omitempty"`
	// E2E is the time to the end of the response.
	E2E time.Duration `json:"e2e_ns"`
	// OutputTokens is completion_tokens from the usage the server sent,
	// else the number of content-bearing chunks.
	OutputTokens int `json:"output_tokens"`
	// PromptTokens is prompt_tokens from the usage (0 without usage).
	PromptTokens int `json:"prompt_tokens"`
	// UsageReported says whether the server sent usage.
	UsageReported bool `json:"usage_reported"`
	// Status is the HTTP status (0 when no response came).
	Status int `json:"status"`
	// Err says what went wrong: "HTTP 503: <the error body's message>",
	// a transport error, "stream truncated without [DONE] ...", a stream
	// error chunk. Empty for a success.
	Err string `json:"error,omitempty"`
	// Canceled says the request was aborted by the cancellation of the
	// run; it counts neither as a success nor as a failure.
	Canceled bool `json:"canceled,omitempty"`
	// TraceID is the trace id named by the response's traceparent or
	// X-Trace-Id header; empty when it had neither.
	TraceID string `json:"trace_id,omitempty"`
}

// OK reports whether the request succeeded.
func (r *Record) OK() bool { return r.Err == "" && !r.Canceled }

// TPOT returns the request's mean time per output token excluding the
// first: (last − first chunk time) / (OutputTokens − 1). ok is false when
// there are fewer than two chunks or two tokens.
func (r *Record) TPOT() (tpot time.Duration, ok bool) {
	n := len(r.TokenTimes)
	if n < 2 || r.OutputTokens < 2 {
		return 0, false
	}
	span := r.TokenTimes[n-1] - r.TokenTimes[0]
	return time.Duration(math.Round(float64(span) / float64(r.OutputTokens-1))), true
}

// ITL returns the gaps between consecutive chunks (every gap after the
// first token).
func (r *Record) ITL() []time.Duration {
	if len(r.TokenTimes) < 2 {
		return nil
	}
	gaps := make([]time.Duration, len(r.TokenTimes)-1)
	for i := 1; i < len(r.TokenTimes); i++ {
		gaps[i-1] = r.TokenTimes[i] - r.TokenTimes[i-1]
	}
	return gaps
}

// Result is everything a run measured.
type Result struct {
	// Start is when the run started; Duration runs from it to the end of
	// the last request.
	Start    time.Time
	Duration time.Duration
	// Stopped says what ended the arrivals.
	Stopped StopReason
	// Types are the request types' names in the order of Config.Types.
	Types []string
	// Records holds one record per request sent, in arrival order.
	Records []Record
}

// WriteRecordsJSON writes the records as JSON lines, one per request
// (durations in nanoseconds). They hold no prompt or response text.
func (r *Result) WriteRecordsJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	for i := range r.Records {
		if err := enc.Encode(&r.Records[i]); err != nil {
			return err
		}
	}
	return nil
}

// Stats describes a sample of durations exactly: every figure comes from
// the sorted samples, none from a histogram.
type Stats struct {
	Count  int
	Mean   time.Duration
	Median time.Duration // P50
	P90    time.Duration
	P99    time.Duration
	P999   time.Duration // P99.9
	P9999  time.Duration // P99.99
	Max    time.Duration
}

// NewStats computes the statistics of samples (which it does not modify).
// Percentiles are by linear interpolation, see [Percentile]. An empty
// sample gives the zero Stats.
func NewStats(samples []time.Duration) Stats {
	if len(samples) == 0 {
		return Stats{}
	}
	s := slices.Clone(samples)
	slices.Sort(s)
	var sum float64
	for _, v := range s {
		sum += float64(v)
	}
	return Stats{
		Count:  len(s),
		Mean:   time.Duration(math.Round(sum / float64(len(s)))),
		Median: Percentile(s, 50),
		P90:    Percentile(s, 90),
		P99:    Percentile(s, 99),
		P999:   Percentile(s, 99.9),
		P9999:  Percentile(s, 99.99),
		Max:    s[len(s)-1],
	}
}

// Percentile returns the p-th percentile (0 <= p <= 100) of sorted, an
// ascending sample, by linear interpolation between closest ranks (the
// default of numpy.percentile, as vLLM's benchmark uses; Hyndman & Fan
// type 7): with n samples x[0] <= ... <= x[n-1], the rank is
// h = (n−1)·p/100 and the percentile x[⌊h⌋] + (h−⌊h⌋)·(x[⌊h⌋+1] − x[⌊h⌋]),
// rounded to the nanosecond. P0 is the minimum, P100 the maximum, and a
// single sample is every percentile. An empty sample gives 0.
func Percentile(sorted []time.Duration, p float64) time.Duration {
	n := len(sorted)
	if n == 0 {
		return 0
	}
	p = math.Max(0, math.Min(100, p))
	h := float64(n-1) * p / 100
	lo := int(math.Floor(h))
	if lo >= n-1 {
		return sorted[n-1]
	}
	frac := h - float64(lo)
	v := float64(sorted[lo]) + frac*float64(sorted[lo+1]-sorted[lo])
	return time.Duration(math.Round(v))
}

// Summary is the report of a run: vLLM-bench figures over the successful
// requests, overall and per request type.
type Summary struct {
	// Requests counts the requests sent; Successful + Failed + Canceled.
	Requests   int
	Successful int
	Failed     int
	// Canceled counts the requests aborted by the run's cancellation.
	Canceled int
	// ErrorRate is Failed / (Successful + Failed), 0 when both are 0.
	ErrorRate float64
	// Duration is the benchmark duration: from the start of the run to
	// the end of its last request.
	Duration time.Duration
	// Stopped says what ended the arrivals.
	Stopped StopReason
	// InputTokens and OutputTokens add up the successful requests' usage.
	InputTokens  int
	OutputTokens int
	// RequestThroughput is successful requests per second of Duration;
	// OutputThroughput is their output tokens per second.
	RequestThroughput float64
	OutputThroughput  float64
	// Waited counts the arrivals that found the concurrency limit full;
	// TotalWait adds up how long they waited, MaxWait is the longest.
	Waited    int
	TotalWait time.Duration
	MaxWait   time.Duration
	// TTFT (streamed requests), TPOT excluding the first token (per
	// request, streamed requests of two tokens or more), ITL (every gap
	// after the first token, pooled) and E2E latency (every request), over
	// the successful requests.
	TTFT, TPOT, ITL, E2E Stats
	// Types breaks the figures down by request type, in Config order.
	Types []TypeSummary
	// Errors counts the failed requests by message, most frequent first.
	Errors []ErrorCount
}

// TypeSummary is the part of a summary for one request type.
type TypeSummary struct {
	Name                 string
	Requests             int
	Successful           int
	Failed               int
	OutputTokens         int
	TTFT, TPOT, ITL, E2E Stats
}

// ErrorCount is how many failed requests had one message.
type ErrorCount struct {
	Message string
	Count   int
}

// samples gathers the successful records' measurements.
type samples struct {
	requests, ok, failed, canceled int
	in, out                        int
	ttft, tpot, itl, e2e           []time.Duration
}

func (s *samples) add(r *Record) {
	s.requests++
	switch {
	case r.Canceled:
		s.canceled++
		return
	case r.Err != "":
		s.failed++
		return
	}
	s.ok++
	s.in += r.PromptTokens
	s.out += r.OutputTokens
	s.e2e = append(s.e2e, r.E2E)
	if !r.Stream || len(r.TokenTimes) == 0 {
		return
	}
	s.ttft = append(s.ttft, r.TTFT)
	if v, ok := r.TPOT(); ok {
		s.tpot = append(s.tpot, v)
	}
	s.itl = append(s.itl, r.ITL()...)
}

// Summary computes the summary of the run.
func (r *Result) Summary() Summary {
	var all samples
	byType := map[string]*samples{}
	order := slices.Clone(r.Types)
	errs := map[string]int{}
	var sum Summary
	for i := range r.Records {
		rec := &r.Records[i]
		all.add(rec)
		st := byType[rec.Type]
		if st == nil {
			st = &samples{}
			byType[rec.Type] = st
			if !slices.Contains(order, rec.Type) {
				order = append(order, rec.Type)
			}
		}
		st.add(rec)
		if rec.Err != "" && !rec.Canceled {
			errs[rec.Err]++
		}
		if rec.Wait > 0 {
			sum.Waited++
			sum.TotalWait += rec.Wait
			sum.MaxWait = max(sum.MaxWait, rec.Wait)
		}
	}
	sum.Requests, sum.Successful, sum.Failed, sum.Canceled = all.requests, all.ok, all.failed, all.canceled
	if n := all.ok + all.failed; n > 0 {
		sum.ErrorRate = float64(all.failed) / float64(n)
	}
	sum.Duration, sum.Stopped = r.Duration, r.Stopped
	sum.InputTokens, sum.OutputTokens = all.in, all.out
	if secs := r.Duration.Seconds(); secs > 0 {
		sum.RequestThroughput = float64(all.ok) / secs
		sum.OutputThroughput = float64(all.out) / secs
	}
	sum.TTFT, sum.TPOT, sum.ITL, sum.E2E = NewStats(all.ttft), NewStats(all.tpot), NewStats(all.itl), NewStats(all.e2e)
	for _, name := range order {
		st := byType[name]
		if st == nil {
			st = &samples{}
		}
		sum.Types = append(sum.Types, TypeSummary{
			Name: name, Requests: st.requests, Successful: st.ok, Failed: st.failed, OutputTokens: st.out,
			TTFT: NewStats(st.ttft), TPOT: NewStats(st.tpot), ITL: NewStats(st.itl), E2E: NewStats(st.e2e),
		})
	}
	for msg, n := range errs {
		sum.Errors = append(sum.Errors, ErrorCount{Message: msg, Count: n})
	}
	sort.Slice(sum.Errors, func(i, j int) bool {
		a, b := sum.Errors[i], sum.Errors[j]
		if a.Count != b.Count {
			return a.Count > b.Count
		}
		return a.Message < b.Message
	})
	return sum
}
