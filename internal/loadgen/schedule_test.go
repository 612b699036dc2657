package loadgen

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"
)

func scheduleConfig(arrival string, rate float64, seed uint64) Config {
	c := DefaultConfig()
	c.Arrival, c.Rate, c.Seed = arrival, rate, seed
	return c
}

func TestScheduleDeterministic(t *testing.T) {
	a, err := Schedule(scheduleConfig(ArrivalPoisson, 10, 42), 500)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := Schedule(scheduleConfig(ArrivalPoisson, 10, 42), 500)
	if !slices.Equal(a, b) {
		t.Fatal("the same seed gave two schedules")
	}
	c, _ := Schedule(scheduleConfig(ArrivalPoisson, 10, 43), 500)
	if slices.Equal(a, c) {
		t.Fatal("seeds 42 and 43 gave the same schedule")
	}
	// A different rate scales the times but keeps the types (separate streams).
	d, _ := Schedule(scheduleConfig(ArrivalPoisson, 20, 42), 500)
	for i := range a {
		if a[i].Type != d[i].Type {
			t.Fatalf("arrival %d: type changed with the rate", i)
		}
		if diff := a[i].Offset - 2*d[i].Offset; diff < -2 || diff > 2 {
			t.Fatalf("arrival %d: %v at rate 10 vs %v at rate 20", i, a[i].Offset, d[i].Offset)
		}
	}
	// A different mix keeps the times.
	cfg := scheduleConfig(ArrivalPoisson, 10, 42)
	cfg.Types = cfg.Types[:2]
	e, _ := Schedule(cfg, 500)
	for i := range a {
		if a[i].Offset != e[i].Offset {
			t.Fatalf("arrival %d: time changed with the mix", i)
		}
	}
}

// The Poisson schedule is statistically right: exponential gaps of mean
// 1/rate (mean, coefficient of variation, median) and Poisson counts per
// window (variance ≈ mean). Bounds are about 4 standard errors.
func TestSchedulePoissonStatistics(t *testing.T) {
	const rate, n = 50.0, 40001
	for _, seed := range []uint64{1, 2, 3, 4, 5} {
		arr, err := Schedule(scheduleConfig(ArrivalPoisson, rate, seed), n)
		if err != nil {
			t.Fatal(err)
		}
		if arr[0].Offset != 0 {
			t.Fatalf("first arrival at %v, want 0", arr[0].Offset)
		}
		gaps := make([]float64, n-1)
		var sum, sumSq float64
		below := 0
		for i := 1; i < n; i++ {
			if arr[i].Index != i || arr[i].Offset < arr[i-1].Offset {
				t.Fatalf("arrival %d out of order", i)
			}
			g := (arr[i].Offset - arr[i-1].Offset).Seconds()
			gaps[i-1] = g
			sum += g
			sumSq += g * g
			if g < 1/rate*math.Ln2 {
				below++
			}
		}
		m := float64(len(gaps))
		mean := sum / m
		sd := math.Sqrt(sumSq/m - mean*mean)
		if math.Abs(mean*rate-1) > 0.02 {
			t.Errorf("seed %d: mean gap %.5fs, want %.5fs ± 2%%", seed, mean, 1/rate)
		}
		if cv := sd / mean; math.Abs(cv-1) > 0.03 {
			t.Errorf("seed %d: coefficient of variation %.3f, want 1 ± 0.03 (exponential)", seed, cv)
		}
		if frac := float64(below) / m; math.Abs(frac-0.5) > 0.01 {
			t.Errorf("seed %d: %.3f of gaps below the median ln2/rate, want 0.5 ± 0.01", seed, frac)
		}
		// Counts per 1 s window: Poisson(50), so variance/mean ≈ 1.
		windows := int(arr[n-1].Offset / time.Second)
		counts := make([]float64, windows)
		for _, a := range arr {
			if w := int(a.Offset / time.Second); w < windows {
				counts[w]++
			}
		}
		var cs, cs2 float64
		for _, c := range counts {
			cs += c
			cs2 += c * c
		}
		cm := cs / float64(windows)
		dispersion := (cs2/float64(windows) - cm*cm) / cm
		if math.Abs(cm-rate) > 1 || math.Abs(dispersion-1) > 0.3 {
			t.Errorf("seed %d: %.2f arrivals per second, dispersion %.2f; want 50 ± 1 and 1 ± 0.3", seed, cm, dispersion)
		}
	}
}

func TestScheduleFixedAndInfinite(t *testing.T) {
	arr, err := Schedule(scheduleConfig(ArrivalFixed, 50, 7), 1000)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range arr {
		if want := time.Duration(i) * 20 * time.Millisecond; a.Offset != want {
			t.Fatalf("fixed arrival %d at %v, want %v", i, a.Offset, want)
		}
	}
	arr, _ = Schedule(scheduleConfig(ArrivalFixed, 3, 7), 4)
	if arr[1].Offset != 333333333 || arr[3].Offset != time.Second {
		t.Errorf("fixed at 3/s: %v, want 0, 333.333333ms, 666.666667ms, 1s", arr)
	}
	arr, _ = Schedule(scheduleConfig(ArrivalPoisson, math.Inf(1), 7), 100)
	for _, a := range arr {
		if a.Offset != 0 {
			t.Fatalf("infinite rate: arrival %d at %v, want 0", a.Index, a.Offset)
		}
	}
}

func TestScheduleMix(t *testing.T) {
	const n = 40000
	cfg := scheduleConfig(ArrivalPoisson, 10, 9)
	cfg.Types = append(BuiltinTypes(), NewRequestType("never", 0, 1, 1))
	arr, err := Schedule(cfg, n)
	if err != nil {
		t.Fatal(err)
	}
	counts := make([]int, len(cfg.Types))
	for _, a := range arr {
		counts[a.Type]++
	}
	for i, want := range []float64{0.70, 0.25, 0.05, 0} {
		got := float64(counts[i]) / n
		if math.Abs(got-want) > 0.01 {
			t.Errorf("type %s: share %.4f, want %.2f ± 0.01", cfg.Types[i].Name, got, want)
		}
	}
	if counts[3] != 0 {
		t.Errorf("a type of weight 0 was drawn %d times", counts[3])
	}
}

func TestFillerPrompt(t *testing.T) {
	p := fillerPrompt(1, 0, 3000)
	if len(p) != 3000*CharsPerToken {
		t.Errorf("len = %d, want %d", len(p), 3000*CharsPerToken)
	}
	if p != fillerPrompt(1, 0, 3000) {
		t.Error("not deterministic")
	}
	if p == fillerPrompt(1, 1, 3000) || p == fillerPrompt(2, 0, 3000) {
		t.Error("two arrivals or two seeds got the same prompt")
	}
	if strings.Trim(p, "abcdefghijklmnopqrstuvwxyz ") != "" {
		t.Error("prompt has characters other than filler words")
	}
	if fillerPrompt(1, 0, 0) != "" {
		t.Error("a prompt of 0 tokens is not empty")
	}
}

func TestParseMix(t *testing.T) {
	got, err := ParseMix("qa=0.7, analysis=0.25,intruder=0.05", BuiltinTypes())
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 3 || got[0].Name != "qa" || got[0].Weight != 0.7 || got[2].Weight != 0.05 || got[2].PromptTokens != 3000 {
		t.Errorf("ParseMix = %+v", got)
	}
	got, _ = ParseMix("intruder", BuiltinTypes())
	if len(got) != 1 || got[0].Weight != 0.05 {
		t.Errorf("a name without weight: %+v", got)
	}
	for _, bad := range []string{"chat=1", "qa=x", "qa=-1", "qa=1,qa=2", "qa=NaN"} {
		if _, err := ParseMix(bad, BuiltinTypes()); err == nil {
			t.Errorf("ParseMix(%q) accepted", bad)
		}
	}
}
