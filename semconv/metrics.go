package semconv

import "go.opentelemetry.io/otel/attribute"

// Metrics recorded by the middleware (instrument.WithMeterProvider), once
// per request when it completes. Durations are in seconds. The OpenTelemetry
// Prometheus exporter turns dots into underscores and appends the unit
// ("_seconds") and, for histograms, "_bucket", "_sum" and "_count".
const (
	// OpenTelemetry GenAI metrics (Development status), server side: a
	// Handler's requests.
	MetricServerRequestDuration  = "gen_ai.server.request.duration"
	MetricServerTimeToFirstToken = "gen_ai.server.time_to_first_token"
	MetricServerTimePerOutputTok = "gen_ai.server.time_per_output_token"

	// Client side: the requests of a Transport used without a Handler.
	MetricClientOperationDuration = "gen_ai.client.operation.duration"
	MetricClientTimeToFirstChunk  = "gen_ai.client.operation.time_to_first_chunk"
	MetricClientTimePerOutputChnk = "gen_ai.client.operation.time_per_output_chunk"
	// MetricClientTokenUsage is recorded on both sides, with
	// [GenAITokenType] "input" (when the usage is known) and "output".
	MetricClientTokenUsage = "gen_ai.client.token.usage"

	// MetricLLMTPOT is the seed documents' histogram: the mean time per
	// output token of each request (excluding the first token), seconds
	// per token, with the labels model_version and prompt_type only. It
	// has no unit so that its Prometheus name stays llm_tpot.
	MetricLLMTPOT = "llm_tpot"
	// MetricInterTokenLatency is every gap between consecutive
	// token-bearing chunks of a stream (vLLM's ITL definition), seconds.
	// Prometheus: tokentrace_inter_token_latency_seconds.
	MetricInterTokenLatency = "tokentrace.inter_token_latency"
)

// Metric attributes.
const (
	// GenAITokenType is "input" or "output" on gen_ai.client.token.usage.
	GenAITokenType = attribute.Key("gen_ai.token.type")

	// MetricModelVersion and MetricPromptType are the user's
	// classification (instrument.Classifier) as metric labels, named as in
	// the seed documents' Prometheus example.
	MetricModelVersion = attribute.Key("model_version")
	MetricPromptType   = attribute.Key("prompt_type")
)

// Values of [GenAITokenType].
const (
	TokenTypeInput  = "input"
	TokenTypeOutput = "output"
)

// MetricValueOther replaces an attribute value from a request (a model
// name, a prompt type) once the middleware has seen the most distinct
// values it keeps for that attribute: it bounds the number of series.
const MetricValueOther = "_other"

// Engine events inferred from an engine's Prometheus metrics
// (instrument/enginepoll).
const (
	// KVCacheHighEvent says the instance's KV-cache usage rose to or past
	// the threshold during the event: requests may soon be preempted.
	KVCacheHighEvent = "tokentrace.engine.kv_cache_high"
	// KVCacheUsage is the usage read (0–1); KVCacheThreshold the threshold.
	KVCacheUsage     = attribute.Key("tokentrace.kv_cache.usage")
	KVCacheThreshold = attribute.Key("tokentrace.kv_cache.threshold")
)
