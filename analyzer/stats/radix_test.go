package stats

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestSortFloat32MatchesSlicesSort(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for _, n := range []int{0, 1, 7, 255, 256, 1000, 100000} {
		s := make([]float32, n)
		for i := range s {
			switch i % 5 {
			case 0:
				s[i] = float32(r.NormFloat64() * 100) // negatives too
			case 1:
				s[i] = 0
			default:
				s[i] = float32(r.ExpFloat64() * 15)
			}
		}
		want := slices.Clone(s)
		slices.Sort(want)
		sortFloat32(s)
		if !slices.Equal(s, want) {
			t.Fatalf("n=%d: radix sort differs from slices.Sort", n)
		}
	}
}
