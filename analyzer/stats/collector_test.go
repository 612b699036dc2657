package stats

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/tokentrace/tokentrace/analyzer/model"
	"github.com/tokentrace/tokentrace/analyzer/report"
	"github.com/tokentrace/tokentrace/semconv"
)

var t0 = time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)

// req builds a request whose first token comes ttft after start and each
// next one after its gap.
func req(instance string, start time.Time, ttft time.Duration, gaps ...time.Duration) *model.Request {
	r := &model.Request{TraceID: "t", Instance: instance, Model: "m", Start: start, TimesFrom: model.TimesEvents}
	at := start.Add(ttft)
	r.Tokens = append(r.Tokens, model.Token{Time: at, Index: 0, Count: 1})
	for i, g := range gaps {
		at = at.Add(g)
		r.Tokens = append(r.Tokens, model.Token{Time: at, Index: i + 1, Count: 1})
	}
	r.End = at
	return r
}

func repeat(d time.Duration, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = d
	}
	return out
}

const ms1 = time.Millisecond

func TestSummary(t *testing.T) {
	c := NewCollector(Config{})
	// TPOT = (10+20+30)/3 = 20 ms; (40+40)/2 = 40 ms.
	c.Add(req("a", t0, 100*ms1, 10*ms1, 20*ms1, 30*ms1), false)
	c.Add(req("a", t0, 300*ms1, 40*ms1, 40*ms1), true)
	c.Add(&model.Request{Start: t0}, false) // no token: counted, no sample
	c.Add(nil, true)                        // ignored
	s := c.Summary()
	if s.Requests != 3 || s.Tokens != 7 || s.DegradedRequests != 1 {
		t.Errorf("requests %d tokens %d degraded %d, want 3 7 1", s.Requests, s.Tokens, s.DegradedRequests)
	}
	want := map[string][2]report.Dist{
		"TTFT": {s.TTFT, {Count: 2, Mean: 200, P50: 200, P90: 280, P99: 298, P999: 299.8, P9999: 299.98, Max: 300}},
		"TPOT": {s.TPOT, {Count: 2, Mean: 30, P50: 30, P90: 38, P99: 39.8, P999: 39.98, P9999: 39.998, Max: 40}},
		// ITL {10,20,30,40,40}: P90 h=3.6 → 40.
		"ITL": {s.ITL, {Count: 5, Mean: 28, P50: 30, P90: 40, P99: 40, P999: 40, P9999: 40, Max: 40}},
	}
	for name, d := range want {
		if !distNear(d[0], d[1]) {
			t.Errorf("%s = %+v, want %+v", name, d[0], d[1])
		}
	}
	if len(s.Histograms) != 3 {
		t.Fatalf("histograms %+v, want 3", s.Histograms)
	}
	for i, name := range []string{"ttft_ms", "tpot_ms", "itl_ms"} {
		h := s.Histograms[i]
		n := 0
		for _, v := range h.Counts {
			n += v
		}
		if h.Name != name || n != []int{2, 2, 5}[i] {
			t.Errorf("histogram %d = %s with %d samples", i, h.Name, n)
		}
	}
	if s.Segments != 0 || s.Causes != nil {
		t.Errorf("Segments/Causes are the caller's: %+v", s)
	}
}

func TestSummaryMultiTokenChunks(t *testing.T) {
	// usage says 7 tokens; chunks of 1, 2 and 4 tokens: TPOT = 60/6,
	// ITL = the chunk gaps per token: 20/2, 40/4.
	r := req("a", t0, 100*ms1, 20*ms1, 40*ms1)
	r.Tokens[1].Count, r.Tokens[2].Count = 2, 4
	r.OutputTokens = 7
	c := NewCollector(Config{})
	c.Add(r, false)
	s := c.Summary()
	if s.Tokens != 7 || s.TPOT.Mean != 10 || s.ITL.Count != 2 || s.ITL.Max != 10 || s.ITL.P50 != 10 {
		t.Errorf("tokens %d TPOT %+v ITL %+v", s.Tokens, s.TPOT, s.ITL)
	}
}

func TestGroups(t *testing.T) {
	c := NewCollector(Config{})
	add := func(mdl, inst string, promptTokens, promptChars int, ord, instOrd int64, gap time.Duration, failed, degraded bool) {
		r := req(inst, t0, 50*ms1, gap, gap, gap)
		r.Model, r.PromptTokens, r.PromptChars, r.Ordinal, r.InstanceOrdinal = mdl, promptTokens, promptChars, ord, instOrd
		if failed {
			r.Outcome = semconv.OutcomeTruncated
		}
		c.Add(r, degraded)
	}
	add("llama", "gpu-1", 100, 0, 1, 1, 10*ms1, false, false)  // <512, cold
	add("llama", "gpu-0", 600, 0, 2, 101, 20*ms1, true, true)  // 512-2k, warm
	add("qwen", "gpu-0", 3000, 0, 200, 0, 30*ms1, false, true) // 2k-8k, warm by Ordinal
	add("qwen", "gpu-0", 9000, 0, 50, 0, 40*ms1, false, false) // ≥8k, cold by Ordinal
	add("", "gpu-1", 0, 4000, 0, 0, 50*ms1, false, false)      // 4000 chars ≈ 1000 tokens: 512-2k; warmth unknown
	add("llama", "gpu-1", 0, 0, 0, 0, 60*ms1, false, false)    // context unknown
	groups := c.Groups([]string{"warmth", "model", "context", "bogus", "model"})
	var got []string
	for _, g := range groups {
		got = append(got, g.Dimension+"="+g.Key)
	}
	want := []string{
		"context=<512", "context=512-2k", "context=2k-8k", "context=≥8k", "context=",
		"model=llama", "model=qwen", "model=",
		"warmth=cold", "warmth=warm", "warmth=",
	}
	if !slices.Equal(got, want) {
		t.Fatalf("groups\n got %q\nwant %q", got, want)
	}
	find := func(dim, key string) report.Group {
		for _, g := range groups {
			if g.Dimension == dim && g.Key == key {
				return g
			}
		}
		t.Fatalf("no group %s=%s", dim, key)
		return report.Group{}
	}
	llama := find("model", "llama")
	if llama.Requests != 3 || llama.Errors != 1 || llama.Degraded != 1 || llama.ITL.Count != 9 {
		t.Errorf("llama: %+v", llama)
	}
	// TPOT of the llama requests: 10, 20, 60 ms.
	if llama.TPOT.P50 != 20 || llama.TPOT.Max != 60 || llama.TPOT.Mean != 30 {
		t.Errorf("llama TPOT %+v", llama.TPOT)
	}
	if g := find("context", "512-2k"); g.Requests != 2 || g.TPOT.Mean != 35 {
		t.Errorf("512-2k: %+v", g)
	}
	if g := find("warmth", "cold"); g.Requests != 2 || g.TPOT.Mean != 25 {
		t.Errorf("cold: %+v", g)
	}
	if g := find("warmth", "warm"); g.Requests != 2 || g.Degraded != 2 {
		t.Errorf("warm: %+v", g)
	}
	if g := c.Groups([]string{"instance"}); len(g) != 2 || g[0].Key != "gpu-0" || g[1].Key != "gpu-1" {
		t.Errorf("instance groups %+v", g)
	}
	if g := c.Groups(nil); len(g) != 0 {
		t.Errorf("no dims: %+v", g)
	}
}

func TestWarmthConfig(t *testing.T) {
	for _, tt := range []struct {
		name string
		cold int
		want []string // warmth of instance ordinals 1, 5, 6, 100, 101
	}{
		{"default 100", 0, []string{Cold, Cold, Cold, Cold, Warm}},
		{"first 5", 5, []string{Cold, Cold, Warm, Warm, Warm}},
		{"none cold", -1, []string{Warm, Warm, Warm, Warm, Warm}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCollector(Config{ColdRequests: tt.cold})
			var got []string
			for _, ord := range []int64{1, 5, 6, 100, 101} {
				r := req("a", t0, ms1, ms1)
				r.InstanceOrdinal = ord
				got = append(got, warmthKeys[c.warmth(r)])
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func check(t *testing.T, c *Collector, name string) report.Check {
	t.Helper()
	for _, ch := range c.Checks() {
		if ch.Name == name {
			if ch.Status != StatusOK && ch.Status != StatusWarn || ch.Detail == "" || strings.Contains(ch.Detail, "\n") {
				t.Errorf("malformed check %+v", ch)
			}
			return ch
		}
	}
	t.Fatalf("no check %s", name)
	return report.Check{}
}

func TestChecksOrderAndEmpty(t *testing.T) {
	c := NewCollector(Config{})
	var names []string
	for _, ch := range c.Checks() {
		names = append(names, ch.Name)
		if ch.Status != StatusOK {
			t.Errorf("empty collector: %+v", ch)
		}
	}
	if !slices.Equal(names, []string{CheckErrorRate, CheckInstanceImbalance, CheckSawtooth}) {
		t.Errorf("checks %v", names)
	}
}

func TestErrorRateCheck(t *testing.T) {
	build := func(n int, outcomes ...string) *Collector {
		c := NewCollector(Config{})
		for i := range n {
			r := req("a", t0, 50*ms1, repeat(20*ms1, 10)...)
			if i < len(outcomes) {
				if outcomes[i] == "error" {
					r.Error = true
				} else {
					r.Outcome = outcomes[i]
				}
			}
			c.Add(r, false)
		}
		return c
	}
	t.Run("fires", func(t *testing.T) {
		// 3 of 100 fail while every TPOT is 20 ms.
		ch := check(t, build(100, semconv.OutcomeTruncated, semconv.OutcomeTruncated, semconv.OutcomeClientDisconnect), CheckErrorRate)
		if ch.Status != StatusWarn || !strings.Contains(ch.Detail, "3.0 % of 100") ||
			!strings.Contains(ch.Detail, "2 truncated, 1 client_disconnect") || !strings.Contains(ch.Detail, "looks normal") {
			t.Errorf("%+v", ch)
		}
	})
	t.Run("fires with bad TPOT too", func(t *testing.T) {
		c := build(50, "error", semconv.OutcomeUpstreamError)
		for range 50 {
			c.Add(req("a", t0, 50*ms1, repeat(300*ms1, 5)...), false)
		}
		ch := check(t, c, CheckErrorRate)
		if ch.Status != StatusWarn || !strings.Contains(ch.Detail, "above") {
			t.Errorf("%+v", ch)
		}
	})
	t.Run("quiet", func(t *testing.T) {
		// 1 of 200 = 0.5 %; complete and not_streamed are not errors.
		ch := check(t, build(200, "error", semconv.OutcomeComplete, semconv.OutcomeNotStreamed), CheckErrorRate)
		if ch.Status != StatusOK || !strings.Contains(ch.Detail, "0.5 % of 200") {
			t.Errorf("%+v", ch)
		}
	})
}

func TestInstanceImbalanceCheck(t *testing.T) {
	build := func(gaps map[string]time.Duration, n int) *Collector {
		c := NewCollector(Config{})
		for _, inst := range []string{"gpu-0:8000", "gpu-1:8000", "gpu-2:8000"} {
			g, ok := gaps[inst]
			if !ok {
				continue
			}
			for range n {
				c.Add(req(inst, t0, 50*ms1, repeat(g, 20)...), false)
			}
		}
		return c
	}
	t.Run("fires", func(t *testing.T) {
		ch := check(t, build(map[string]time.Duration{"gpu-0:8000": 20 * ms1, "gpu-1:8000": 30 * ms1, "gpu-2:8000": 21 * ms1}, 10), CheckInstanceImbalance)
		if ch.Status != StatusWarn || ch.Detail != "gpu-1:8000 mean TPOT 30.0ms is 50 % above gpu-0:8000 (20.0ms); 3 instances compared" {
			t.Errorf("%+v", ch)
		}
	})
	t.Run("quiet", func(t *testing.T) {
		ch := check(t, build(map[string]time.Duration{"gpu-0:8000": 20 * ms1, "gpu-1:8000": 23 * ms1}, 10), CheckInstanceImbalance)
		if ch.Status != StatusOK || !strings.Contains(ch.Detail, "within 15 % across 2 instances") {
			t.Errorf("%+v", ch)
		}
	})
	t.Run("too few samples", func(t *testing.T) {
		ch := check(t, build(map[string]time.Duration{"gpu-0:8000": 20 * ms1, "gpu-1:8000": 90 * ms1}, 9), CheckInstanceImbalance)
		if ch.Status != StatusOK || !strings.Contains(ch.Detail, "nothing to compare") {
			t.Errorf("%+v", ch)
		}
	})
}

// engine simulates one instance's decode steps: every request in flight
// gets a token per step; a step takes step, plus pause when it crosses one
// of the stall times. Requests are [from, to) windows in steps.
func engine(instance string, step, pause time.Duration, stallAt []time.Duration, windows [][2]int) []*model.Request {
	var times []time.Time // end of each step
	at, k := t0, 0
	last := 0
	for _, w := range windows {
		last = max(last, w[1])
	}
	for range last {
		at = at.Add(step)
		if k < len(stallAt) && at.Sub(t0) >= stallAt[k] {
			at = at.Add(pause)
			k++
		}
		times = append(times, at)
	}
	var out []*model.Request
	for _, w := range windows {
		r := &model.Request{Instance: instance, Model: "m", Start: times[w[0]].Add(-100 * ms1)}
		for i, tm := range times[w[0]:w[1]] {
			r.Tokens = append(r.Tokens, model.Token{Time: tm, Index: i, Count: 1})
		}
		r.End = r.Tokens[len(r.Tokens)-1].Time
		out = append(out, r)
	}
	return out
}

func every(period time.Duration, n int) []time.Duration {
	out := make([]time.Duration, n)
	for i := range out {
		out[i] = period * time.Duration(i+1)
	}
	return out
}

func TestSawtoothCheck(t *testing.T) {
	// 20 ms steps; 3 overlapping requests cover ~12 s.
	overlapping := [][2]int{{0, 300}, {100, 450}, {250, 560}}
	tests := []struct {
		name    string
		stalls  []time.Duration
		windows [][2]int
		status  string
		detail  string
	}{
		{"GC every 1.5 s", every(1500*ms1, 7), overlapping, StatusWarn, "gpu-0:8000 stalls every 1.50s (CV 0.00 over 7 stalls, median stall 220ms)"},
		// Two separate bursts of traffic: the interval across the idle
		// time between them is not counted, the rest stays periodic.
		{"periodic with an idle gap", append(every(1000*ms1, 4), 16*time.Second+100*ms1, 17*time.Second+300*ms1, 18*time.Second+500*ms1),
			[][2]int{{0, 200}, {50, 220}, {700, 900}}, StatusWarn, "stalls every"},
		{"irregular stalls", []time.Duration{300 * ms1, 2800 * ms1, 3500 * ms1, 6600 * ms1, 7800 * ms1, 8000 * ms1, 11500 * ms1},
			overlapping, StatusOK, "no periodic stalls"},
		{"too few stalls", every(1500*ms1, 2), overlapping, StatusOK, "no instance has 4 stall events"},
		{"no stalls", nil, overlapping, StatusOK, "no instance has 4 stall events"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCollector(Config{})
			for _, r := range engine("gpu-0:8000", 20*ms1, 200*ms1, tt.stalls, tt.windows) {
				c.Add(r, false)
			}
			ch := check(t, c, CheckSawtooth)
			if ch.Status != tt.status || !strings.Contains(ch.Detail, tt.detail) {
				t.Errorf("%+v, want %s containing %q", ch, tt.status, tt.detail)
			}
		})
	}
}

func TestSawtoothPeriod(t *testing.T) {
	// A step that crosses a multiple of 1.5 s (wall clock) takes 200 ms
	// more: the gap is 220 ms and the stalls come every 1.5 s.
	c := NewCollector(Config{})
	for _, r := range engine("gpu-0:8000", 20*ms1, 200*ms1, every(1500*ms1, 7), [][2]int{{0, 300}, {100, 450}, {250, 560}}) {
		c.Add(r, false)
	}
	p, ok := c.period("gpu-0:8000", c.inst["gpu-0:8000"])
	if !ok || p.events != 7 || math.Abs(p.meanMs-1500) > 20 || p.cv > 0.05 || p.stallMs != 220 {
		t.Errorf("period %+v ok=%v, want 7 events of 220 ms every ~1500 ms", p, ok)
	}
}

func TestSawtoothRandomNoise(t *testing.T) {
	// Many seeds of random stall times must not look periodic.
	for seed := range uint64(20) {
		rng := rand.New(rand.NewPCG(seed, 1))
		var stalls []time.Duration
		at := time.Duration(0)
		for range 8 {
			at += time.Duration(rng.ExpFloat64() * float64(1500*ms1))
			stalls = append(stalls, at)
		}
		c := NewCollector(Config{})
		for _, r := range engine("gpu-0:8000", 20*ms1, 200*ms1, stalls, [][2]int{{0, 400}, {200, 700}, {500, 1000}}) {
			c.Add(r, false)
		}
		if ch := check(t, c, CheckSawtooth); ch.Status != StatusOK {
			t.Errorf("seed %d: stalls %v: %+v", seed, stalls, ch)
		}
	}
}
