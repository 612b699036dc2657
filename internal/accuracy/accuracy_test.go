package accuracy

import (
	"testing"

	"github.com/tokentrace/tokentrace/analyzer/report"
)

func TestOverlapsHalfOfTheShorter(t *testing.T) {
	for _, tt := range []struct {
		a, b Segment
		want bool
	}{
		{Segment{10, 19, ""}, Segment{15, 30, ""}, true},  // 5 of 10
		{Segment{10, 19, ""}, Segment{16, 30, ""}, false}, // 4 of 10
		{Segment{100, 100, ""}, Segment{95, 140, ""}, true},
		{Segment{100, 100, ""}, Segment{101, 140, ""}, false},
		{Segment{0, 3, ""}, Segment{2, 3, ""}, true},
	} {
		if got := Overlaps(tt.a, tt.b); got != tt.want {
			t.Errorf("Overlaps(%v, %v) = %t", tt.a, tt.b, got)
		}
	}
}

func TestEvaluate(t *testing.T) {
	truth := Truth{
		"a": {{100, 106, "prefill"}, {107, 155, "batch"}},
		"b": {},
		"c": {{40, 40, "gc"}},
		"d": {},
	}
	rpt := &report.Report{Requests: []report.Request{
		{TraceID: "a", Segments: []report.Segment{{StartToken: 100, EndToken: 104, Cause: "prefill"}, {StartToken: 105, EndToken: 150, Cause: "prefill"}}},
		{TraceID: "b", Segments: []report.Segment{{StartToken: 3, EndToken: 3, Cause: "unknown"}}},
		{TraceID: "c", Segments: []report.Segment{{StartToken: 40, EndToken: 40, Cause: "gc"}}},
		{TraceID: "d"},
	}}
	s := Evaluate(truth, rpt)
	if s.TrueSegments != 3 || s.FoundSegments != 4 || s.Matched != 3 || s.CauseCorrect != 2 {
		t.Fatalf("%+v", s)
	}
	if s.CleanRequests != 2 || s.FalseDegraded != 1 || s.FalseDegradedRate() != 0.5 {
		t.Fatalf("clean %d false %d", s.CleanRequests, s.FalseDegraded)
	}
	if p, r := s.Precision(), s.Recall(); p != 0.75 || r != 1 {
		t.Fatalf("P %v R %v", p, r)
	}
	if s.Confusion["batch"]["prefill"] != 1 {
		t.Fatalf("confusion %v", s.Confusion)
	}
	n := NoChange(truth)
	if n.F1() != 0 || n.Recall() != 0 || n.FalseDegraded != 0 {
		t.Fatalf("no-change %+v", n)
	}
}
