package source

import (
	"cmp"
	"slices"
	"sync"

	"github.com/tokentrace/tokentrace/analyzer/report"
	du "github.com/tokentrace/tokentrace/analyzer/source/internal/decodeutil"
)

// Skips counts what was skipped and why, with one example location each
// (file:line or trace id). It is safe for concurrent use; the zero value
// is ready, and a nil *Skips discards what it is given.
type Skips struct {
	mu sync.Mutex
	m  map[string]*report.Skip
}

// Add counts one record skipped for reason; the first non-empty example of
// a reason is kept.
func (s *Skips) Add(reason, example string) {
	if s == nil {
		return
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.m == nil {
		s.m = make(map[string]*report.Skip)
	}
	e := s.m[reason]
	if e == nil {
		e = &report.Skip{Reason: reason}
		s.m[reason] = e
	}
	e.Count++
	if e.Example == "" {
		e.Example = du.Truncate(example, du.MaxExample)
	}
}

// List returns the counts by reason, the most frequent first.
func (s *Skips) List() []report.Skip {
	if s == nil {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	out := make([]report.Skip, 0, len(s.m))
	for _, e := range s.m {
		out = append(out, *e)
	}
	slices.SortFunc(out, func(a, b report.Skip) int {
		if c := cmp.Compare(b.Count, a.Count); c != 0 {
			return c
		}
		return cmp.Compare(a.Reason, b.Reason)
	})
	return out
}

// Total returns the number of records skipped.
func (s *Skips) Total() int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	n := 0
	for _, e := range s.m {
		n += e.Count
	}
	return n
}

// Count returns the number of records skipped for reason.
func (s *Skips) Count(reason string) int {
	if s == nil {
		return 0
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if e := s.m[reason]; e != nil {
		return e.Count
	}
	return 0
}
