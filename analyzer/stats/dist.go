package stats

import (
	"math"
	"slices"

	"github.com/tokentrace/tokentrace/analyzer/report"
)

// Dist summarises samples (milliseconds) exactly: count, mean, P50, P90,
// P99, P99.9, P99.99 and max. It sorts a copy; samples is not changed.
//
// Percentiles use linear interpolation between the closest ranks (numpy's
// default, method "linear", also R's type 7): for n sorted samples x and
// probability p, h = (n−1)·p and Q(p) = x[⌊h⌋] + (h−⌊h⌋)·(x[⌊h⌋+1] − x[⌊h⌋]).
// So P50 of {1, 2, 3, 4} is 2.5, and every percentile lies between the
// minimum and the maximum.
//
// NaN and ±Inf samples are ignored (Count counts the finite ones); no
// result is NaN or Inf. No samples give the zero Dist.
func Dist(samples []float64) report.Dist {
	s := make([]float64, 0, len(samples))
	for _, v := range samples {
		if finite(v) {
			s = append(s, v)
		}
	}
	slices.Sort(s)
	return sortedDist(s)
}

// distCopy is Dist for the collector's own finite samples of either width.
func distCopy[T float32 | float64](samples []T) report.Dist {
	s := slices.Clone(samples)
	slices.Sort(s)
	return sortedDist(s)
}

// sortedDist summarises sorted, finite samples.
func sortedDist[T float32 | float64](s []T) report.Dist {
	n := len(s)
	if n == 0 {
		return report.Dist{}
	}
	return report.Dist{
		Count: n,
		Mean:  mean(s),
		P50:   quantile(s, 0.50),
		P90:   quantile(s, 0.90),
		P99:   quantile(s, 0.99),
		P999:  quantile(s, 0.999),
		P9999: quantile(s, 0.9999),
		Max:   float64(s[n-1]),
	}
}

// quantile is numpy's linear-interpolation percentile of sorted samples.
func quantile[T float32 | float64](s []T, p float64) float64 {
	n := len(s)
	h := p * float64(n-1)
	lo := int(math.Floor(h))
	if lo >= n-1 {
		return float64(s[n-1])
	}
	a, b := float64(s[lo]), float64(s[lo+1])
	f := h - float64(lo)
	q := a + f*(b-a)
	if !finite(q) { // b−a overflowed (samples near ±MaxFloat64)
		q = a*(1-f) + b*f
	}
	return q
}

// mean is the arithmetic mean of sorted samples; it stays finite for
// finite samples.
func mean[T float32 | float64](s []T) float64 {
	var sum float64
	for _, v := range s {
		sum += float64(v)
	}
	m := sum / float64(len(s))
	if finite(m) {
		return m
	}
	m = 0 // the sum overflowed: add the samples already divided by n
	for _, v := range s {
		m += float64(v) / float64(len(s))
	}
	// The mean lies between the extremes; rounding may not know that.
	return min(max(m, float64(s[0])), float64(s[len(s)-1]))
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// ladder is the histogram bucket bounds in ms: 1, 1.5, 2, 3, 5, 7 per
// decade from 10 µs to 1,000 s. Read only.
var ladder = func() []float64 {
	var b []float64
	for e := -2; e <= 6; e++ {
		for _, m := range []float64{1, 1.5, 2, 3, 5, 7} {
			b = append(b, math.Round(m*math.Pow10(e)*1e3)/1e3)
		}
	}
	return b[:len(b)-5] // end at 1e6 ms
}()

// histogram counts sorted, finite samples on the ladder, trimmed to their
// range (see report.Histogram).
func histogram[T float32 | float64](name string, s []T) report.Histogram {
	h := report.Histogram{Name: name}
	if len(s) == 0 {
		return h
	}
	// first bound ≥ min and first bound ≥ max.
	i0, _ := slices.BinarySearch(ladder, float64(s[0]))
	i1, _ := slices.BinarySearch(ladder, float64(s[len(s)-1]))
	if i0 > 0 {
		i0-- // the bound below the minimum opens the first real bucket
	}
	if i1 >= len(ladder) {
		i1 = len(ladder) - 1
	}
	h.Bounds = slices.Clone(ladder[i0 : i1+1])
	h.Counts = make([]int, len(h.Bounds)+1)
	b := 0
	for _, v := range s {
		for b < len(h.Bounds) && float64(v) > h.Bounds[b] {
			b++
		}
		h.Counts[b]++
	}
	return h
}
