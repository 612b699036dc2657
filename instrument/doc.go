// Package instrument is the middleware half of tokentrace: it makes every
// streamed LLM request that passes through a Go gateway explain its own
// timing in an OpenTelemetry trace.
//
// Add it in one line around the gateway's handler, and around the
// transport that calls the engine:
//
//	tracker := instrument.NewTracker()
//	proxy.Transport = instrument.Transport(http.DefaultTransport, instrument.WithTracker(tracker))
//	http.Handle("/v1/", instrument.Handler(proxy, instrument.WithTracker(tracker)))
//
// Each OpenAI-compatible completion request (POST .../chat/completions or
// .../completions) becomes one span named "{operation} {model}" with the
// GenAI semantic-convention attributes, TTFT, mean TPOT (excluding the
// first token), the token count, the engine instance, the request's
// ordinal (cold vs warm) and, for streamed responses, one span event per
// token-bearing chunk, stamped with the moment its bytes were written.
//
// # No timing is lost
//
// The OpenTelemetry SDK keeps only the newest 128 events per span by
// default, and tracing backends struggle with spans of thousands of events.
// So every streamed span also carries all token times in a compact
// attribute (package tokentimes: about 3 bytes per token, exact to 1 µs),
// and [NewTracerProvider] builds an OTLP gRPC provider whose event limit
// and batch sizes suit Jaeger. [WithTokenRecording] chooses events, the
// compact encoding, or both (the default).
//
// The request path only stores a timestamp per chunk in a pooled buffer;
// the span events are written after the response has been handed back, in
// a bounded background finisher. Call [Flush] (or Shutdown on the provider
// from NewTracerProvider) before exiting so the last spans are complete.
//
// # Engine events
//
// A [Tracker] knows the requests in flight on each engine instance. What
// the engine did meanwhile (another request's prefill inserted into the
// batch, a KV-cache preemption or swap, a GC pause) is written onto the
// span of every request it overlapped, by [Tracker.RecordPrefill],
// [Tracker.RecordPreemption] and [Tracker.RecordGCPause]. The middleware
// itself records, for every request, the prefill of each request admitted
// on the same instance while it was generating (closed by the newcomer's
// first token), and [Tracker.WatchGoGC] records the gateway's own Go GC
// pauses.
//
// # Metrics
//
// [WithMeterProvider] records, once per request as its span completes, the
// GenAI semantic-convention histograms (time to first token, time per
// output token, request duration, token usage) and the seed documents'
// llm_tpot{model_version,prompt_type}, with exemplars carrying the trace
// id and request-derived label values capped. The per-token histogram (the
// inter-token latency, and for a Transport used alone the client time per
// output chunk) is best counted by a [TokenHistograms] registered on the
// reader ([WithTokenHistograms]): a bucket lookup per token instead of one
// SDK Record each. Package enginepoll turns a vLLM or SGLang /metrics
// endpoint into engine events.
//
// # Safety
//
// The response bytes pass through unchanged and undelayed: the middleware
// looks at them only after they were written. http.Flusher,
// http.Hijacker, io.ReaderFrom and Unwrap (for http.ResponseController)
// are preserved. Malformed SSE, giant lines, truncated streams,
// disconnects and upstream errors end the span with the right status and
// the tokens seen so far; memory per request is bounded; nothing panics
// into the gateway. Prompt and completion text and request headers are
// never recorded.
package instrument
