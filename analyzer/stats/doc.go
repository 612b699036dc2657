// Package stats computes the run-wide statistics of a tokentrace report:
// exact distributions of TTFT, TPOT and ITL, the same by dimension (model,
// model version, prompt type, instance, context length, cold/warm), and
// the distortion checks that say when those numbers mislead (errors hidden
// behind a normal P99, one instance slower than another, periodic stalls).
//
// Definitions follow vLLM's benchmark and the OpenTelemetry GenAI metrics:
//
//   - TTFT: span start → first token-bearing chunk; one sample per request
//     that produced a token.
//   - TPOT: (last − first token time) / (tokens − 1), the first token
//     excluded (model.Request.TPOT); one sample per request with ≥ 2 tokens.
//   - ITL: every gap after the first, pooled over all requests
//     (model.Request.Gaps): one sample per token-bearing chunk after the
//     first, at its per-token pace (a chunk of k tokens gives its gap / k).
//
// Percentiles are exact: computed from the kept samples, never from
// histogram buckets. A Collector therefore keeps one TTFT and one TPOT
// sample per request (float64) and every ITL sample (float32, 4 bytes:
// ms with 24 bits of mantissa is exact to better than 1 µs below 8 s), so
// its memory grows with the number of chunks analysed — about 4 bytes per
// token plus ~70 bytes per request.
package stats
