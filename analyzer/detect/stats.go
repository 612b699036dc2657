package detect

import (
	"math/bits"
	"slices"
)

// selectK reorders v so that v[k] is its k-th smallest value (0-based),
// everything before it is ≤ v[k] and everything after it ≥ v[k], and
// returns v[k]. It is a quickselect with a median-of-three pivot that
// falls back to sorting the remaining range after 2·log₂n rounds, so it
// stays O(n log n) at worst (sorted input, the drift case, is O(n)). v
// must not contain NaN. It does not allocate.
func selectK(v []float64, k int) float64 {
	lo, hi := 0, len(v)-1
	budget := 2*bits.Len(uint(len(v))) + 4
	for hi > lo {
		if budget == 0 {
			slices.Sort(v[lo : hi+1])
			return v[k]
		}
		budget--
		mid := lo + (hi-lo)/2
		if v[mid] < v[lo] {
			v[mid], v[lo] = v[lo], v[mid]
		}
		if v[hi] < v[lo] {
			v[hi], v[lo] = v[lo], v[hi]
		}
		if v[hi] < v[mid] {
			v[hi], v[mid] = v[mid], v[hi]
		}
		pivot := v[mid]
		i, j := lo, hi
		for i <= j {
			for v[i] < pivot {
				i++
			}
			for v[j] > pivot {
				j--
			}
			if i <= j {
				v[i], v[j] = v[j], v[i]
				i++
				j--
			}
		}
		switch {
		case k <= j:
			hi = j
		case k >= i:
			lo = i
		default:
			return v[k]
		}
	}
	return v[k]
}

// median returns the median of v (the mean of the two middle values when
// len(v) is even; 0 when v is empty). It reorders v.
func median(v []float64) float64 {
	n := len(v)
	if n == 0 {
		return 0
	}
	k := n / 2
	m := selectK(v, k)
	if n%2 == 1 {
		return m
	}
	lo := v[0]
	for _, x := range v[1:k] {
		if x > lo {
			lo = x
		}
	}
	return (lo + m) / 2
}

// lowerMedian returns the ⌈n/2⌉-th smallest value of v (for two values,
// the smaller). It reorders v.
func lowerMedian(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	return selectK(v, (len(v)-1)/2)
}

// grow returns s resized to n, reusing its array when it is large enough.
func grow[T any](s []T, n int) []T {
	if cap(s) >= n {
		return s[:n]
	}
	return make([]T, n, n+n/4)
}
