package instrument

import (
	"net/http"
	"strings"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
)

// ScopeName is the instrumentation scope name of the spans tokentrace makes.
const ScopeName = "github.com/tokentrace/tokentrace/instrument"

// Defaults of the options.
const (
	// DefaultMaxChunks is how many token-bearing chunks per request have
	// their times kept (8 bytes each); later chunks are counted but untimed.
	DefaultMaxChunks = 1 << 17
	// DefaultMaxRequestBody is how much of a request body is read to learn
	// the model, the stream flag and the prompt size. Larger bodies still
	// pass through whole; they are just not parsed.
	DefaultMaxRequestBody = 16 << 20
	// DefaultMaxResponseBody is how much of a non-streaming response is
	// kept to read its usage.
	DefaultMaxResponseBody = 4 << 20
	// DefaultMaxPendingFinishes bounds the spans whose token events are
	// being written in the background; past it, spans keep only the compact
	// token times and say so (tokentrace.token_events.dropped).
	DefaultMaxPendingFinishes = 4096
	// DefaultProviderName is the gen_ai.provider.name recorded.
	DefaultProviderName = "openai"
)

// TokenRecording says how token times are written to the span.
type TokenRecording int

const (
	// RecordEventsAndCompact writes one span event per token-bearing chunk
	// and the compact encoding of all times (the default).
	RecordEventsAndCompact TokenRecording = iota
	// RecordCompact writes only the compact encoding (a few bytes per
	// token): the choice for busy gateways and size-limited backends.
	RecordCompact
	// RecordEvents writes only the span events. Times of events beyond the
	// SDK's event limit are lost; prefer RecordEventsAndCompact.
	RecordEvents
)

func (m TokenRecording) events() bool  { return m != RecordCompact }
func (m TokenRecording) compact() bool { return m != RecordEvents }

// RequestInfo is what the middleware learned from a request body, for a
// [Classifier]. It never holds prompt text.
type RequestInfo struct {
	Operation   string // "chat" or "text_completion"
	Model       string
	Stream      bool
	MaxTokens   int // 0 when not set
	Messages    int // chat messages in the request
	PromptChars int // characters of prompt text (a size only)
	// IncludeUsage is true when the client asked for a final usage chunk
	// (stream_options.include_usage).
	IncludeUsage bool
}

// Classification is the user's labelling of a request.
type Classification struct {
	PromptType   string // e.g. "qa", "analysis"; the prompt_type dimension
	ModelVersion string // the model_version dimension
}

// Classifier labels a request for the statistics by prompt type and model
// version. It runs once per request, before the span starts; it must be
// fast and safe for concurrent use.
type Classifier func(r *http.Request, info RequestInfo) Classification

type config struct {
	tracerProvider trace.TracerProvider
	propagators    propagation.TextMapPropagator
	tracker        *Tracker
	classifier     Classifier
	instanceFn     func(*http.Request) string
	recording      TokenRecording
	filter         func(*http.Request) bool
	providerName   string
	maxChunks      int
	maxRequestBody int64
	maxRespBody    int
	metrics        *metricsConfig // metrics.go; nil: no metrics
}

// Option configures [Handler] and [Transport].
type Option interface{ apply(*config) }

type optionFunc func(*config)

func (f optionFunc) apply(c *config) { f(c) }

func newConfig(opts []Option) *config {
	c := &config{
		recording:      RecordEventsAndCompact,
		providerName:   DefaultProviderName,
		maxChunks:      DefaultMaxChunks,
		maxRequestBody: DefaultMaxRequestBody,
		maxRespBody:    DefaultMaxResponseBody,
		filter:         IsCompletionRequest,
	}
	for _, o := range opts {
		if o != nil {
			o.apply(c)
		}
	}
	if c.tracerProvider == nil {
		c.tracerProvider = otel.GetTracerProvider()
	}
	if c.propagators == nil {
		c.propagators = otel.GetTextMapPropagator()
		if len(c.propagators.Fields()) == 0 {
			// The global default propagates nothing; joining the engine's
			// spans to the gateway's trace is the point, so use W3C.
			c.propagators = propagation.NewCompositeTextMapPropagator(propagation.TraceContext{}, propagation.Baggage{})
		}
	}
	if c.tracker == nil {
		c.tracker = NewTracker()
	}
	return c
}

// IsCompletionRequest is the default request filter: POST requests to a
// path ending in /chat/completions or /completions (OpenAI-compatible).
func IsCompletionRequest(r *http.Request) bool {
	return r.Method == http.MethodPost &&
		(strings.HasSuffix(r.URL.Path, "/completions"))
}

// WithTracerProvider sets the provider of the tracer. Default: the global
// provider (otel.GetTracerProvider) at the time Handler or Transport is
// called. A nil provider is ignored.
func WithTracerProvider(tp trace.TracerProvider) Option {
	return optionFunc(func(c *config) {
		if tp != nil {
			c.tracerProvider = tp
		}
	})
}

// WithPropagators sets the propagators that read the incoming trace context
// (Handler) and write traceparent toward the engine (Transport). Default:
// the global propagator (otel.GetTextMapPropagator), or W3C trace context
// and baggage when the global one propagates nothing. Nil is ignored.
func WithPropagators(p propagation.TextMapPropagator) Option {
	return optionFunc(func(c *config) {
		if p != nil {
			c.propagators = p
		}
	})
}

// WithTracker sets the tracker of in-flight requests that receives engine
// events. Share one tracker between the Handler, the Transport and the code
// that reports engine events. Default: a tracker private to the Handler or
// Transport. Nil is ignored.
func WithTracker(t *Tracker) Option {
	return optionFunc(func(c *config) {
		if t != nil {
			c.tracker = t
		}
	})
}

// WithClassifier sets the function that labels each request with a prompt
// type and model version. Default: none (the attributes are not written).
func WithClassifier(f Classifier) Option {
	return optionFunc(func(c *config) { c.classifier = f })
}

// WithInstance sets the function that names the engine instance serving a
// request. Default: the host:port the Transport sends the request to; for a
// Handler used without the Transport, the request's Host. Requests with
// the same instance are taken to share one continuous batch.
func WithInstance(f func(*http.Request) string) Option {
	return optionFunc(func(c *config) { c.instanceFn = f })
}

// WithTokenRecording chooses how token times are written. Default:
// RecordEventsAndCompact.
func WithTokenRecording(m TokenRecording) Option {
	return optionFunc(func(c *config) {
		if m >= RecordEventsAndCompact && m <= RecordEvents {
			c.recording = m
		}
	})
}

// WithFilter sets which requests are traced; others pass through untouched.
// Default: IsCompletionRequest. Nil is ignored.
func WithFilter(f func(*http.Request) bool) Option {
	return optionFunc(func(c *config) {
		if f != nil {
			c.filter = f
		}
	})
}

// WithProviderName sets gen_ai.provider.name (e.g. "vllm", "openai").
// Default: DefaultProviderName. Empty is ignored.
func WithProviderName(name string) Option {
	return optionFunc(func(c *config) {
		if name != "" {
			c.providerName = name
		}
	})
}

// WithMaxChunks bounds the chunk times kept per request. Default:
// DefaultMaxChunks. Values < 1 are ignored.
func WithMaxChunks(n int) Option {
	return optionFunc(func(c *config) {
		if n > 0 {
			c.maxChunks = n
		}
	})
}
