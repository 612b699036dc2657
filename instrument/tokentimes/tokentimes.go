package tokentimes

import (
	"encoding/base64"
	"encoding/binary"
	"errors"
	"fmt"
	"strings"
	"time"
)

const prefix = "v1:"

// MaxEntries bounds what Decode accepts, so a corrupt or hostile attribute
// cannot make a reader allocate without limit.
const MaxEntries = 1 << 22

var enc = base64.RawURLEncoding

// Append appends the encoding of offsets (time since the span start, in
// non-decreasing order) to dst and returns the extended buffer. Negative
// offsets and decreasing steps are clamped to zero rather than rejected:
// the writer is telemetry and must not fail.
func Append(dst []byte, offsets []time.Duration) []byte {
	var raw [binary.MaxVarintLen64]byte
	dst = append(dst, prefix...)
	// Encode in groups of 3 bytes so base64 can be written incrementally
	// without a second buffer.
	var pend [3 + binary.MaxVarintLen64]byte
	np := 0
	var prev int64
	for _, off := range offsets {
		us := int64(off / time.Microsecond)
		if us < prev {
			us = prev
		}
		n := binary.PutUvarint(raw[:], uint64(us-prev))
		prev = us
		np += copy(pend[np:], raw[:n])
		full := np / 3 * 3
		if full > 0 {
			dst = enc.AppendEncode(dst, pend[:full])
			np = copy(pend[:], pend[full:np])
		}
	}
	return enc.AppendEncode(dst, pend[:np])
}

// Encode returns the encoding of offsets as a string.
func Encode(offsets []time.Duration) string {
	return string(Append(make([]byte, 0, len(prefix)+4*len(offsets)+4), offsets))
}

// AppendCounts appends the encoding of per-chunk token counts to dst.
func AppendCounts(dst []byte, counts []uint32) []byte {
	raw := make([]byte, 0, len(counts)+8)
	for _, c := range counts {
		raw = binary.AppendUvarint(raw, uint64(c))
	}
	dst = append(dst, prefix...)
	return enc.AppendEncode(dst, raw)
}

// EncodeCounts returns the encoding of per-chunk token counts as a string.
func EncodeCounts(counts []uint32) string { return string(AppendCounts(nil, counts)) }

// ErrFormat reports an encoded value that is not version 1 of the format.
var ErrFormat = errors.New("tokentimes: not a v1 token-times value")

func decodeRaw(s string) ([]byte, error) {
	if !strings.HasPrefix(s, prefix) {
		return nil, ErrFormat
	}
	body := s[len(prefix):]
	if enc.DecodedLen(len(body)) > MaxEntries*binary.MaxVarintLen64 {
		return nil, fmt.Errorf("tokentimes: value too large (%d bytes)", len(s))
	}
	raw, err := enc.DecodeString(body)
	if err != nil {
		return nil, fmt.Errorf("tokentimes: %w", err)
	}
	return raw, nil
}

func uvarints(raw []byte, each func(v uint64) error) error {
	for i, n := 0, 0; len(raw) > 0; i++ {
		if n >= MaxEntries {
			return fmt.Errorf("tokentimes: more than %d entries", MaxEntries)
		}
		v, k := binary.Uvarint(raw)
		if k <= 0 {
			return fmt.Errorf("tokentimes: bad varint at entry %d", i)
		}
		if err := each(v); err != nil {
			return err
		}
		raw = raw[k:]
		n++
	}
	return nil
}

// Decode returns the offsets encoded in s, in whole microseconds.
func Decode(s string) ([]time.Duration, error) {
	raw, err := decodeRaw(s)
	if err != nil {
		return nil, err
	}
	out := make([]time.Duration, 0, len(raw)/2)
	var us uint64
	err = uvarints(raw, func(d uint64) error {
		us += d
		if us > uint64(1<<63-1)/uint64(time.Microsecond) {
			return errors.New("tokentimes: offset overflows")
		}
		out = append(out, time.Duration(us)*time.Microsecond)
		return nil
	})
	return out, err
}

// DecodeCounts returns the per-chunk token counts encoded in s.
func DecodeCounts(s string) ([]uint32, error) {
	raw, err := decodeRaw(s)
	if err != nil {
		return nil, err
	}
	out := make([]uint32, 0, len(raw))
	err = uvarints(raw, func(c uint64) error {
		if c > 1<<31 {
			return errors.New("tokentimes: count out of range")
		}
		out = append(out, uint32(c))
		return nil
	})
	return out, err
}
