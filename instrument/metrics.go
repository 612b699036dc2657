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
	provider   metric.MeterProvider
	tokenHists *TokenHistograms
	buckets    MetricBuckets
	maxValues  int

	once sync.Once
	rec  *recorders // nil when there is nothing to record into
}

// recorders are what a request's metrics are recorded into: the SDK
// instruments (nil without a provider, or when it failed to make them),
// the per-gap histograms of a TokenHistograms (nil without one), and the
// limiters of the request-derived attribute values.
type recorders struct {
	inst                         *instruments
	itl, clientTPOC              *gapHistogram
	model, respModel, promptType *valueLimiter
	modelVersion, instance       *valueLimiter
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
}

func or(b, def []float64) []float64 {
	if len(b) == 0 {
		return def
	}
	return b
}

// Descriptions of the per-gap histograms, shared by both ways of recording
// them.
const (
	descITL        = "Every gap between consecutive token-bearing chunks of a stream."
	descClientTPOC = "Time between consecutive output chunks."
)

// recorders returns the recorders, made on first use; nil when metrics are
// off.
func (m *metricsConfig) recorders() *recorders {
	if m == nil || (m.provider == nil && m.tokenHists == nil) {
		return nil
	}
	m.once.Do(func() {
		r := &recorders{}
		b := m.buckets
		if m.provider != nil {
			r.inst = m.instruments()
		}
		if th := m.tokenHists; th != nil {
			r.itl = th.histogram(semconv.MetricInterTokenLatency, "s", descITL, or(b.InterToken, BucketsTimePerOutputTok))
			r.clientTPOC = th.histogram(semconv.MetricClientTimePerOutputChnk, "s", descClientTPOC, or(b.Operation, BucketsOperation))
		}
		if r.inst == nil && r.itl == nil {
			return // a provider that cannot make instruments, and nothing else
		}
		n := m.maxValues
		r.model, r.respModel, r.promptType, r.modelVersion, r.instance =
			newValueLimiter(n), newValueLimiter(n), newValueLimiter(n), newValueLimiter(n), newValueLimiter(n)
		m.rec = r
	})
	return m.rec
}

// instruments makes the SDK instruments; nil when the provider failed to.
func (m *metricsConfig) instruments() *instruments {
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
		llmTPOT:        f(semconv.MetricLLMTPOT, "", "Mean time per output token after the first, per request, in seconds per token.", or(b.LLMTPOT, BucketsLLMTPOT)),
	}
	if m.tokenHists == nil {
		in.clientTPOC = f(semconv.MetricClientTimePerOutputChnk, "s", descClientTPOC, or(b.Operation, BucketsOperation))
		in.itl = f(semconv.MetricInterTokenLatency, "s", descITL, or(b.InterToken, BucketsTimePerOutputTok))
	}
	var err error
	in.tokenUsage, err = meter.Int64Histogram(semconv.MetricClientTokenUsage, metric.WithUnit("{token}"),
		metric.WithDescription("Tokens used per request."), metric.WithExplicitBucketBoundaries(or(b.TokenUsage, BucketsTokenUsage)...))
	errs = append(errs, err)
	for _, err := range errs {
		if err != nil {
			return nil // a provider that cannot make them: no SDK metrics
		}
	}
	return in
}

// recordMetrics records the request's metrics. It runs once per request,
// in complete (in the background finisher), before the offsets are
// recycled, and only reads what the request state already holds.
func (st *reqState) recordMetrics(end time.Time, ctxErr error) {
	r := st.cfg.metrics.recorders()
	if r == nil {
		return
	}
	// Exemplars come from the context's span: the request's, sampled or not.
	ctx := trace.ContextWithSpanContext(context.Background(), st.spanCtx)
	outcome := st.outcome(ctxErr)
	tokens := st.tokens
	if st.usage && st.outputTokens > 0 {
		tokens = st.outputTokens
	}
	model := r.model.value(st.info.Model)
	promptType := r.promptType.value(st.class.PromptType)
	modelVersion := r.modelVersion.value(st.class.ModelVersion)

	var arr [12]attribute.KeyValue
	a := append(arr[:0],
		semconv.GenAIOperationName.String(st.info.Operation),
		semconv.GenAIProviderName.String(st.cfg.providerName))
	if model != "" {
		a = append(a, semconv.GenAIRequestModel.String(model))
	}
	if st.respModel != "" {
		a = append(a, semconv.GenAIResponseModel.String(r.respModel.value(st.respModel)))
	}
	if st.admitted {
		host, port, err := net.SplitHostPort(st.instance)
		if err != nil {
			host = st.instance
		}
		a = append(a, semconv.ServerAddress.String(r.instance.value(host)))
		if p, err := strconv.Atoi(port); err == nil {
			a = append(a, semconv.ServerPort.Int(p))
		}
	}
	if et := metricErrorType(st, outcome); et != "" {
		a = append(a, semconv.ErrorType.String(et))
	}
	// The user's classification, named as the seed documents name it.
	var cls [4]attribute.KeyValue
	c := cls[:0]
	if modelVersion != "" {
		c = append(c, semconv.MetricModelVersion.String(modelVersion))
	}
	if promptType != "" {
		c = append(c, semconv.MetricPromptType.String(promptType))
	}
	a = append(a, c...)
	genai := attribute.NewSet(a...)
	server := st.kind != trace.SpanKindClient

	if in := r.inst; in != nil {
		genaiOpt := metric.WithAttributeSet(genai)
		dur := end.Sub(st.start).Seconds()
		if server {
			in.serverDuration.Record(ctx, dur, genaiOpt)
		} else {
			in.clientDuration.Record(ctx, dur, genaiOpt)
		}
		if st.usage {
			in.tokenUsage.Record(ctx, int64(st.promptTokens), metric.WithAttributeSet(attribute.NewSet(append(a, semconv.GenAITokenType.String(semconv.TokenTypeInput))...)))
		}
		if st.sse || st.usage {
			in.tokenUsage.Record(ctx, int64(tokens), metric.WithAttributeSet(attribute.NewSet(append(a, semconv.GenAITokenType.String(semconv.TokenTypeOutput))...)))
		}
		if st.chunks > 0 {
			if server {
				in.serverTTFT.Record(ctx, st.first.Seconds(), genaiOpt)
			} else {
				in.clientTTFC.Record(ctx, st.first.Seconds(), genaiOpt)
			}
			if tokens > 1 {
				tpot := (st.last - st.first).Seconds() / float64(tokens-1)
				if server {
					in.serverTPOT.Record(ctx, tpot, genaiOpt)
				}
				in.llmTPOT.Record(ctx, tpot, metric.WithAttributeSet(attribute.NewSet(c...)))
			}
		}
	}

	// Every gap between timed chunks.
	offs := *st.offsets
	if st.chunks == 0 || len(offs) < 2 {
		return
	}
	if st.admitted {
		c = append(c, semconv.Instance.String(r.instance.value(st.instance)))
	}
	itlAttrs := attribute.NewSet(c...)
	if r.itl != nil {
		// Counted locally, merged once: a bucket lookup per gap.
		b := r.itl.count(offs)
		worstAt := st.start.Add(offs[b.worstIndex])
		r.itl.record(itlAttrs, b, st.spanCtx, worstAt)
		r.itl.putBatch(b)
		if !server {
			b := r.clientTPOC.count(offs)
			r.clientTPOC.record(genai, b, st.spanCtx, worstAt)
			r.clientTPOC.putBatch(b)
		}
		return
	}
	in := r.inst
	if in == nil || in.itl == nil {
		return
	}
	// Through the SDK: one Record per gap, here in the background, never on
	// the request path. Only the longest gap offers an exemplar (the
	// request's trace): it is the one worth following, and a context
	// without a span skips the SDK's exemplar work for the others.
	// Option slices made once: a variadic argument built per call escapes.
	itlOpts := []metric.RecordOption{metric.WithAttributeSet(itlAttrs)}
	genaiOpts := []metric.RecordOption{metric.WithAttributeSet(genai)}
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
		in.itl.Record(c, gap, itlOpts...)
		if !server {
			in.clientTPOC.Record(c, gap, genaiOpts...)
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
