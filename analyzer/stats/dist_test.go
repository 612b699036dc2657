package stats

import (
	"math"
	"slices"
	"testing"

	"github.com/tokentrace/tokentrace/analyzer/report"
)

// The expected values are computed by hand with numpy's default
// ("linear") method: h = (n−1)·p, Q = x[⌊h⌋] + (h−⌊h⌋)·(x[⌊h⌋+1] − x[⌊h⌋]).
func TestDist(t *testing.T) {
	oneTo100 := make([]float64, 100)
	for i := range oneTo100 {
		oneTo100[100-1-i] = float64(i + 1) // reversed: Dist must sort
	}
	tests := []struct {
		name    string
		samples []float64
		want    report.Dist
	}{
		{"empty", nil, report.Dist{}},
		{"one", []float64{42}, report.Dist{Count: 1, Mean: 42, P50: 42, P90: 42, P99: 42, P999: 42, P9999: 42, Max: 42}},
		// n=4: P50 h=1.5 → 2+0.5·1; P90 h=2.7 → 3+0.7·1; P99 h=2.97; P99.9 h=2.997; P99.99 h=2.9997.
		{"four", []float64{4, 1, 3, 2}, report.Dist{Count: 4, Mean: 2.5, P50: 2.5, P90: 3.7, P99: 3.97, P999: 3.997, P9999: 3.9997, Max: 4}},
		// sorted {1,3,7,10,15}: P50 h=2 → 7; P90 h=3.6 → 10+0.6·5 = 13; P99 h=3.96 → 14.8;
		// P99.9 h=3.996 → 14.98; P99.99 h=3.9996 → 14.998.
		{"five", []float64{15, 1, 7, 3, 10}, report.Dist{Count: 5, Mean: 7.2, P50: 7, P90: 13, P99: 14.8, P999: 14.98, P9999: 14.998, Max: 15}},
		// 1..100: P50 h=49.5 → 50.5; P90 h=89.1 → 90.1; P99 h=98.01 → 99.01;
		// P99.9 h=98.901 → 99.901; P99.99 h=98.9901 → 99.9901.
		{"1..100", oneTo100, report.Dist{Count: 100, Mean: 50.5, P50: 50.5, P90: 90.1, P99: 99.01, P999: 99.901, P9999: 99.9901, Max: 100}},
		// non-finite samples are dropped: {1, 3}; P90 h=0.9 → 1+0.9·2 = 2.8.
		{"nan and inf", []float64{math.NaN(), 1, math.Inf(1), 3, math.Inf(-1)},
			report.Dist{Count: 2, Mean: 2, P50: 2, P90: 2.8, P99: 2.98, P999: 2.998, P9999: 2.9998, Max: 3}},
		{"ties", []float64{5, 5, 5, 5, 5, 5}, report.Dist{Count: 6, Mean: 5, P50: 5, P90: 5, P99: 5, P999: 5, P9999: 5, Max: 5}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			in := slices.Clone(tt.samples)
			got := Dist(tt.samples)
			if !distNear(got, tt.want) {
				t.Errorf("Dist(%v)\n got %+v\nwant %+v", tt.samples, got, tt.want)
			}
			if !slices.EqualFunc(in, tt.samples, func(a, b float64) bool { return a == b || (math.IsNaN(a) && math.IsNaN(b)) }) {
				t.Errorf("Dist modified its input: %v", tt.samples)
			}
		})
	}
}

func TestDistNeverNaN(t *testing.T) {
	big := math.MaxFloat64
	for _, s := range [][]float64{
		{big, big, big},        // the sum overflows
		{-big, big},            // the interpolation's b−a overflows
		{-big, -big, big, big}, // both
		{math.NaN()},
		{math.Inf(1), math.Inf(-1)},
		{0, math.SmallestNonzeroFloat64},
	} {
		d := Dist(s)
		for _, v := range []float64{d.Mean, d.P50, d.P90, d.P99, d.P999, d.P9999, d.Max} {
			if !finite(v) {
				t.Errorf("Dist(%v) = %+v: not finite", s, d)
			}
		}
	}
	if d := Dist([]float64{big, big, big}); d.Mean != big {
		t.Errorf("mean of MaxFloat64s = %g", d.Mean)
	}
	if d := Dist([]float64{-big, big}); d.P50 != 0 {
		t.Errorf("P50 of ±MaxFloat64 = %g, want 0", d.P50)
	}
}

func TestDistFloat32MatchesFloat64(t *testing.T) {
	s64 := []float64{12.5, 15.25, 85, 1000.125, 20}
	s32 := []float32{12.5, 15.25, 85, 1000.125, 20}
	if a, b := Dist(s64), distCopy(s32); a != b {
		t.Errorf("float32 %+v != float64 %+v", b, a)
	}
}

func TestHistogram(t *testing.T) {
	s := []float64{0.005, 12, 15, 15, 16, 85, 2e6}
	h := histogram("itl_ms", s)
	total := 0
	for _, c := range h.Counts {
		total += c
	}
	if total != len(s) || len(h.Counts) != len(h.Bounds)+1 {
		t.Fatalf("histogram %+v: %d samples counted, want %d", h, total, len(s))
	}
	if h.Bounds[0] != 0.01 || h.Counts[0] != 1 {
		t.Errorf("first bucket ≤ %g holds %d, want ≤ 0.01 holding 1", h.Bounds[0], h.Counts[0])
	}
	if h.Counts[len(h.Counts)-1] != 1 || h.Bounds[len(h.Bounds)-1] != 1e6 {
		t.Errorf("overflow above %g holds %d, want 1 above 1e6", h.Bounds[len(h.Bounds)-1], h.Counts[len(h.Counts)-1])
	}
	// 15 sits on a bound: (10, 15] holds 12, 15, 15; (15, 20] holds 16.
	at := func(bound float64) int {
		i := slices.Index(h.Bounds, bound)
		if i < 0 {
			t.Fatalf("no bound %g in %v", bound, h.Bounds)
		}
		return h.Counts[i]
	}
	if at(15) != 3 || at(20) != 1 || at(100) != 1 {
		t.Errorf("counts (10,15]=%d (15,20]=%d (70,100]=%d, want 3 1 1", at(15), at(20), at(100))
	}
	// Trimmed: starts one bound below the minimum.
	h = histogram("tpot_ms", []float64{21, 22, 40})
	if h.Bounds[0] != 20 || h.Bounds[len(h.Bounds)-1] != 50 {
		t.Errorf("bounds %v, want 20 … 50", h.Bounds)
	}
}

func distNear(a, b report.Dist) bool {
	near := func(x, y float64) bool { return math.Abs(x-y) <= 1e-9*math.Max(1, math.Abs(y)) }
	return a.Count == b.Count && near(a.Mean, b.Mean) && near(a.P50, b.P50) && near(a.P90, b.P90) &&
		near(a.P99, b.P99) && near(a.P999, b.P999) && near(a.P9999, b.P9999) && near(a.Max, b.Max)
}
