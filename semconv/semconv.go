package semconv

import "go.opentelemetry.io/otel/attribute"

// SchemaVersion is the version of the tokentrace trace schema written by
// this module. It is recorded on every span as [SchemaVersionKey]. A reader
// must accept every version it knows and reject newer major versions.
const SchemaVersion = "tokentrace/1"

// OpenTelemetry GenAI semantic-convention keys (Development status).
const (
	GenAIOperationName         = attribute.Key("gen_ai.operation.name")
	GenAIProviderName          = attribute.Key("gen_ai.provider.name")
	GenAIRequestModel          = attribute.Key("gen_ai.request.model")
	GenAIResponseModel         = attribute.Key("gen_ai.response.model")
	GenAIRequestStream         = attribute.Key("gen_ai.request.stream")
	GenAIRequestMaxTokens      = attribute.Key("gen_ai.request.max_tokens")
	GenAIUsageInputTokens      = attribute.Key("gen_ai.usage.input_tokens")
	GenAIUsageOutputTokens     = attribute.Key("gen_ai.usage.output_tokens")
	GenAIResponseFinishReasons = attribute.Key("gen_ai.response.finish_reasons")
	GenAIResponseID            = attribute.Key("gen_ai.response.id")
	// GenAIResponseTimeToFirstChunk is in seconds, as the conventions say.
	GenAIResponseTimeToFirstChunk = attribute.Key("gen_ai.response.time_to_first_chunk")

	ServerAddress      = attribute.Key("server.address")
	ServerPort         = attribute.Key("server.port")
	ErrorType          = attribute.Key("error.type")
	HTTPRequestMethod  = attribute.Key("http.request.method")
	HTTPResponseStatus = attribute.Key("http.response.status_code")
	URLPath            = attribute.Key("url.path")
)

// Values of [GenAIOperationName].
const (
	OperationChat           = "chat"
	OperationTextCompletion = "text_completion"
)

// Span attributes of tokentrace (namespace "tokentrace.").
const (
	// SchemaVersionKey carries [SchemaVersion].
	SchemaVersionKey = attribute.Key("tokentrace.schema")

	// Instance names the engine instance that served the request: the
	// requests of one instance share one continuous batch. Default: the
	// upstream host:port.
	Instance = attribute.Key("tokentrace.instance")
	// PromptType and ModelVersion are the user's classification of the
	// request (the seed reports' prompt_type and model_version dimensions).
	PromptType   = attribute.Key("tokentrace.prompt_type")
	ModelVersion = attribute.Key("tokentrace.model_version")

	// Ordinal is the request's 1-based position among the requests the
	// middleware saw since it started; InstanceOrdinal among the requests of
	// its instance. Small ordinals are cold (warm-up) requests.
	Ordinal         = attribute.Key("tokentrace.ordinal")
	InstanceOrdinal = attribute.Key("tokentrace.instance.ordinal")

	// TTFTMillis is the time from the span start to the first output token,
	// in milliseconds (float).
	TTFTMillis = attribute.Key("tokentrace.ttft_ms")
	// TPOTMillis is the mean time per output token excluding the first:
	// (last - first token time) / (tokens - 1), in milliseconds (float).
	TPOTMillis = attribute.Key("tokentrace.tpot_ms")

	// Tokens is the number of output tokens: the final usage count when
	// the stream carried one, else the count of token-bearing chunks.
	Tokens = attribute.Key("tokentrace.tokens")
	// TokensEstimated is true when Tokens did not come from a usage count.
	TokensEstimated = attribute.Key("tokentrace.tokens.estimated")
	// Chunks is the number of token-bearing chunks seen (one token event
	// and one compact entry per chunk).
	Chunks = attribute.Key("tokentrace.chunks")
	// ChunksUntimed counts token-bearing chunks past the per-request cap
	// whose times were not kept (memory bound); 0 when absent.
	ChunksUntimed = attribute.Key("tokentrace.chunks.untimed")

	// TokenTimes is the compact encoding of every token-bearing chunk's
	// time, as microsecond offsets from the span start (package
	// instrument/tokentimes). Present on every streamed span unless
	// disabled, so no timing is lost when token events are capped.
	TokenTimes = attribute.Key("tokentrace.token_times")
	// TokenCounts is the compact encoding of each chunk's token count;
	// absent when every chunk carried exactly one token.
	TokenCounts = attribute.Key("tokentrace.token_counts")
	// TokenEventsDropped is true when the middleware did not write the
	// per-token events it was asked for (finisher queue full); the compact
	// encoding still holds every time.
	TokenEventsDropped = attribute.Key("tokentrace.token_events.dropped")

	// StreamOutcome says how the stream ended: one of the Outcome* values.
	StreamOutcome = attribute.Key("tokentrace.stream.outcome")
	// MalformedChunks counts data lines that were not well-formed JSON
	// objects; OversizedLines counts lines longer than the parser's limit.
	MalformedChunks = attribute.Key("tokentrace.stream.malformed_chunks")
	OversizedLines  = attribute.Key("tokentrace.stream.oversized_lines")
	// PromptChars is the number of characters of prompt text in the
	// request (a size, never the text).
	PromptChars = attribute.Key("tokentrace.prompt_chars")
)

// Values of [StreamOutcome].
const (
	OutcomeComplete         = "complete"          // [DONE] or a finish reason seen
	OutcomeTruncated        = "truncated"         // body ended without either
	OutcomeClientDisconnect = "client_disconnect" // the client went away
	OutcomeUpstreamError    = "upstream_error"    // non-2xx status or an error chunk
	OutcomeNotStreamed      = "not_streamed"      // a non-streaming response
)

// Token events: one per token-bearing chunk, stamped with the time its
// bytes were written (server side) or read (client side).
const (
	TokenEvent = "tokentrace.token"
	// TokenIndex is the 0-based index of the chunk's first output token.
	TokenIndex = attribute.Key("tokentrace.token.index")
	// TokenCount is the number of tokens the chunk carried; absent means 1.
	TokenCount = attribute.Key("tokentrace.token.count")
)

// Engine events: what the engine instance did while the span's request was
// generating. The event's timestamp is the start of what happened.
const (
	PrefillEvent    = "tokentrace.engine.prefill"
	PreemptionEvent = "tokentrace.engine.preemption"
	GCPauseEvent    = "tokentrace.engine.gc_pause"

	// EngineDurationMillis is how long it lasted, in milliseconds (float).
	EngineDurationMillis = attribute.Key("tokentrace.engine.duration_ms")
	// EngineUncertaintyMillis is how imprecise start and duration are, in
	// milliseconds (e.g. a metrics poll interval); absent when exact.
	EngineUncertaintyMillis = attribute.Key("tokentrace.engine.uncertainty_ms")
	// EngineSource says who reported it: see the Source* values.
	EngineSource = attribute.Key("tokentrace.engine.source")

	// PrefillTraceID and PrefillSpanID name the request whose prefill ran
	// (hex); PrefillRequestID is the engine's own id when no trace is known.
	PrefillTraceID   = attribute.Key("tokentrace.prefill.trace_id")
	PrefillSpanID    = attribute.Key("tokentrace.prefill.span_id")
	PrefillRequestID = attribute.Key("tokentrace.prefill.request_id")
	// PrefillPromptTokens is the intruder's prompt size in tokens;
	// PrefillPromptChars its size in characters when tokens are unknown.
	PrefillPromptTokens = attribute.Key("tokentrace.prefill.prompt_tokens")
	PrefillPromptChars  = attribute.Key("tokentrace.prefill.prompt_chars")

	// PreemptionMode is "recompute" or "swap".
	PreemptionMode = attribute.Key("tokentrace.preemption.mode")
	// PreemptionVictim is true on the span of the preempted request itself.
	PreemptionVictim = attribute.Key("tokentrace.preemption.victim")
	// PreemptionRequestID names the preempted request when known.
	PreemptionRequestID = attribute.Key("tokentrace.preemption.request_id")
	// PreemptionCount is how many preemptions the event stands for (a
	// counter delta from a metrics poll may cover several).
	PreemptionCount = attribute.Key("tokentrace.preemption.count")
)

// Values of [PreemptionMode].
const (
	PreemptionRecompute = "recompute"
	PreemptionSwap      = "swap"
)

// Values of [EngineSource].
const (
	SourceGateway     = "gateway"       // recorded by the middleware itself
	SourceGatewayGoGC = "gateway_go_gc" // the gateway's own Go runtime
	SourceEngine      = "engine"        // reported by the engine through the API
	SourceMetrics     = "metrics"       // inferred from an engine's /metrics
)
