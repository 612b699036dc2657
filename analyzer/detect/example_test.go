package detect_test

import (
	"fmt"

	"github.com/tokentrace/tokentrace/analyzer/detect"
)

// A request decoding at 12 ms per token sees another request's prompt
// prefilled in chunks (six gaps of 150–220 ms), then runs at 30 ms while
// that request decodes alongside, and later stalls once for a second.
func Example() {
	var gaps []float64
	for i := range 200 {
		g := 12.0 + float64(i%3)*0.5 // a little jitter
		switch {
		case i >= 60 && i < 66:
			g = 150 + float64(i-60)*14
		case i >= 66 && i < 110:
			g = 30 + float64(i%2)
		case i == 150:
			g = 1000
		}
		gaps = append(gaps, g)
	}
	segs, baseline := detect.Detect(gaps, detect.DefaultConfig())
	fmt.Printf("baseline %.1f ms\n", baseline)
	for _, s := range segs {
		fmt.Printf("%-5s gaps %d-%d: median %.1f ms, ×%.1f, %.0f ms lost\n",
			s.Kind, s.Start, s.End, s.MedianMs, s.Slowdown, s.LostMs)
	}
	// Output:
	// baseline 12.5 ms
	// run   gaps 60-65: median 185.0 ms, ×14.8, 1035 ms lost
	// run   gaps 66-109: median 30.5 ms, ×2.4, 792 ms lost
	// stall gaps 150-150: median 1000.0 ms, ×80.0, 988 ms lost
}

// A Detector reuses its buffers: analyse many requests without allocating.
func ExampleDetector() {
	d := detect.NewDetector(detect.Config{}) // zero fields take the defaults
	var segs []detect.Segment
	for _, gaps := range [][]float64{
		{12, 13, 12, 12, 13, 12, 900, 12, 13, 12},
		{20, 21, 20},
	} {
		segs, _ = d.Detect(segs[:0], gaps)
		fmt.Println(len(segs), "segment(s)")
	}
	// Output:
	// 1 segment(s)
	// 0 segment(s)
}
