// Package loadgen is tokentrace's load generator: it sends a seeded mix of
// OpenAI-compatible requests (streamed by default) to a gateway and
// measures each one on the client side, so that what the traces say can
// be checked against what a client saw. It is used by the example program
// examples/loadgen, by `tokentrace demo` and by tests.
//
//	cfg := loadgen.DefaultConfig()          // built-in mix, 5 req/s Poisson, 100 requests
//	cfg.BaseURL = "http://127.0.0.1:8080"
//	res, err := loadgen.Run(ctx, cfg)
//	if err != nil { ... }                   // only for an invalid config
//	res.Summary().WriteText(os.Stdout)
//
// # Requests
//
// A [RequestType] gives a prompt size, max_tokens, model, streaming and
// endpoint (/v1/chat/completions or /v1/completions); [BuiltinTypes] are
// short Q&A, long analysis and long-prompt "intruders" whose prefill slows
// down everyone else's decoding. Prompts are filler words, about
// [CharsPerToken] characters per token, made from the seed and the
// arrival's index: never real user text. Neither prompts nor answers nor
// headers are ever logged or recorded.
//
// # Arrivals
//
// Arrival times come from a generator seeded by Config.Seed ([Schedule]
// lists them): Poisson (exponential gaps of mean 1/Rate) or fixed (1/Rate
// apart); the first arrival is at 0. Times, type choice and prompts use
// separate streams of the generator, so the same seed gives the same
// schedule, and changing the mix does not move the arrival times. At most
// Concurrency requests are in flight: an arrival that finds the limit full
// waits (the arrivals after it queue behind it, in order), and how long
// each waited is recorded and reported. The run stops sending at the
// first of its bounds: Requests sent, Duration elapsed (no arrival is
// sent after it). One of them must be set. Requests in flight then run to
// their end. Closing Config.Stop ends the arrivals the same way;
// cancelling the context aborts the requests in flight too.
//
// # Measurements
//
// A stream is read line by line (bufio.Scanner, lines up to
// [MaxLineBytes]) and each "data:" chunk decoded with encoding/json. The
// time of a chunk is when its line was read. A chunk is content-bearing
// when a choice has non-empty content, text, reasoning content or tool
// calls (a role-only first chunk is not). For each request:
//
//   - TTFT: from sending the request to the first content-bearing chunk;
//   - token times: the arrival times of the content-bearing chunks (a
//     chunk that carries several tokens is one time);
//   - output tokens: completion_tokens of the final usage chunk when the
//     server sent one (Config.IncludeUsage asks for it), else the number of
//     content-bearing chunks;
//   - TPOT, excluding the first token: (last − first chunk time) /
//     (output tokens − 1), for requests with two chunks or more;
//   - ITL: every gap between consecutive chunks (pooled over requests in
//     the summary, as vLLM's benchmark does);
//   - E2E latency: to the end of the response;
//   - the trace id from a traceparent or X-Trace-Id response header.
//
// Failures are recorded with their reason: an HTTP status >= 400 with the
// message of the OpenAI error body, a transport error, a stream that ends
// without "data: [DONE]" (truncated), an error chunk, a malformed chunk.
// A non-streamed request is measured by latency and usage only.
//
// # Summary
//
// [Result.Summary] gives, over the successful requests, overall and per
// request type, for TTFT, TPOT, ITL and E2E: count, mean, median, P90,
// P99, P99.9, P99.99 and max, computed exactly from the sorted samples
// with linear interpolation between closest ranks ([Percentile], numpy's
// default). It adds throughput (requests/s, output tokens/s), the error
// count and rate with the most frequent messages, and the time arrivals
// waited for the concurrency limit. [Summary.WriteText] prints it in the
// style of vLLM's benchmark, [Summary.WriteJSON] as JSON.
//
// # Progress
//
// When Config.Progress is a terminal, a progress bar shows the completed
// requests against the target and the errors so far; otherwise (a pipe, a
// file, CI) Run prints nothing while it runs.
package loadgen
