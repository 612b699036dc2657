package detect

import (
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// benchGaps is a realistic request of n gaps: a 12 ms pace drifting up
// 1.8× over the request, 7 % log-normal jitter, 1 % of 2× outliers, and
// around 40 % of the way a chunked prefill (8 gaps at 12×) followed by a
// batch slow-down (n/10 gaps at 2.5×) and, later, a 1 s stall.
func benchGaps(n int, seed uint64) []float64 {
	rng := rand.New(rand.NewPCG(seed, 7))
	g := make([]float64, n)
	p := 4 * n / 10
	batch := max(n/10, 20)
	for i := range g {
		f := 1.0
		switch {
		case i >= p && i < p+8:
			f = 12
		case i >= p+8 && i < p+8+batch:
			f = 2.5
		}
		if rng.Float64() < 0.01 {
			f *= 2
		}
		g[i] = 12 * math.Pow(1.8, float64(i)/float64(n)) * f * math.Exp(0.07*rng.NormFloat64())
	}
	g[7*n/10] = 1000
	return g
}

func BenchmarkDetect(b *testing.B) {
	for _, n := range []int{500, 5000} {
		gaps := benchGaps(n, 1)
		b.Run(fmt.Sprintf("gaps=%d", n), func(b *testing.B) {
			d := NewDetector(DefaultConfig())
			dst, _ := d.Detect(make([]Segment, 0, 16), gaps) // warm up the buffers
			b.ReportAllocs()
			for b.Loop() {
				dst, _ = d.Detect(dst[:0], gaps)
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "gaps/s")
		})
	}
}
