package loadgen

import (
	"math"
	"math/rand/v2"
	"sort"
	"time"
)

// Streams of the seeded generator: each use draws from its own stream, so
// that changing the mix does not move the arrival times and changing the
// rate does not change which types arrive.
const (
	streamArrivals uint64 = 0x61727269_76616c73 // "arrivals"
	streamMix      uint64 = 0x6d69785f_74797065 // "mix_type"
	streamPrompt   uint64 = 0x70726f6d_70747321 // "prompts!"
)

// Arrival is one scheduled request.
type Arrival struct {
	// Index is the arrival's ordinal, from 0.
	Index int
	// Offset is when it is due, from the start of the run.
	Offset time.Duration
	// Type is the index of its request type in Config.Types.
	Type int
}

// Schedule returns the first n arrivals that Run would send for cfg: the
// same seed gives the same schedule. It ignores the bounds (Requests,
// Duration) and validates the rest of cfg.
func Schedule(cfg Config, n int) ([]Arrival, error) {
	if cfg.Requests <= 0 && cfg.Duration <= 0 {
		cfg.Requests = 1 // the bounds do not matter here
	}
	c, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	s := newScheduler(c)
	out := make([]Arrival, n)
	for i := range out {
		out[i] = s.next()
	}
	return out, nil
}

// scheduler yields the arrivals of a validated config, one at a time.
type scheduler struct {
	poisson bool
	rate    float64
	times   *rand.Rand
	mix     *rand.Rand
	cum     []float64 // cumulative weights
	i       int
	t       float64 // seconds since start of the previous arrival
}

func newScheduler(c Config) *scheduler {
	s := &scheduler{
		poisson: c.Arrival == ArrivalPoisson,
		rate:    c.Rate,
		times:   rand.New(rand.NewPCG(c.Seed, streamArrivals)),
		mix:     rand.New(rand.NewPCG(c.Seed, streamMix)),
	}
	var sum float64
	for _, t := range c.Types {
		sum += t.Weight
		s.cum = append(s.cum, sum)
	}
	return s
}

// next returns the next arrival. The first one is due at once; after it,
// gaps are exponential with mean 1/rate (Poisson) or exactly 1/rate
// (fixed). An infinite rate makes every gap 0.
func (s *scheduler) next() Arrival {
	i := s.i
	s.i++
	switch {
	case i == 0 || math.IsInf(s.rate, 1):
	case s.poisson:
		s.t += s.times.ExpFloat64() / s.rate
	default:
		s.t = float64(i) / s.rate // no accumulated rounding
	}
	return Arrival{Index: i, Offset: secondsToDuration(s.t), Type: s.pick()}
}

// pick draws a type index by weight; types of weight 0 are never drawn.
func (s *scheduler) pick() int {
	total := s.cum[len(s.cum)-1]
	x := s.mix.Float64() * total
	k := sort.Search(len(s.cum), func(k int) bool { return s.cum[k] > x })
	if k == len(s.cum) { // x == total by rounding; take the last type with weight
		k = len(s.cum) - 1
		for k > 0 && s.cum[k] == s.cum[k-1] {
			k--
		}
	}
	return k
}

func secondsToDuration(s float64) time.Duration {
	if s >= float64(math.MaxInt64)/1e9 {
		return time.Duration(math.MaxInt64)
	}
	return time.Duration(math.Round(s * 1e9))
}
