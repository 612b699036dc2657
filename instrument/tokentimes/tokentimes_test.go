package tokentimes_test

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/tokentrace/tokentrace/instrument/tokentimes"
)

func TestRoundTripWithinOneMicrosecond(t *testing.T) {
	tests := []struct {
		name string
		gap  func(r *rand.Rand) time.Duration
	}{
		{"13B-class 15-85ms", func(r *rand.Rand) time.Duration {
			return 15*time.Millisecond + time.Duration(r.Int64N(int64(70*time.Millisecond)))
		}},
		{"fast 1.6ms", func(r *rand.Rand) time.Duration { return 1600*time.Microsecond + time.Duration(r.Int64N(200000)) }},
		{"sub-microsecond bursts", func(r *rand.Rand) time.Duration { return time.Duration(r.Int64N(900)) }},
		{"multi-second stalls", func(r *rand.Rand) time.Duration { return time.Duration(r.Int64N(int64(5 * time.Second))) }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rand.New(rand.NewPCG(1, 2))
			offs := make([]time.Duration, 5000)
			var at time.Duration = 250 * time.Millisecond
			for i := range offs {
				at += tt.gap(r)
				offs[i] = at
			}
			got, err := tokentimes.Decode(tokentimes.Encode(offs))
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(offs) {
				t.Fatalf("decoded %d, want %d", len(got), len(offs))
			}
			for i := range offs {
				if d := offs[i] - got[i]; d < 0 || d >= time.Microsecond {
					t.Fatalf("offset %d: got %v want %v (error %v)", i, got[i], offs[i], d)
				}
			}
		})
	}
}

func TestSizePerToken(t *testing.T) {
	for _, tt := range []struct {
		gap      time.Duration
		maxBytes float64
	}{
		{1600 * time.Microsecond, 2.7},
		{15 * time.Millisecond, 2.7},
		{85 * time.Millisecond, 4.01}, // 3 varint bytes → 4 base64 chars, plus the "v1:" prefix
	} {
		offs := make([]time.Duration, 1000)
		for i := range offs {
			offs[i] = time.Duration(i+1) * tt.gap
		}
		n := len(tokentimes.Encode(offs))
		if per := float64(n) / 1000; per > tt.maxBytes {
			t.Errorf("gap %v: %.2f B/token, want ≤ %.1f", tt.gap, per, tt.maxBytes)
		}
	}
}

func TestEncodeClampsBackwardsSteps(t *testing.T) {
	got, err := tokentimes.Decode(tokentimes.Encode([]time.Duration{-5, 10 * time.Microsecond, 3 * time.Microsecond, 20 * time.Microsecond}))
	if err != nil {
		t.Fatal(err)
	}
	want := []time.Duration{0, 10 * time.Microsecond, 10 * time.Microsecond, 20 * time.Microsecond}
	for i := range want {
		if got[i] != want[i] {
			t.Fatalf("got %v, want %v", got, want)
		}
	}
}

func TestEmpty(t *testing.T) {
	s := tokentimes.Encode(nil)
	if s != "v1:" {
		t.Fatalf("Encode(nil) = %q", s)
	}
	got, err := tokentimes.Decode(s)
	if err != nil || len(got) != 0 {
		t.Fatalf("Decode(%q) = %v, %v", s, got, err)
	}
}

func TestCountsRoundTrip(t *testing.T) {
	in := []uint32{1, 1, 3, 1, 200, 1, 70000}
	got, err := tokentimes.DecodeCounts(tokentimes.EncodeCounts(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != len(in) {
		t.Fatalf("got %v", got)
	}
	for i := range in {
		if got[i] != in[i] {
			t.Fatalf("got %v want %v", got, in)
		}
	}
}

func TestDecodeErrors(t *testing.T) {
	for _, tt := range []struct{ name, in, want string }{
		{"no prefix", "AAAA", "not a v1"},
		{"other version", "v2:AAAA", "not a v1"},
		{"bad base64", "v1:!!!", "illegal base64"},
		{"truncated varint", "v1:gA", "bad varint"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			_, err := tokentimes.Decode(tt.in)
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("Decode(%q) error %v, want it to mention %q", tt.in, err, tt.want)
			}
		})
	}
}

func FuzzDecode(f *testing.F) {
	f.Add("v1:")
	f.Add(tokentimes.Encode([]time.Duration{time.Millisecond, 20 * time.Millisecond, time.Second}))
	f.Add("v1:gICAgICAgICAgAE")
	f.Add("v1:____________")
	f.Fuzz(func(t *testing.T, s string) {
		offs, err := tokentimes.Decode(s)
		if err != nil {
			return
		}
		for i := 1; i < len(offs); i++ {
			if offs[i] < offs[i-1] {
				t.Fatalf("decoded offsets decrease at %d", i)
			}
		}
		// Whatever decodes re-encodes to a value that decodes the same.
		again, err := tokentimes.Decode(tokentimes.Encode(offs))
		if err != nil || len(again) != len(offs) {
			t.Fatalf("re-encode: %v (%d vs %d)", err, len(again), len(offs))
		}
		for i := range offs {
			if again[i] != offs[i] {
				t.Fatalf("re-encode changed offset %d: %v vs %v", i, again[i], offs[i])
			}
		}
	})
}
