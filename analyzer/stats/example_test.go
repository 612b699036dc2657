package stats_test

import (
	"fmt"
	"time"

	"github.com/tokentrace/tokentrace/analyzer/model"
	"github.com/tokentrace/tokentrace/analyzer/stats"
)

func ExampleDist() {
	d := stats.Dist([]float64{15, 1, 7, 3, 10})
	fmt.Printf("n=%d mean=%.1f p50=%g p90=%g p99=%g max=%g\n", d.Count, d.Mean, d.P50, d.P90, d.P99, d.Max)
	// Output: n=5 mean=7.2 p50=7 p90=13 p99=14.8 max=15
}

func ExampleCollector() {
	start := time.Date(2025, 6, 1, 12, 0, 0, 0, time.UTC)
	c := stats.NewCollector(stats.Config{})
	for i, inst := range []string{"gpu-0:8000", "gpu-1:8000"} {
		r := &model.Request{Instance: inst, Model: "llama-3-8b", Start: start, InstanceOrdinal: 1}
		for tok := range 11 { // TTFT 200 ms, then 20 ms (gpu-0) or 40 ms (gpu-1) per token
			at := start.Add(200*time.Millisecond + time.Duration(tok*(i+1)*20)*time.Millisecond)
			r.Tokens = append(r.Tokens, model.Token{Time: at, Index: tok, Count: 1})
		}
		c.Add(r, false)
	}
	s := c.Summary()
	fmt.Printf("requests %d, tokens %d, TPOT p50 %g ms, ITL n=%d\n", s.Requests, s.Tokens, s.TPOT.P50, s.ITL.Count)
	for _, g := range c.Groups([]string{"instance", "warmth"}) {
		fmt.Printf("%s=%s: %d requests, mean TPOT %g ms\n", g.Dimension, g.Key, g.Requests, g.TPOT.Mean)
	}
	// Output:
	// requests 2, tokens 22, TPOT p50 30 ms, ITL n=20
	// instance=gpu-0:8000: 1 requests, mean TPOT 20 ms
	// instance=gpu-1:8000: 1 requests, mean TPOT 40 ms
	// warmth=cold: 2 requests, mean TPOT 30 ms
}
