package sim

import (
	"context"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"
)

// testProfile has a noiseless 10 ms step, 1 ms of prefill per 10 tokens.
var testProfile = Profile{
	Name: "test", Fixed: 8 * time.Millisecond, PerSeq: 500 * time.Microsecond,
	PerPrefillToken: 100 * time.Microsecond, MaxContext: 8192,
}

func startEngine(t *testing.T, cfg Config) (*Engine, *TruthWriter) {
	t.Helper()
	if cfg.Profile.Fixed == 0 {
		cfg.Profile = testProfile
	}
	if cfg.TimeScale == 0 {
		cfg.TimeScale = 0.25
	}
	tw := NewTruthWriter(nil)
	e, err := New(cfg, WithTruth(tw))
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	go e.Run(ctx)
	t.Cleanup(func() { cancel(); e.Wait() })
	return e, tw
}

func submit(t *testing.T, e *Engine, prompt, max int) *Request {
	t.Helper()
	r, err := e.Submit(prompt, max, trace.TraceID{})
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// drain reads every token of r and returns their times.
func drain(r *Request) []time.Time {
	var ts []time.Time
	for tok := range r.Tokens {
		ts = append(ts, tok.Time)
	}
	return ts
}

// waitTokens blocks until r has produced n tokens, returning their times.
func waitTokens(r *Request, n int) []time.Time {
	var ts []time.Time
	for tok := range r.Tokens {
		ts = append(ts, tok.Time)
		if len(ts) == n {
			break
		}
	}
	return ts
}

func truthOf(t *testing.T, tw *TruthWriter, id string) TruthRecord {
	t.Helper()
	for _, r := range tw.Records() {
		if r.RequestID == id {
			return r
		}
	}
	t.Fatalf("no truth record for %s", id)
	return TruthRecord{}
}

func TestChunkedPrefillSlowsAboutPOverBSteps(t *testing.T) {
	const P, B = 2000, 250
	e, tw := startEngine(t, Config{Prefill: PrefillConfig{Chunked: true, TokenBudget: B}, TimeScale: 1})
	bg := submit(t, e, 10, 120)
	head := waitTokens(bg, 30)
	in := submit(t, e, P, 5)
	rest := drain(bg)
	drain(in)
	if got := len(head) + len(rest); got != 120 {
		t.Fatalf("background produced %d tokens, want 120", got)
	}
	rec := truthOf(t, tw, bg.ID)
	var prefill []TruthSegment
	for _, s := range rec.Segments {
		if s.Cause == CausePrefill {
			prefill = append(prefill, s)
		}
	}
	if len(prefill) != 1 {
		t.Fatalf("prefill segments %+v, want one run", rec.Segments)
	}
	n := prefill[0].EndToken - prefill[0].StartToken + 1
	// Each step carries B−1 prompt tokens beside the one decode: ⌈P/(B−1)⌉.
	if want := (P + B - 2) / (B - 1); n < want-1 || n > want+1 {
		t.Errorf("prefill run of %d gaps, want ≈ P/B = %d", n, want)
	}
	if prefill[0].By[0] != in.ID {
		t.Errorf("caused by %v, want %s", prefill[0].By, in.ID)
	}
	// Each slowed step costs the chunk: 8.5 ms + 249 × 0.1 ms ≈ 33 ms vs 8.5.
	// Timer overhead inflates short steps most, so the bound is loose.
	if prefill[0].Slowdown < 2.8 || prefill[0].Slowdown > 4.5 {
		t.Errorf("slowdown %.2f, want ≈ 3.9", prefill[0].Slowdown)
	}
}

func TestUnchunkedPrefillIsOneLongGapForEveryRunningRequest(t *testing.T) {
	const P = 3000 // 300 ms of prefill in one step
	e, tw := startEngine(t, Config{})
	bgs := []*Request{submit(t, e, 10, 80), submit(t, e, 10, 80)}
	waitTokens(bgs[0], 20)
	in := submit(t, e, P, 5)
	for _, r := range bgs {
		drain(r)
	}
	drain(in)
	for _, r := range bgs {
		rec := truthOf(t, tw, r.ID)
		if len(rec.Segments) != 1 || rec.Segments[0].Cause != CausePrefill || rec.Segments[0].StartToken != rec.Segments[0].EndToken {
			t.Fatalf("%s: segments %+v, want one single-gap prefill", r.ID, rec.Segments)
		}
		// The gap is one step with P prompt tokens: ≥ P × 0.1 ms.
		gapMs := rec.Segments[0].MedianMs // the truth is in simulated (unscaled) time
		if gapMs < 300 || gapMs > 400 {
			t.Errorf("%s: prefill gap %.1f ms (unscaled), want ≈ 310", r.ID, gapMs)
		}
	}
}

func TestGCPauseIsAGapOfAtLeastItsLengthInEveryRunningRequest(t *testing.T) {
	const pause = 120 * time.Millisecond
	e, tw := startEngine(t, Config{GC: GCConfig{Period: 400 * time.Millisecond, MinPause: pause, MaxPause: pause}, TimeScale: 0.5})
	rs := []*Request{submit(t, e, 10, 100), submit(t, e, 10, 100), submit(t, e, 10, 100)}
	times := make([][]time.Time, len(rs))
	for i, r := range rs {
		times[i] = drain(r)
	}
	var gcAt []time.Time
	for i, r := range rs {
		rec := truthOf(t, tw, r.ID)
		n := 0
		for _, s := range rec.Segments {
			if s.Cause != CauseGC {
				continue
			}
			n++
			gap := times[i][s.EndToken].Sub(times[i][s.EndToken-1])
			if gap < time.Duration(float64(pause)*0.5) { // scaled by 0.5
				t.Errorf("%s: gc gap %v shorter than the scaled pause %v", r.ID, gap, pause/2)
			}
			if i == 0 {
				gcAt = append(gcAt, times[i][s.EndToken])
			}
		}
		if n < 2 {
			t.Errorf("%s: %d gc segments over ~1 s of 400 ms periods, want ≥ 2", r.ID, n)
		}
	}
	// The same pauses, at the same instant, in every request.
	for _, at := range gcAt {
		for i := 1; i < len(rs); i++ {
			found := false
			for _, tt := range times[i] {
				if d := tt.Sub(at); d > -2*time.Millisecond && d < 2*time.Millisecond {
					found = true
				}
			}
			if !found {
				t.Errorf("request %d has no token at the gc end %v", i, at)
			}
		}
	}
}

func TestPreemptionByRecomputeFreesKVAndVictimReprefills(t *testing.T) {
	// 40 blocks × 16 tokens = 640 tokens of cache; MaxContext must fit.
	prof := testProfile
	prof.MaxContext = 640
	e, tw := startEngine(t, Config{Profile: prof, KV: KVConfig{Blocks: 40, BlockSize: 16}})
	a := submit(t, e, 200, 150)
	waitTokens(a, 5)
	b := submit(t, e, 200, 150) // together they outgrow the cache
	drain(a)
	drain(b)
	var preemptions int
	for _, id := range []string{a.ID, b.ID} {
		for _, s := range truthOf(t, tw, id).Segments {
			if s.Cause == CauseKVSwap {
				preemptions++
				if s.StartToken != s.EndToken {
					t.Errorf("%s: preemption segment spans %d gaps, want one long gap", id, s.EndToken-s.StartToken+1)
				}
			}
		}
	}
	if preemptions == 0 {
		t.Fatal("no preemption recorded")
	}
	if got := testutilCounter(t, e, "vllm:num_preemptions_total"); got < 1 {
		t.Errorf("vllm:num_preemptions_total = %v", got)
	}
	// Every block is free again once both finished.
	deadline := time.Now().Add(2 * time.Second)
	for e.Active() > 0 && time.Now().Before(deadline) {
		time.Sleep(5 * time.Millisecond)
	}
	if e.freeBlocksSnapshot() != 40 {
		t.Errorf("free blocks %d after all finished, want 40", e.freeBlocksSnapshot())
	}
}

func TestSwapPreemption(t *testing.T) {
	prof := testProfile
	prof.MaxContext = 640
	e, tw := startEngine(t, Config{Profile: prof, KV: KVConfig{Blocks: 40, BlockSize: 16, Swap: true, SwapPerBlock: time.Millisecond}})
	a := submit(t, e, 200, 150)
	waitTokens(a, 5)
	b := submit(t, e, 200, 150)
	drain(a)
	drain(b)
	found := false
	for _, id := range []string{a.ID, b.ID} {
		for _, s := range truthOf(t, tw, id).Segments {
			found = found || s.Cause == CauseKVSwap
		}
	}
	if !found {
		t.Fatal("no kv_swap segment with swap preemption")
	}
}

func TestSameSeedSameDecisions(t *testing.T) {
	run := func() []TruthRecord {
		tw := NewTruthWriter(nil)
		e, err := New(Config{Seed: 7, Profile: Profile{Name: "n", Fixed: 5 * time.Millisecond, PerSeq: time.Millisecond, PerPrefillToken: 50 * time.Microsecond, Noise: 0.1, SpikeProb: 0.05, SpikeFactor: 5, MaxContext: 8192},
			GC: GCConfig{Period: 150 * time.Millisecond, Jitter: 50 * time.Millisecond, MinPause: 20 * time.Millisecond, MaxPause: 60 * time.Millisecond}, TimeScale: 0.1}, WithTruth(tw))
		if err != nil {
			t.Fatal(err)
		}
		// Same submissions before the engine starts: same schedule.
		rs := []*Request{submit(t, e, 10, 60), submit(t, e, 500, 40), submit(t, e, 30, 60)}
		ctx, cancel := context.WithCancel(context.Background())
		defer func() { cancel(); e.Wait() }()
		go e.Run(ctx)
		for _, r := range rs {
			drain(r)
		}
		return tw.Records()
	}
	a, b := run(), run()
	key := func(rs []TruthRecord) map[int][]string {
		m := map[int][]string{}
		for _, r := range rs {
			for _, s := range r.Segments {
				m[r.Ordinal] = append(m[r.Ordinal], s.Cause+":"+itoa(s.StartToken)+"-"+itoa(s.EndToken))
			}
		}
		return m
	}
	ka, kb := key(a), key(b)
	if len(ka) == 0 {
		t.Fatal("no injected segments at all")
	}
	for ord, segs := range ka {
		if len(kb[ord]) != len(segs) {
			t.Fatalf("request %d: %v vs %v", ord, segs, kb[ord])
		}
		for i := range segs {
			if segs[i] != kb[ord][i] {
				t.Fatalf("request %d: %v vs %v", ord, segs, kb[ord])
			}
		}
	}
}

// TestThrashingIsOnePreemption: a request swapped back in and out again
// before it produced a token is still in its first preemption, so the
// event the engine reports when it resumes covers the whole thrash (the
// steps slowed by its swap traffic), not only the last round.
func TestThrashingIsOnePreemption(t *testing.T) {
	e, err := New(Config{Profile: testProfile, KV: KVConfig{Blocks: 8, BlockSize: 16, Swap: true, SwapPerBlock: time.Millisecond}})
	if err != nil {
		t.Fatal(err)
	}
	r := &Request{blocks: 2}
	if extra := e.preempt(r); extra != 2*time.Millisecond {
		t.Fatalf("swap traffic %v, want 2 ms for 2 blocks", extra)
	}
	first := r.preemptedAt
	time.Sleep(2 * time.Millisecond)
	// Swapped back in (as step does), then out again in the same step.
	e.swapped, r.swapped = e.swapped[:0], false
	e.preempt(r)
	if !r.preemptedAt.Equal(first) {
		t.Errorf("preemption restarted at the second swap-out (%v after the first)", r.preemptedAt.Sub(first))
	}
}
