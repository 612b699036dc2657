package instrument

import (
	"context"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/trace"

	"github.com/tokentrace/tokentrace/semconv"
)

// Recommended explicit bucket boundaries (seconds, or tokens for the usage)
// of the OpenTelemetry GenAI conventions, and the seed documents' llm_tpot
// buckets. They are the defaults of [MetricBuckets].
var (
	BucketsTimeToFirstToken = []float64{0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0, 7.5, 10.0}
	BucketsTimePerOutputTok = []float64{0.01, 0.025, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3, 0.4, 0.5, 0.75, 1.0, 2.5}
	BucketsOperation        = []float64{0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92}
	BucketsTokenUsage       = []float64{1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864}
	BucketsLLMTPOT          = []float64{0.01, 0.05, 0.1, 0.5, 1.0}
)

// DefaultMaxMetricValues is how many distinct values of each attribute
// that comes from requests (request and response model, prompt type, model
// version, instance) the metrics keep; later new values are recorded as
// semconv.MetricValueOther.
const DefaultMaxMetricValues = 64

// maxMetricValueLen bounds the bytes of one such value.
const maxMetricValueLen = 64

// MetricBuckets sets the explicit bucket boundaries of the histograms. A
// nil field keeps the default shown.
type MetricBuckets struct {
	TimeToFirstToken   []float64 // server TTFT: BucketsTimeToFirstToken
	TimePerOutputToken []float64 // server TPOT: BucketsTimePerOutputTok
	// Operation is for the request durations, the client time to first
	// chunk and time per output chunk, as the conventions recommend:
	// BucketsOperation.
	Operation  []float64
	TokenUsage []float64 // BucketsTokenUsage
	LLMTPOT    []float64 // llm_tpot: BucketsLLMTPOT
	InterToken []float64 // tokentrace.inter_token_latency: BucketsTimePerOutputTok
}

// metricsConfig is the metrics part of a config.
type metricsConfig struct {
	provider  metric.MeterProvider
	buckets   MetricBuckets
	maxValues int

	once sync.Once
	inst *instruments // nil when the provider gave none
}

// WithMeterProvider makes the middleware record metrics (the GenAI
// histograms, llm_tpot and the inter-token latency, see semconv/metrics.go)
// with mp, once per request when it completes, off the request path.
// Exemplars carry the request's trace: configure the SDK provider with an
// exemplar filter that keeps them (the default, trace-based, does).
// Default: no metrics. Nil is ignored.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return optionFunc(func(c *config) {
		if mp != nil {
			c.metricsCfg().provider = mp
		}
	})
}

// WithMetricBuckets sets the histograms' bucket boundaries (nil fields keep
// the defaults).
func WithMetricBuckets(b MetricBuckets) Option {
	return optionFunc(func(c *config) { c.metricsCfg().buckets = b })
}

// WithMaxMetricValues bounds the distinct values kept per request-derived
// metric attribute. Default: DefaultMaxMetricValues. Values < 1 are ignored.
func WithMaxMetricValues(n int) Option {
	return optionFunc(func(c *config) {
		if n > 0 {
			c.metricsCfg().maxValues = n
		}
	})
}

func (c *config) metricsCfg() *metricsConfig {
	if c.metrics == nil {
		c.metrics = &metricsConfig{maxValues: DefaultMaxMetricValues}
	}
	return c.metrics
}

type instruments struct {
	serverDuration, serverTTFT, serverTPOT metric.Float64Histogram
	clientDuration, clientTTFC, clientTPOC metric.Float64Histogram
	tokenUsage                             metric.Int64Histogram
	llmTPOT, itl                           metric.Float64Histogram

	model, respModel, promptType, modelVersion, instance *valueLimiter
}

func or(b, def []float64) []float64 {
	if len(b) == 0 {
		return def
	}
	return b
}

// instruments returns the instruments, made on first use; nil when metrics
// are off or the provider failed to make them.
func (m *metricsConfig) instruments() *instruments {
	if m == nil || m.provider == nil {
		return nil
	}
	m.once.Do(func() {
		meter := m.provider.Meter(ScopeName, metric.WithInstrumentationVersion(Version))
		b := m.buckets
		var errs []error
		f := func(name, unit, desc string, bounds []float64) metric.Float64Histogram {
			h, err := meter.Float64Histogram(name, metric.WithUnit(unit), metric.WithDescription(desc),
				metric.WithExplicitBucketBoundaries(bounds...))
			errs = append(errs, err)
			return h
		}
		in := &instruments{
			serverDuration: f(semconv.MetricServerRequestDuration, "s", "Time from the request's arrival to its last byte.", or(b.Operation, BucketsOperation)),
			serverTTFT:     f(semconv.MetricServerTimeToFirstToken, "s", "Time to the first output token.", or(b.TimeToFirstToken, BucketsTimeToFirstToken)),
			serverTPOT:     f(semconv.MetricServerTimePerOutputTok, "s", "Mean time per output token after the first, per request.", or(b.TimePerOutputToken, BucketsTimePerOutputTok)),
			clientDuration: f(semconv.MetricClientOperationDuration, "s", "GenAI operation duration.", or(b.Operation, BucketsOperation)),
			clientTTFC:     f(semconv.MetricClientTimeToFirstChunk, "s", "Time to the first output chunk.", or(b.Operation, BucketsOperation)),
			clientTPOC:     f(semconv.MetricClientTimePerOutputChnk, "s", "Time between consecutive output chunks.", or(b.Operation, BucketsOperation)),
			llmTPOT:        f(semconv.MetricLLMTPOT, "", "Mean time per output token after the first, per request, in seconds per token.", or(b.LLMTPOT, BucketsLLMTPOT)),
			itl:            f(semconv.MetricInterTokenLatency, "s", "Every gap between consecutive token-bearing chunks of a stream.", or(b.InterToken, BucketsTimePerOutputTok)),
		}
		var err error
		in.tokenUsage, err = meter.Int64Histogram(semconv.MetricClientTokenUsage, metric.WithUnit("{token}"),
			metric.WithDescription("Tokens used per request."), metric.WithExplicitBucketBoundaries(or(b.TokenUsage, BucketsTokenUsage)...))
		errs = append(errs, err)
		for _, err := range errs {
			if err != nil {
				return // a provider that cannot make them: no metrics
			}
		}
		n := m.maxValues
		in.model, in.respModel, in.promptType, in.modelVersion, in.instance =
			newValueLimiter(n), newValueLimiter(n), newValueLimiter(n), newValueLimiter(n), newValueLimiter(n)
		m.inst = in
	})
	return m.inst
}

// recordMetrics records the request's metrics. It runs once per request,
// in complete (in the background finisher), before the offsets are
// recycled, and only reads what the request state already holds.
func (st *reqState) recordMetrics(end time.Time, ctxErr error) {
	in := st.cfg.metrics.instruments()
	if in == nil {
		return
	}
	// Exemplars come from the context's span: the request's, sampled or not.
	ctx := trace.ContextWithSpanContext(context.Background(), st.spanCtx)
	outcome := st.outcome(ctxErr)
	tokens := st.tokens
	if st.usage && st.outputTokens > 0 {
		tokens = st.outputTokens
	}
	model := in.model.value(st.info.Model)
	promptType := in.promptType.value(st.class.PromptType)
	modelVersion := in.modelVersion.value(st.class.ModelVersion)

	var arr [12]attribute.KeyValue
	a := append(arr[:0],
		semconv.GenAIOperationName.String(st.info.Operation),
		semconv.GenAIProviderName.String(st.cfg.providerName))
	if model != "" {
		a = append(a, semconv.GenAIRequestModel.String(model))
	}
	if st.respModel != "" {
		a = append(a, semconv.GenAIResponseModel.String(in.respModel.value(st.respModel)))
	}
	if st.admitted {
		host, port, err := net.SplitHostPort(st.instance)
		if err != nil {
			host = st.instance
		}
		a = append(a, semconv.ServerAddress.String(in.instance.value(host)))
		if p, err := strconv.Atoi(port); err == nil {
			a = append(a, semconv.ServerPort.Int(p))
		}
	}
	if et := metricErrorType(st, outcome); et != "" {
		a = append(a, semconv.ErrorType.String(et))
	}
	// The user's classification, named as the seed documents name it.
	var cls [3]attribute.KeyValue
	c := cls[:0]
	if modelVersion != "" {
		c = append(c, semconv.MetricModelVersion.String(modelVersion))
	}
	if promptType != "" {
		c = append(c, semconv.MetricPromptType.String(promptType))
	}
	a = append(a, c...)
	genai := metric.WithAttributeSet(attribute.NewSet(a...))
	seed := metric.WithAttributeSet(attribute.NewSet(c...))

	server := st.kind != trace.SpanKindClient
	dur := end.Sub(st.start).Seconds()
	if server {
		in.serverDuration.Record(ctx, dur, genai)
	} else {
		in.clientDuration.Record(ctx, dur, genai)
	}
	if st.usage {
		in.tokenUsage.Record(ctx, int64(st.promptTokens), metric.WithAttributeSet(attribute.NewSet(append(a, semconv.GenAITokenType.String(semconv.TokenTypeInput))...)))
	}
	if st.sse || st.usage {
		in.tokenUsage.Record(ctx, int64(tokens), metric.WithAttributeSet(attribute.NewSet(append(a, semconv.GenAITokenType.String(semconv.TokenTypeOutput))...)))
	}
	if st.chunks == 0 {
		return
	}
	if server {
		in.serverTTFT.Record(ctx, st.first.Seconds(), genai)
	} else {
		in.clientTTFC.Record(ctx, st.first.Seconds(), genai)
	}
	if tokens > 1 {
		tpot := (st.last - st.first).Seconds() / float64(tokens-1)
		if server {
			in.serverTPOT.Record(ctx, tpot, genai)
		}
		in.llmTPOT.Record(ctx, tpot, seed)
	}
	// Every gap between timed chunks: one Record each, here in the
	// background, never on the request path.
	offs := *st.offsets
	if len(offs) < 2 {
		return
	}
	itlAttrs := c
	if st.admitted {
		itlAttrs = append(itlAttrs, semconv.Instance.String(in.instance.value(st.instance)))
	}
	opts := []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(itlAttrs...))}
	// Only the longest gap offers an exemplar (the request's trace): it is
	// the one worth following, and a context without a span skips the
	// SDK's exemplar work for the others (most of a Record's cost).
	worst := 1
	for i := 2; i < len(offs); i++ {
		if offs[i]-offs[i-1] > offs[worst]-offs[worst-1] {
			worst = i
		}
	}
	bg := context.Background()
	for i := 1; i < len(offs); i++ {
		gap := (offs[i] - offs[i-1]).Seconds()
		c := bg
		if i == worst {
			c = ctx
		}
		in.itl.Record(c, gap, opts...)
		if !server {
			in.clientTPOC.Record(c, gap, genai)
		}
	}
}

// metricErrorType is error.type for a request that failed, "" otherwise.
func metricErrorType(st *reqState, outcome string) string {
	switch outcome {
	case semconv.OutcomeUpstreamError:
		switch {
		case st.failure != "":
			return st.failure
		case st.status >= 400:
			return strconv.Itoa(st.status)
		}
		return "upstream_error"
	case semconv.OutcomeClientDisconnect:
		return "client_disconnect"
	case semconv.OutcomeTruncated:
		return "stream_truncated"
	}
	return ""
}

// valueLimiter bounds the distinct values of one metric attribute that
// comes from requests: values are normalised (valid UTF-8, no control
// characters, at most maxMetricValueLen bytes, trimmed), the first max
// distinct ones are kept and later new ones become MetricValueOther.
type valueLimiter struct {
	mu   sync.RWMutex
	seen map[string]string
	max  int
}

func newValueLimiter(n int) *valueLimiter {
	return &valueLimiter{seen: make(map[string]string), max: n}
}

func (l *valueLimiter) value(v string) string {
	if v == "" {
		return ""
	}
	l.mu.RLock()
	got, ok := l.seen[v]
	l.mu.RUnlock()
	if ok {
		return got
	}
	n := normaliseValue(v)
	l.mu.Lock()
	defer l.mu.Unlock()
	if got, ok := l.seen[v]; ok {
		return got
	}
	if len(l.seen) >= l.max {
		return semconv.MetricValueOther
	}
	// Raw values that normalise alike share one entry per raw spelling,
	// all counted against max: the map stays bounded either way.
	l.seen[v] = n
	return n
}

func normaliseValue(v string) string {
	v = strings.TrimSpace(v)
	var b strings.Builder
	for _, r := range v {
		if b.Len() >= maxMetricValueLen {
			break
		}
		switch {
		case r == utf8.RuneError, r < 0x20, r == 0x7f:
			b.WriteByte('_')
		default:
			if b.Len()+utf8.RuneLen(r) > maxMetricValueLen {
				return b.String()
			}
			b.WriteRune(r)
		}
	}
	if b.Len() == 0 {
		return "_"
	}
	return b.String()
}
