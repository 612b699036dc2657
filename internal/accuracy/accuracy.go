// Package accuracy scores the analyzer's segments against ground truth:
// segment precision, recall and F1 (a found segment matches a true one
// when their token ranges overlap by at least half of the shorter), cause
// accuracy over matched segments, and the false-degraded rate (requests
// with a found segment but no true one).
package accuracy

import (
	"fmt"
	"io"
	"sort"

	"github.com/tokentrace/tokentrace/analyzer/report"
)

// Segment is a token range with a cause.
type Segment struct {
	Start, End int // inclusive token indices
	Cause      string
}

// Truth is the true segments of each request, by trace id. Every request
// of the run must be present (with no segment when clean).
type Truth map[string][]Segment

// Score is the result of one evaluation.
type Score struct {
	Requests        int `json:"requests"`
	TrueSegments    int `json:"true_segments"`
	FoundSegments   int `json:"found_segments"`
	Matched         int `json:"matched"`
	CauseCorrect    int `json:"cause_correct"`
	CleanRequests   int `json:"clean_requests"`
	FalseDegraded   int `json:"false_degraded"`
	MissingRequests int `json:"missing_requests"` // in truth, not in the report
	// Confusion counts matched pairs: truth cause → found cause.
	Confusion map[string]map[string]int `json:"confusion"`
}

// Precision is matched / found (1 when nothing was found).
func (s Score) Precision() float64 { return ratio(s.Matched, s.FoundSegments, 1) }

// Recall is matched / true (1 when nothing was true).
func (s Score) Recall() float64 { return ratio(s.Matched, s.TrueSegments, 1) }

// F1 is the harmonic mean of precision and recall.
func (s Score) F1() float64 {
	p, r := s.Precision(), s.Recall()
	if p+r == 0 {
		return 0
	}
	return 2 * p * r / (p + r)
}

// CauseAccuracy is the share of matched segments with the right cause.
func (s Score) CauseAccuracy() float64 { return ratio(s.CauseCorrect, s.Matched, 1) }

// FalseDegradedRate is the share of truly clean requests reported degraded.
func (s Score) FalseDegradedRate() float64 { return ratio(s.FalseDegraded, s.CleanRequests, 0) }

func ratio(a, b int, empty float64) float64 {
	if b == 0 {
		return empty
	}
	return float64(a) / float64(b)
}

// Add sums two scores.
func (s Score) Add(o Score) Score {
	s.Requests += o.Requests
	s.TrueSegments += o.TrueSegments
	s.FoundSegments += o.FoundSegments
	s.Matched += o.Matched
	s.CauseCorrect += o.CauseCorrect
	s.CleanRequests += o.CleanRequests
	s.FalseDegraded += o.FalseDegraded
	s.MissingRequests += o.MissingRequests
	for t, m := range o.Confusion {
		for f, n := range m {
			s.count(t, f, n)
		}
	}
	return s
}

func (s *Score) count(truth, found string, n int) {
	if s.Confusion == nil {
		s.Confusion = map[string]map[string]int{}
	}
	if s.Confusion[truth] == nil {
		s.Confusion[truth] = map[string]int{}
	}
	s.Confusion[truth][found] += n
}

// Overlaps reports whether a and b overlap by at least half of the shorter.
func Overlaps(a, b Segment) bool {
	lo, hi := max(a.Start, b.Start), min(a.End, b.End)
	if hi < lo {
		return false
	}
	shorter := min(a.End-a.Start+1, b.End-b.Start+1)
	return 2*(hi-lo+1) >= shorter
}

// Evaluate scores a report against the truth. Requests of the report not
// in the truth are ignored (e.g. requests of another run).
func Evaluate(truth Truth, rpt *report.Report) Score {
	found := map[string][]Segment{}
	seen := map[string]bool{}
	for _, r := range rpt.Requests {
		seen[r.TraceID] = true
		for _, s := range r.Segments {
			found[r.TraceID] = append(found[r.TraceID], Segment{s.StartToken, s.EndToken, s.Cause})
		}
	}
	var sc Score
	ids := make([]string, 0, len(truth))
	for id := range truth {
		ids = append(ids, id)
	}
	sort.Strings(ids)
	for _, id := range ids {
		ts := truth[id]
		sc.Requests++
		if !seen[id] {
			sc.MissingRequests++
			sc.TrueSegments += len(ts)
			continue
		}
		fs := found[id]
		sc.TrueSegments += len(ts)
		sc.FoundSegments += len(fs)
		if len(ts) == 0 {
			sc.CleanRequests++
			if len(fs) > 0 {
				sc.FalseDegraded++
			}
		}
		used := make([]bool, len(fs))
		for _, t := range ts {
			best, bestOv := -1, -1
			for j, f := range fs {
				if used[j] || !Overlaps(t, f) {
					continue
				}
				ov := min(t.End, f.End) - max(t.Start, f.Start)
				if ov > bestOv {
					best, bestOv = j, ov
				}
			}
			if best < 0 {
				continue
			}
			used[best] = true
			sc.Matched++
			if fs[best].Cause == t.Cause {
				sc.CauseCorrect++
			}
			sc.count(t.Cause, fs[best].Cause, 1)
		}
	}
	return sc
}

// NoChange is the score of a detector that never reports a segment: the
// baseline every method must beat.
func NoChange(truth Truth) Score {
	var sc Score
	for _, ts := range truth {
		sc.Requests++
		sc.TrueSegments += len(ts)
		if len(ts) == 0 {
			sc.CleanRequests++
		}
	}
	return sc
}

// WriteRow writes one line of a results table.
func WriteRow(w io.Writer, name string, s Score) {
	fmt.Fprintf(w, "%-28s %5d req %4d true %4d found  P %.3f  R %.3f  F1 %.3f  cause %.3f  false-degraded %d/%d (%.1f%%)\n",
		name, s.Requests, s.TrueSegments, s.FoundSegments, s.Precision(), s.Recall(), s.F1(), s.CauseAccuracy(),
		s.FalseDegraded, s.CleanRequests, 100*s.FalseDegradedRate())
}
