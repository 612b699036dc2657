package loadgen

import (
	"testing"
	"time"
)

func msd(v float64) time.Duration { return time.Duration(v * float64(time.Millisecond)) }

// Hand-computed with h = (n−1)·p/100 and x[⌊h⌋] + (h−⌊h⌋)(x[⌊h⌋+1]−x[⌊h⌋]).
func TestPercentileHandComputed(t *testing.T) {
	one2ten := []time.Duration{msd(1), msd(2), msd(3), msd(4), msd(5), msd(6), msd(7), msd(8), msd(9), msd(10)}
	skewed := []time.Duration{msd(10), msd(20), msd(30), msd(40), msd(1000)}
	tests := []struct {
		name   string
		sorted []time.Duration
		p      float64
		want   time.Duration
	}{
		{"1..10 p0 is the minimum", one2ten, 0, msd(1)},
		{"1..10 p50 h=4.5", one2ten, 50, 5500 * time.Microsecond},
		{"1..10 p90 h=8.1", one2ten, 90, 9100 * time.Microsecond},
		{"1..10 p99 h=8.91", one2ten, 99, 9910 * time.Microsecond},
		{"1..10 p99.9 h=8.991", one2ten, 99.9, 9991 * time.Microsecond},
		{"1..10 p99.99 h=8.9991", one2ten, 99.99, 9999100 * time.Nanosecond},
		{"1..10 p100 is the maximum", one2ten, 100, msd(10)},
		{"skewed p50 is the middle sample", skewed, 50, msd(30)},
		{"skewed p90 h=3.6", skewed, 90, msd(616)},
		{"skewed p99 h=3.96", skewed, 99, 961600 * time.Microsecond},
		{"skewed p99.9 h=3.996", skewed, 99.9, 996160 * time.Microsecond},
		{"skewed p25 h=1 exactly", skewed, 25, msd(20)},
		{"single sample", []time.Duration{msd(7)}, 99.99, msd(7)},
		{"two samples p50", []time.Duration{1, 4}, 50, 3}, // 2.5 ns rounds half away from zero
		{"empty", nil, 50, 0},
		{"p above 100 clamps", one2ten, 150, msd(10)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Percentile(tt.sorted, tt.p); got != tt.want {
				t.Errorf("Percentile(%v) = %v, want %v", tt.p, got, tt.want)
			}
		})
	}
}

func TestNewStats(t *testing.T) {
	// Unsorted input; NewStats must not reorder the caller's slice.
	in := []time.Duration{msd(40), msd(10), msd(1000), msd(30), msd(20)}
	got := NewStats(in)
	want := Stats{Count: 5, Mean: msd(220), Median: msd(30), P90: msd(616), P99: 961600 * time.Microsecond,
		P999: 996160 * time.Microsecond, P9999: 999616 * time.Microsecond, Max: msd(1000)}
	if got != want {
		t.Errorf("NewStats = %+v\nwant       %+v", got, want)
	}
	if in[0] != msd(40) || in[2] != msd(1000) {
		t.Errorf("NewStats sorted its input: %v", in)
	}
	if z := NewStats(nil); z != (Stats{}) {
		t.Errorf("NewStats(nil) = %+v, want zero", z)
	}
}

func TestRecordTPOTAndITL(t *testing.T) {
	r := Record{TokenTimes: []time.Duration{msd(10), msd(12), msd(14), msd(20)}, OutputTokens: 4}
	if tpot, ok := r.TPOT(); !ok || tpot != 3333333 {
		t.Errorf("TPOT = %v, %v; want 3.333333ms (10ms over 3 tokens)", tpot, ok)
	}
	r.OutputTokens = 11 // usage says the 4 chunks carried 11 tokens
	if tpot, _ := r.TPOT(); tpot != msd(1) {
		t.Errorf("TPOT with usage = %v, want 1ms (10ms over 10 tokens)", tpot)
	}
	itl := r.ITL()
	want := []time.Duration{msd(2), msd(2), msd(6)}
	if len(itl) != len(want) {
		t.Fatalf("ITL = %v, want %v", itl, want)
	}
	for i := range want {
		if itl[i] != want[i] {
			t.Errorf("ITL = %v, want %v", itl, want)
		}
	}
	single := Record{TokenTimes: []time.Duration{msd(5)}, OutputTokens: 30}
	if _, ok := single.TPOT(); ok {
		t.Error("TPOT of a single chunk must not be defined")
	}
	if single.ITL() != nil {
		t.Error("ITL of a single chunk must be empty")
	}
}

// sampleResult is a hand-made run whose summary is computed by hand in
// TestSummaryExact.
func sampleResult() *Result {
	return &Result{
		Duration: 2 * time.Second,
		Stopped:  StopRequests,
		Types:    []string{"qa", "analysis", "intruder"},
		Records: []Record{
			{Index: 0, Type: "qa", Stream: true, TTFT: msd(10), TokenTimes: []time.Duration{msd(10), msd(12), msd(14), msd(20)},
				OutputTokens: 4, PromptTokens: 50, E2E: msd(25), Status: 200},
			{Index: 1, Type: "qa", Stream: true, TTFT: msd(30), TokenTimes: []time.Duration{msd(30), msd(40)},
				OutputTokens: 5, PromptTokens: 60, E2E: msd(45), Status: 200, Wait: msd(5)},
			{Index: 2, Type: "analysis", Stream: true, Status: 503, Err: "HTTP 503: busy", E2E: msd(1)},
			{Index: 3, Type: "analysis", Stream: false, OutputTokens: 7, PromptTokens: 20, E2E: msd(100), Status: 200, Wait: msd(15)},
			{Index: 4, Type: "intruder", Stream: true, Canceled: true, Err: "canceled: context canceled"},
			{Index: 5, Type: "analysis", Stream: true, Status: 503, Err: "HTTP 503: busy", E2E: msd(2)},
			{Index: 6, Type: "qa", Stream: true, Status: 200, Err: "stream truncated without [DONE] after 1 content chunks",
				TokenTimes: []time.Duration{msd(3)}, TTFT: msd(3), OutputTokens: 1},
		},
	}
}

func TestSummaryExact(t *testing.T) {
	s := sampleResult().Summary()
	ints := []struct {
		name      string
		got, want int
	}{
		{"Requests", s.Requests, 7}, {"Successful", s.Successful, 3}, {"Failed", s.Failed, 3},
		{"Canceled", s.Canceled, 1}, {"InputTokens", s.InputTokens, 130}, {"OutputTokens", s.OutputTokens, 16},
		{"Waited", s.Waited, 2},
	}
	for _, c := range ints {
		if c.got != c.want {
			t.Errorf("%s = %d, want %d", c.name, c.got, c.want)
		}
	}
	if s.ErrorRate != 0.5 || s.RequestThroughput != 1.5 || s.OutputThroughput != 8 {
		t.Errorf("ErrorRate, RequestThroughput, OutputThroughput = %v, %v, %v; want 0.5, 1.5, 8",
			s.ErrorRate, s.RequestThroughput, s.OutputThroughput)
	}
	if s.TotalWait != msd(20) || s.MaxWait != msd(15) {
		t.Errorf("TotalWait, MaxWait = %v, %v; want 20ms, 15ms", s.TotalWait, s.MaxWait)
	}
	// TTFT over the successful streamed requests: {10, 30} ms.
	wantTTFT := Stats{Count: 2, Mean: msd(20), Median: msd(20), P90: msd(28), P99: 29800 * time.Microsecond,
		P999: 29980 * time.Microsecond, P9999: 29998 * time.Microsecond, Max: msd(30)}
	// TPOT: (20−10)/3 = 3.333333 ms and (40−30)/(5−1) = 2.5 ms (5 tokens from usage).
	wantTPOT := Stats{Count: 2, Mean: 2916667, Median: 2916667, P90: 3250000, P99: 3325000,
		P999: 3332500, P9999: 3333250, Max: 3333333}
	// ITL pooled: {2, 2, 6} and {10} ms.
	wantITL := Stats{Count: 4, Mean: msd(5), Median: msd(4), P90: 8800 * time.Microsecond, P99: 9880 * time.Microsecond,
		P999: 9988 * time.Microsecond, P9999: 9998800 * time.Nanosecond, Max: msd(10)}
	// E2E of every successful request, streamed or not: {25, 45, 100} ms.
	wantE2E := Stats{Count: 3, Mean: 56666667, Median: msd(45), P90: msd(89), P99: 98900 * time.Microsecond,
		P999: 99890 * time.Microsecond, P9999: 99989 * time.Microsecond, Max: msd(100)}
	for _, c := range []struct {
		name      string
		got, want Stats
	}{{"TTFT", s.TTFT, wantTTFT}, {"TPOT", s.TPOT, wantTPOT}, {"ITL", s.ITL, wantITL}, {"E2E", s.E2E, wantE2E}} {
		if c.got != c.want {
			t.Errorf("%s = %+v\nwant   %+v", c.name, c.got, c.want)
		}
	}
	if len(s.Types) != 3 {
		t.Fatalf("Types = %+v, want qa, analysis, intruder", s.Types)
	}
	qa, an, in := s.Types[0], s.Types[1], s.Types[2]
	if qa.Name != "qa" || qa.Requests != 3 || qa.Successful != 2 || qa.Failed != 1 || qa.OutputTokens != 9 || qa.TTFT != wantTTFT {
		t.Errorf("qa = %+v", qa)
	}
	if an.Name != "analysis" || an.Requests != 3 || an.Successful != 1 || an.Failed != 2 || an.TTFT.Count != 0 || an.E2E.Max != msd(100) {
		t.Errorf("analysis = %+v", an)
	}
	if in.Name != "intruder" || in.Requests != 1 || in.Successful != 0 || in.Failed != 0 {
		t.Errorf("intruder = %+v", in)
	}
	wantErrs := []ErrorCount{{"HTTP 503: busy", 2}, {"stream truncated without [DONE] after 1 content chunks", 1}}
	if len(s.Errors) != len(wantErrs) || s.Errors[0] != wantErrs[0] || s.Errors[1] != wantErrs[1] {
		t.Errorf("Errors = %+v, want %+v", s.Errors, wantErrs)
	}
}
