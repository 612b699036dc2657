package analyzer_test

import (
	"fmt"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/tokentrace/tokentrace/analyzer"
	"github.com/tokentrace/tokentrace/analyzer/model"
	"github.com/tokentrace/tokentrace/analyzer/report"
)

// synth builds n requests of one instance with tokens tokens each at
// 15 ms/token, every fourth one slowed to 60 ms/token for tokens 100-149
// while request "intruder" (3,000 prompt tokens) prefills.
func synth(n, tokens int) []*model.Request {
	r := rand.New(rand.NewPCG(1, 2))
	t0 := time.Date(2026, 11, 29, 12, 0, 0, 0, time.UTC)
	var out []*model.Request
	in := &model.Request{TraceID: "intruder", Instance: "gpu-0", PromptTokens: 3000, Start: t0.Add(1500 * time.Millisecond)}
	in.Tokens = []model.Token{{Time: t0.Add(4490 * time.Millisecond), Index: 0, Count: 1}, {Time: t0.Add(4510 * time.Millisecond), Index: 1, Count: 1}}
	in.End = in.Tokens[1].Time
	out = append(out, in)
	for i := 0; i < n; i++ {
		req := &model.Request{TraceID: fmt.Sprintf("%032x", i+1), Instance: "gpu-0", Model: "m", Start: t0}
		at := t0.Add(20 * time.Millisecond)
		for k := 0; k < tokens; k++ {
			gap := 15 * time.Millisecond
			if i%4 == 0 && k >= 100 && k < 150 {
				gap = 60 * time.Millisecond
			}
			at = at.Add(time.Duration(float64(gap) * (1 + 0.05*r.NormFloat64())))
			req.Tokens = append(req.Tokens, model.Token{Time: at, Index: k, Count: 1})
		}
		req.End = at
		req.OutputTokens = tokens
		out = append(out, req)
	}
	return out
}

func TestAnalyzeFindsAndExplainsTheSlowRun(t *testing.T) {
	reqs := synth(8, 300)
	// The intruder's prefill [1.5 s, 4.49 s] spans tokens ~100-149 of
	// the slowed requests (60 ms/token from 20 ms + 100×15 ms = 1.52 s).
	rpt := analyzer.AnalyzeRequests(reqs, analyzer.DefaultConfig())
	if rpt.Schema != report.Schema || rpt.Summary.Requests != 9 {
		t.Fatalf("schema %q, %d requests", rpt.Schema, rpt.Summary.Requests)
	}
	for _, r := range rpt.Requests[1:] {
		id := 0
		fmt.Sscanf(r.TraceID, "%x", &id)
		slowed := (id-1)%4 == 0
		if !slowed {
			if len(r.Segments) != 0 {
				t.Errorf("%s: clean request has segments %+v", r.TraceID, r.Segments)
			}
			continue
		}
		if len(r.Segments) != 1 {
			t.Fatalf("%s: %d segments, want 1: %+v", r.TraceID, len(r.Segments), r.Segments)
		}
		s := r.Segments[0]
		if s.StartToken < 98 || s.StartToken > 102 || s.EndToken < 147 || s.EndToken > 151 || s.Slowdown < 3.5 || s.Slowdown > 4.5 {
			t.Errorf("%s: segment %d-%d ×%.1f, want ≈100-149 ×4", r.TraceID, s.StartToken, s.EndToken, s.Slowdown)
		}
		if s.Cause != report.CausePrefill || len(s.Evidence) == 0 || s.Evidence[0].TraceID != "intruder" {
			t.Errorf("%s: cause %s (%s), evidence %+v; want prefill by intruder", r.TraceID, s.Cause, s.Detail, s.Evidence)
		}
	}
}

// BenchmarkAnalyze measures the whole analysis (detection, statistics,
// correlation, report data) from the model, in output tokens per second.
func BenchmarkAnalyze(b *testing.B) {
	reqs := synth(200, 500)
	tokens := 0
	for _, r := range reqs {
		tokens += len(r.Tokens)
	}
	cfg := analyzer.DefaultConfig()
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		analyzer.AnalyzeRequests(reqs, cfg)
	}
	b.ReportMetric(float64(tokens)*float64(b.N)/b.Elapsed().Seconds(), "tokens/s")
}
