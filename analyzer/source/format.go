package source

import (
	"bytes"

	du "github.com/tokentrace/tokentrace/analyzer/source/internal/decodeutil"
	"github.com/tokentrace/tokentrace/analyzer/source/jaegerjson"
	"github.com/tokentrace/tokentrace/analyzer/source/otlpjson"
	"github.com/tokentrace/tokentrace/analyzer/source/otlpproto"
)

// Format is a trace file format Files recognises.
type Format int

// The formats.
const (
	FormatUnknown    Format = iota
	FormatOTLPJSON          // OTLP JSON lines, a TracesData document, a Jaeger api_v3 answer
	FormatOTLPProto         // OTLP protobuf, length-prefixed or one message
	FormatJaegerJSON        // Jaeger UI JSON
	FormatGzip              // gzip-compressed; Detect the decompressed start
)

func (f Format) String() string {
	switch f {
	case FormatOTLPJSON:
		return "OTLP JSON"
	case FormatOTLPProto:
		return "OTLP protobuf"
	case FormatJaegerJSON:
		return "Jaeger UI JSON"
	case FormatGzip:
		return "gzip"
	}
	return "unknown"
}

var (
	gzipMagic = []byte{0x1f, 0x8b}
	zstdMagic = []byte{0x28, 0xb5, 0x2f, 0xfd}
)

// Detect recognises a format from the start of a file (64 KiB is enough).
func Detect(prefix []byte) Format {
	f, _ := detect(prefix)
	return f
}

// detect also says, for an unknown format, what was seen.
func detect(prefix []byte) (Format, string) {
	switch {
	case bytes.HasPrefix(prefix, gzipMagic):
		return FormatGzip, ""
	case bytes.HasPrefix(prefix, zstdMagic):
		return FormatUnknown, "zstd-compressed: decompress it first (zstd -d)"
	}
	if p := du.TrimSpaceBOM(prefix); len(p) > 0 && (p[0] == '{' || p[0] == '[') {
		switch {
		case otlpjson.Sniff(p):
			return FormatOTLPJSON, ""
		case jaegerjson.Sniff(p):
			return FormatJaegerJSON, ""
		}
		return FormatUnknown, "JSON, but neither OTLP (resourceSpans) nor Jaeger (data, traceID) keys were found at its start"
	}
	if otlpproto.Sniff(prefix) {
		return FormatOTLPProto, ""
	}
	return FormatUnknown, ""
}
