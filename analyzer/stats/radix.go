package stats

import "math"

// sortFloat32 sorts s ascending with an LSD radix sort on the IEEE bits:
// the pooled ITL samples of a large run number in the millions, and four
// linear passes beat a comparison sort's n log n several times over. NaNs
// never reach it (Add drops them).
func sortFloat32(s []float32) {
	if len(s) < 256 {
		insertionSort32(s)
		return
	}
	keys := make([]uint32, len(s))
	for i, f := range s {
		b := math.Float32bits(f)
		if b&0x80000000 != 0 {
			b = ^b // negative: reverse the order
		} else {
			b |= 0x80000000
		}
		keys[i] = b
	}
	tmp := make([]uint32, len(s))
	for shift := uint(0); shift < 32; shift += 8 {
		var count [257]int
		for _, k := range keys {
			count[(k>>shift)&0xff+1]++
		}
		for i := 1; i < 257; i++ {
			count[i] += count[i-1]
		}
		for _, k := range keys {
			d := (k >> shift) & 0xff
			tmp[count[d]] = k
			count[d]++
		}
		keys, tmp = tmp, keys
	}
	for i, b := range keys {
		if b&0x80000000 != 0 {
			b &^= 0x80000000
		} else {
			b = ^b
		}
		s[i] = math.Float32frombits(b)
	}
}

func insertionSort32(s []float32) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}
