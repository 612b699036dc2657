// Package tokentimes is the compact encoding of a streamed response's token
// times that tokentrace stores on every span (attribute
// tokentrace.token_times), so that no token time is lost when an
// OpenTelemetry SDK or a tracing backend caps the number of span events.
//
// # Format, version 1
//
// Times are offsets from the span's start time, truncated to whole
// microseconds: u_i = floor(offset_i / 1µs). The encoded value is the text
//
//	"v1:" + base64url_nopad( uvarint(u_0) uvarint(u_1 - u_0) ... uvarint(u_n-1 - u_n-2) )
//
// where uvarint is the unsigned LEB128 varint of encoding/binary and
// base64url_nopad is RFC 4648 §5 without padding. Offsets never decrease
// (they come from a monotonic clock), so every delta is non-negative. A gap
// below 16.4 ms takes 2 bytes and one below 2.1 s takes 3, so the attribute
// costs 2.7–4 bytes per token; decoding recovers every time to within 1 µs
// of the original.
//
// Chunk token counts (attribute tokentrace.token_counts, present only when
// some chunk carried more than one token) use the same frame: "v1:" +
// base64url_nopad of one uvarint per chunk.
package tokentimes
