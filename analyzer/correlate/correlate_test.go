package correlate

import (
	"testing"
	"time"

	"github.com/tokentrace/tokentrace/analyzer/model"
	"github.com/tokentrace/tokentrace/analyzer/report"
)

var t0 = time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)

func at(ms int) time.Time { return t0.Add(time.Duration(ms) * time.Millisecond) }

func stall(from, to int) Segment {
	return Segment{Window: Window{at(from), at(to)}, Stall: true, Gaps: []float64{float64(to - from)},
		Ends: []time.Time{at(to)}, FirstTokens: []int{50}, LastTokens: []int{50}, BaselineMs: 15}
}

// runOf is a run starting at startMs whose gaps (ms) end the tokens
// firstToken, firstToken+1, …, on a 15 ms baseline.
func runOf(startMs, firstToken int, gaps ...int) Segment {
	seg := Segment{BaselineMs: 15}
	tm := startMs
	seg.Window.Start = at(tm)
	for i, g := range gaps {
		tm += g
		seg.Gaps = append(seg.Gaps, float64(g))
		seg.Ends = append(seg.Ends, at(tm))
		seg.FirstTokens = append(seg.FirstTokens, firstToken+i)
		seg.LastTokens = append(seg.LastTokens, firstToken+i)
	}
	seg.Window.End = at(tm)
	return seg
}

func TestGCEventBeatsTheSmallPrefillItDelayed(t *testing.T) {
	x := NewIndex(DefaultConfig())
	// A 200 ms GC pause; a 12-token request admitted just before has its
	// first token delayed by it, so its admission→first-token window
	// covers the stall too.
	victim := &Item{TraceID: "v", Instance: "i", Start: at(0), First: at(20), End: at(3000), Generated: true,
		Segments: []Segment{stall(1000, 1215)},
		Events: []model.Event{
			{Kind: model.KindGCPause, Start: at(1010), Duration: 200 * time.Millisecond, Source: "engine"},
			{Kind: model.KindPrefill, Start: at(990), Duration: 230 * time.Millisecond, Source: "gateway", TraceID: "small", PromptChars: 48},
		}}
	x.Add(victim)
	x.Attribute(1.6)
	if got := victim.Segments[0].Cause; got != report.CauseGC {
		t.Fatalf("cause %s (%s), want gc", got, victim.Segments[0].Detail)
	}
}

func TestCrossTracePrefillNamesTheIntruder(t *testing.T) {
	x := NewIndex(DefaultConfig())
	victim := &Item{TraceID: "v", Instance: "i", Start: at(0), First: at(20), End: at(5000), Context: 10, Generated: true,
		Segments: []Segment{stall(1500, 2100)}}
	other := &Item{TraceID: "o", Instance: "other-instance", Start: at(1490), First: at(2095), End: at(2500), Context: 3000, Generated: true}
	intruder := &Item{TraceID: "in", Instance: "i", Start: at(1490), First: at(2095), End: at(2500), Context: 3000, Generated: true}
	x.Add(victim)
	x.Add(other)
	x.Add(intruder)
	x.Attribute(1.6)
	s := victim.Segments[0]
	if s.Cause != report.CausePrefill || len(s.Evidence) == 0 || s.Evidence[0].TraceID != "in" || s.Evidence[0].PromptTokens != 3000 {
		t.Fatalf("cause %s evidence %+v, want prefill by in (another instance's request is no evidence)", s.Cause, s.Evidence)
	}
}

func TestVictimOnlyStallNeedsARePrefill(t *testing.T) {
	build := func(reprefill bool) *Item {
		x := NewIndex(DefaultConfig())
		victim := &Item{TraceID: "v", Instance: "i", Start: at(0), First: at(20), End: at(5000), Generated: true,
			Segments: []Segment{stall(1000, 1900)}}
		o := &Item{TraceID: "o", Instance: "i", Start: at(0), First: at(30), End: at(5000), Generated: true}
		if reprefill {
			o.Stalls = []Window{{at(1800), at(1890)}}
		}
		x.Add(victim)
		x.Add(o)
		x.Attribute(1.6)
		return victim
	}
	if s := build(false).Segments[0]; s.Cause != report.CauseUnknown {
		t.Errorf("uncorroborated victim-only stall: cause %s (%s), want unknown", s.Cause, s.Detail)
	}
	if s := build(true).Segments[0]; s.Cause != report.CauseKVSwap {
		t.Errorf("victim-only stall with a re-prefill: cause %s (%s), want kv_swap", s.Cause, s.Detail)
	}
}

func TestSameInstantStallIsGCLike(t *testing.T) {
	x := NewIndex(DefaultConfig())
	victim := &Item{TraceID: "v", Instance: "i", Start: at(0), First: at(20), End: at(5000), Generated: true,
		Segments: []Segment{stall(1000, 1250)}}
	x.Add(victim)
	for _, id := range []string{"a", "b"} {
		x.Add(&Item{TraceID: id, Instance: "i", Start: at(0), First: at(25), End: at(5000), Generated: true,
			Stalls: []Window{{at(1002), at(1251)}}})
	}
	x.Attribute(1.6)
	if s := victim.Segments[0]; s.Cause != report.CauseGC || s.Confidence > 0.6 {
		t.Fatalf("cause %s confidence %.2f, want gc at signature confidence ≤ 0.6", s.Cause, s.Confidence)
	}
}

func TestRunIsSplitWhereThePrefillEnds(t *testing.T) {
	x := NewIndex(DefaultConfig())
	// 10 gaps: 4 slow prefill gaps (150 ms) ending at 1600 ms when the
	// intruder's first token arrives, then 6 batch gaps at 45 ms.
	seg := runOf(1000, 100, 150, 150, 150, 150, 45, 45, 45, 45, 45, 45)
	victim := &Item{TraceID: "v", Instance: "i", Start: at(0), First: at(20), End: at(5000), Context: 10, Generated: true, Segments: []Segment{seg}}
	intruder := &Item{TraceID: "in", Instance: "i", Start: at(1000), First: at(1600), End: at(4000), Context: 2000, Generated: true}
	x.Add(victim)
	x.Add(intruder)
	x.Attribute(1.6)
	if len(victim.Segments) != 2 {
		t.Fatalf("%d segments, want the run split in two", len(victim.Segments))
	}
	a, b := victim.Segments[0], victim.Segments[1]
	if a.Cause != report.CausePrefill || b.Cause != report.CauseBatch || a.LastTokens[len(a.LastTokens)-1] != 103 || b.FirstTokens[0] != 104 {
		t.Fatalf("segments %s %v, %s %v; want prefill 100-103 then batch 104-109", a.Cause, a.FirstTokens, b.Cause, b.FirstTokens)
	}
}

// TestGCPauseInsideAPrefillRunIsItsOwnStall: a 140 ms GC pause lands in
// the middle of a chunked prefill (5 gaps at 120 ms, the third 265 ms):
// the run comes out as prefill, gc stall, prefill — the pause explains the
// gap's excess over the run, the prefill the rest — while a pause known
// only to the poll window (uncertain by more than the gap) cuts nothing,
// and does not outweigh the exact prefill event.
func TestGCPauseInsideAPrefillRunIsItsOwnStall(t *testing.T) {
	run := func() Segment { return runOf(1000, 40, 120, 120, 265, 120, 120) }
	for _, tc := range []struct {
		name        string
		uncertainty time.Duration
		want        []string
	}{
		{"exact pause", 0, []string{report.CausePrefill, report.CauseGC, report.CausePrefill}},
		{"polled pause", 250 * time.Millisecond, []string{report.CausePrefill}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x := NewIndex(DefaultConfig())
			victim := &Item{TraceID: "v", Instance: "i", Start: at(0), First: at(20), End: at(5000), Context: 200, Generated: true,
				Segments: []Segment{run()},
				Events: []model.Event{
					{Kind: model.KindPrefill, Start: at(1000), Duration: 745 * time.Millisecond, Source: "engine", TraceID: "in", PromptTokens: 2500},
					{Kind: model.KindGCPause, Start: at(1245), Duration: 140 * time.Millisecond, Uncertainty: tc.uncertainty, Source: "engine"},
				}}
			x.Add(victim)
			x.Add(&Item{TraceID: "in", Instance: "i", Start: at(990), First: at(1745), End: at(2000), Context: 2500, Generated: true})
			x.Attribute(1.6)
			var got []string
			for _, s := range victim.Segments {
				got = append(got, s.Cause)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("causes %v, want %v", got, tc.want)
			}
			for i := range got {
				if got[i] != tc.want[i] {
					t.Fatalf("causes %v, want %v", got, tc.want)
				}
			}
			if len(got) == 1 && len(victim.Segments[0].Gaps) != 5 {
				t.Errorf("the uncut run has %d gaps, want 5", len(victim.Segments[0].Gaps))
			}
			if len(got) == 3 {
				if s := victim.Segments[1]; !s.Stall || s.FirstTokens[0] != 42 || len(s.Gaps) != 1 {
					t.Errorf("middle segment %+v, want the stall of token 42", s)
				}
				if a, b := victim.Segments[0], victim.Segments[2]; a.LastTokens[len(a.LastTokens)-1] != 41 || b.FirstTokens[0] != 43 {
					t.Errorf("prefill pieces end at %d and start at %d, want 41 and 43", a.LastTokens[len(a.LastTokens)-1], b.FirstTokens[0])
				}
			}
		})
	}
}

// TestPolledPreemptionAloneStillNamesKVSwap: a preemption counted by a
// metrics poll (no victim named, placed to within 250 ms) is the only
// explanation of a 300 ms stall: it is still named, as kv_swap.
func TestPolledPreemptionAloneStillNamesKVSwap(t *testing.T) {
	x := NewIndex(DefaultConfig())
	victim := &Item{TraceID: "v", Instance: "i", Start: at(0), First: at(20), End: at(3000), Generated: true,
		Segments: []Segment{stall(1000, 1300)},
		Events: []model.Event{{Kind: model.KindPreemption, Mode: "recompute", Start: at(900), Duration: 250 * time.Millisecond,
			Uncertainty: 250 * time.Millisecond, Source: "metrics", Count: 1}}}
	x.Add(victim)
	x.Attribute(1.6)
	if s := victim.Segments[0]; s.Cause != report.CauseKVSwap {
		t.Fatalf("cause %s (%s), want kv_swap", s.Cause, s.Detail)
	}
}

// TestSuccessiveEventsOfOneCauseExplainARunTogether: a 6-gap run (60 ms
// gaps) during which three other requests were swapped back in one after
// another, each preemption event covering two of its gaps: no single
// event covers enough of the run (a third, at half weight: another
// request's preemption), together they cover all of it.
func TestSuccessiveEventsOfOneCauseExplainARunTogether(t *testing.T) {
	seg := runOf(1000, 200, 60, 60, 60, 60, 60, 60)
	var evs []model.Event
	for k := range 3 { // swap traffic in 1000–1120, 1120–1240, 1240–1360 ms
		evs = append(evs, model.Event{Kind: model.KindPreemption, Mode: "swap", Start: at(1000 + 120*k),
			Duration: 120 * time.Millisecond, Source: "engine"})
	}
	victim := &Item{TraceID: "v", Instance: "i", Start: at(0), First: at(20), End: at(5000), Generated: true,
		Segments: []Segment{seg}, Events: evs}
	x := NewIndex(DefaultConfig())
	x.Add(victim)
	x.Attribute(1.6)
	if s := victim.Segments[0]; s.Cause != report.CauseKVSwap || len(s.Evidence) != 3 {
		t.Fatalf("cause %s (%s) with %d pieces of evidence, want kv_swap with 3", s.Cause, s.Detail, len(s.Evidence))
	}
}

// TestChunksOfOnePrefillAreOneSegment: an unchunked engine splitting a
// long prompt at its batch size gives a run of dearer steps and then one
// very long one (llama.cpp's n_batch remainder); the detector reports a
// run and a stall back to back. Both name the same newcomer's prefill:
// the report says so once, over the whole stretch. A stall of another
// cause right after stays apart.
func TestChunksOfOnePrefillAreOneSegment(t *testing.T) {
	run := runOf(1000, 150, 150, 165, 190, 215, 240, 270, 300)
	tm := 1000 + 150 + 165 + 190 + 215 + 240 + 270 + 300
	last := Segment{Window: Window{at(tm), at(tm + 1470)}, Stall: true, Gaps: []float64{1470},
		Ends: []time.Time{at(tm + 1470)}, FirstTokens: []int{157}, LastTokens: []int{157}, BaselineMs: 15}
	gc := Segment{Window: Window{at(tm + 1470), at(tm + 1700)}, Stall: true, Gaps: []float64{230},
		Ends: []time.Time{at(tm + 1700)}, FirstTokens: []int{158}, LastTokens: []int{158}, BaselineMs: 15}
	victim := &Item{TraceID: "v", Instance: "i", Start: at(0), First: at(20), End: at(6000), Context: 10, Generated: true,
		Segments: []Segment{run, last, gc},
		Events:   []model.Event{{Kind: model.KindGCPause, Start: at(tm + 1480), Duration: 210 * time.Millisecond, Source: "engine"}}}
	intruder := &Item{TraceID: "in", Instance: "i", Start: at(990), First: at(tm + 1470), End: at(6000), Context: 2856, Generated: true}
	x := NewIndex(DefaultConfig())
	x.Add(victim)
	x.Add(intruder)
	x.Attribute(1.6)
	if len(victim.Segments) != 2 {
		t.Fatalf("%d segments, want the prefill once and the GC pause", len(victim.Segments))
	}
	p, g := victim.Segments[0], victim.Segments[1]
	if p.Cause != report.CausePrefill || p.Stall || len(p.Gaps) != 8 || p.FirstTokens[0] != 150 || p.LastTokens[7] != 157 || !p.End.Equal(at(tm+1470)) {
		t.Errorf("prefill segment %s stall=%v tokens %v", p.Cause, p.Stall, p.FirstTokens)
	}
	if g.Cause != report.CauseGC || g.FirstTokens[0] != 158 {
		t.Errorf("second segment %s at %v, want the GC pause at 158", g.Cause, g.FirstTokens)
	}
}

// TestARunTooSlowForTheBatchIsAPrefill: a 3-gap run at 8× the baseline
// while a long-context request decodes alongside and a newcomer, queued
// for 3 s, is prefilled: a long context makes steps 2–3× dearer, not 8×,
// so the newcomer's prefill is named despite its long (queued) window.
// The same long context explains a 2.5× run.
func TestARunTooSlowForTheBatchIsAPrefill(t *testing.T) {
	for _, tc := range []struct {
		gap  int
		want string
	}{
		{120, report.CausePrefill},
		{38, report.CauseBatch},
	} {
		victim := &Item{TraceID: "v", Instance: "i", Start: at(0), First: at(20), End: at(6000), Context: 10, Generated: true,
			Segments: []Segment{runOf(4000, 297, tc.gap, tc.gap, tc.gap)}}
		long := &Item{TraceID: "long", Instance: "i", Start: at(100), First: at(900), End: at(9000), Context: 3000, Generated: true}
		newcomer := &Item{TraceID: "new", Instance: "i", Start: at(1400), First: at(4400), End: at(9000), Context: 3000, Generated: true}
		x := NewIndex(DefaultConfig())
		x.Add(victim)
		x.Add(long)
		x.Add(newcomer)
		x.Attribute(1.6)
		if s := victim.Segments[0]; s.Cause != tc.want {
			t.Errorf("%d ms gaps: cause %s (%s), want %s", tc.gap, s.Cause, s.Detail, tc.want)
		}
	}
}
