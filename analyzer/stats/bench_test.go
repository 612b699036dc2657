package stats

import (
	"fmt"
	"testing"
	"time"

	"github.com/tokentrace/tokentrace/analyzer/model"
)

// benchRequests returns n requests of tokens tokens on 4 instances.
func benchRequests(n, tokens int) []*model.Request {
	out := make([]*model.Request, n)
	for i := range out {
		gaps := make([]time.Duration, tokens-1)
		for j := range gaps {
			gaps[j] = time.Duration(15+(i*7+j*13)%20) * time.Millisecond
			if j%300 == 299 {
				gaps[j] = 250 * time.Millisecond
			}
		}
		r := req(fmt.Sprintf("gpu-%d:8000", i%4), t0.Add(time.Duration(i)*50*time.Millisecond), 200*time.Millisecond, gaps...)
		r.Model, r.PromptTokens, r.Ordinal, r.InstanceOrdinal = "llama", 100*(i%50), int64(i+1), int64(i/4+1)
		out[i] = r
	}
	return out
}

// BenchmarkCollectorAdd feeds 500-token requests one at a time.
func BenchmarkCollectorAdd(b *testing.B) {
	reqs := benchRequests(64, 500)
	c := NewCollector(Config{})
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		if n%20_000 == 0 {
			c = NewCollector(Config{}) // bound the benchmark's memory
		}
		c.Add(reqs[n%len(reqs)], n%10 == 0)
		n++
	}
	sec := b.Elapsed().Seconds()
	b.ReportMetric(float64(n)/sec, "requests/s")
	b.ReportMetric(float64(n*499)/sec, "itl-samples/s")
}

// BenchmarkCollectorReport computes the summary, the groups of two
// dimensions and the checks of 2,000 requests × 500 tokens (~1M ITL
// samples).
func BenchmarkCollectorReport(b *testing.B) {
	c := NewCollector(Config{})
	reqs := benchRequests(2000, 500)
	for i, r := range reqs {
		c.Add(r, i%10 == 0)
	}
	b.ReportAllocs()
	n := 0
	for b.Loop() {
		c.Summary()
		c.Groups([]string{"instance", "context"})
		c.Checks()
		n++
	}
	sec := b.Elapsed().Seconds()
	b.ReportMetric(float64(n*len(reqs))/sec, "requests/s")
	b.ReportMetric(float64(n*len(c.itl))/sec, "itl-samples/s")
}

func BenchmarkDist(b *testing.B) {
	s := make([]float64, 100_000)
	for i := range s {
		s[i] = float64((i * 7919) % 1000)
	}
	b.ReportAllocs()
	for b.Loop() {
		Dist(s)
	}
	b.ReportMetric(float64(len(s))*float64(b.N)/b.Elapsed().Seconds(), "samples/s")
}
