package instrument

import (
	"context"
	"errors"
	"net"
	"os"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracegrpc"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
)

// Defaults of NewTracerProvider, chosen to fit a stock Jaeger v2.
const (
	// DefaultOTLPEndpoint is where spans go: a local Jaeger's OTLP gRPC
	// receiver.
	DefaultOTLPEndpoint = "localhost:4317"
	// DefaultEventCountLimit keeps the newest 2,048 events of a span (the
	// SDK's own default is 128). Elasticsearch/OpenSearch reject documents
	// with more than 10,000 nested objects and a token event is one log
	// plus three fields; Badger fails on very large spans. The compact
	// token times keep every token regardless.
	DefaultEventCountLimit = 2048
	// DefaultMaxExportBatchSize keeps one OTLP export request under the
	// 4 MiB a stock Jaeger OTLP gRPC receiver accepts: a span with 2,048
	// token events is about 150 KB on the wire.
	DefaultMaxExportBatchSize = 16
	// DefaultBatchTimeout is how long spans wait to be sent: short, so a
	// slow request can be opened in Jaeger seconds after it ended.
	DefaultBatchTimeout = time.Second
	// DefaultMaxExportRequestSize is the largest OTLP request sent; larger
	// batches are refused by the exporter rather than by Jaeger.
	DefaultMaxExportRequestSize = 4 << 20
)

// ProviderOption configures NewTracerProvider.
type ProviderOption interface{ applyProvider(*providerConfig) }

type providerOptionFunc func(*providerConfig)

func (f providerOptionFunc) applyProvider(c *providerConfig) { f(c) }

type providerConfig struct {
	endpoint     string
	insecure     bool
	serviceName  string
	eventLimit   int
	batchSize    int
	batchTimeout time.Duration
	exportTO     time.Duration
	exporter     sdktrace.SpanExporter
	attrs        []attribute.KeyValue
}

// WithEndpoint sets the OTLP gRPC endpoint (host:port). Default:
// OTEL_EXPORTER_OTLP_ENDPOINT if set, else DefaultOTLPEndpoint.
func WithEndpoint(hostport string) ProviderOption {
	return providerOptionFunc(func(c *providerConfig) { c.endpoint = hostport })
}

// WithInsecure sends spans without TLS (a local Jaeger or collector).
// Default: TLS, except toward a loopback endpoint or the default one.
func WithInsecure() ProviderOption {
	return providerOptionFunc(func(c *providerConfig) { c.insecure = true })
}

// WithServiceName sets the service.name resource attribute. Default:
// OTEL_SERVICE_NAME, else the SDK's default ("unknown_service:<binary>").
func WithServiceName(name string) ProviderOption {
	return providerOptionFunc(func(c *providerConfig) { c.serviceName = name })
}

// WithEventCountLimit sets how many events a span keeps (the newest win).
// Default: DefaultEventCountLimit. Values < 1 are ignored.
func WithEventCountLimit(n int) ProviderOption {
	return providerOptionFunc(func(c *providerConfig) {
		if n > 0 {
			c.eventLimit = n
		}
	})
}

// WithBatching sets the export batch size and timeout. Default:
// DefaultMaxExportBatchSize and DefaultBatchTimeout. Zero values keep the
// defaults.
func WithBatching(maxSpans int, timeout time.Duration) ProviderOption {
	return providerOptionFunc(func(c *providerConfig) {
		if maxSpans > 0 {
			c.batchSize = maxSpans
		}
		if timeout > 0 {
			c.batchTimeout = timeout
		}
	})
}

// WithExportTimeout bounds how long one export of a batch may take,
// retries included; past it the batch is dropped. It also bounds how long
// an export in flight outlives a Shutdown whose context expired. Default:
// OTEL_EXPORTER_OTLP_TRACES_TIMEOUT (or OTEL_EXPORTER_OTLP_TIMEOUT) if set,
// else the exporter's 10 s. It applies to the OTLP gRPC exporter
// (otlptracegrpc.WithTimeout) and to the batch processor's call of any
// exporter (sdktrace.WithExportTimeout). Values <= 0 are ignored.
func WithExportTimeout(d time.Duration) ProviderOption {
	return providerOptionFunc(func(c *providerConfig) {
		if d > 0 {
			c.exportTO = d
		}
	})
}

// WithExporter replaces the OTLP gRPC exporter (e.g. with an in-memory
// exporter in tests, or OTLP/HTTP). Endpoint options are then unused.
func WithExporter(e sdktrace.SpanExporter) ProviderOption {
	return providerOptionFunc(func(c *providerConfig) { c.exporter = e })
}

// WithResourceAttributes adds attributes to the resource (e.g.
// deployment.environment).
func WithResourceAttributes(attrs ...attribute.KeyValue) ProviderOption {
	return providerOptionFunc(func(c *providerConfig) { c.attrs = append(c.attrs, attrs...) })
}

// TracerProvider is an SDK TracerProvider whose ForceFlush and Shutdown
// first wait for the middleware to finish writing the spans of requests
// that already ended.
type TracerProvider struct {
	*sdktrace.TracerProvider
}

// ForceFlush waits for pending request spans ([Flush]) and exports them.
func (tp *TracerProvider) ForceFlush(ctx context.Context) error {
	return errors.Join(Flush(ctx), tp.TracerProvider.ForceFlush(ctx))
}

// Shutdown waits for pending request spans, exports them and stops the
// provider. Call it on graceful shutdown, after the HTTP server stopped.
func (tp *TracerProvider) Shutdown(ctx context.Context) error {
	return errors.Join(Flush(ctx), tp.TracerProvider.Shutdown(ctx))
}

// NewTracerProvider builds a TracerProvider that exports over OTLP gRPC
// with limits that keep per-token spans whole on their way to Jaeger: a
// span event limit of DefaultEventCountLimit, export batches small enough
// for a stock Jaeger receiver, and a short batch timeout. It does not set
// the global provider.
//
// The exporter connects lazily: an unreachable endpoint does not fail
// here; spans are then dropped by the batch processor after its retries,
// and requests are never delayed.
func NewTracerProvider(ctx context.Context, opts ...ProviderOption) (*TracerProvider, error) {
	c := providerConfig{
		eventLimit:   DefaultEventCountLimit,
		batchSize:    DefaultMaxExportBatchSize,
		batchTimeout: DefaultBatchTimeout,
	}
	for _, o := range opts {
		if o != nil {
			o.applyProvider(&c)
		}
	}
	exp := c.exporter
	if exp == nil {
		eo := []otlptracegrpc.Option{otlptracegrpc.WithMaxRequestSize(DefaultMaxExportRequestSize)}
		if c.endpoint != "" {
			eo = append(eo, otlptracegrpc.WithEndpoint(c.endpoint))
		}
		if c.exportTO > 0 {
			eo = append(eo, otlptracegrpc.WithTimeout(c.exportTO))
		}
		if c.insecure || isLoopback(c.endpoint) || (c.endpoint == "" && os.Getenv("OTEL_EXPORTER_OTLP_ENDPOINT") == "" && os.Getenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT") == "") {
			eo = append(eo, otlptracegrpc.WithInsecure())
		}
		var err error
		if exp, err = otlptracegrpc.New(ctx, eo...); err != nil {
			return nil, err
		}
	}
	attrs := c.attrs
	if c.serviceName != "" {
		attrs = append(attrs, attribute.String("service.name", c.serviceName))
	}
	res, err := resource.Merge(resource.Default(), resource.NewSchemaless(attrs...))
	if err != nil {
		return nil, err
	}
	limits := sdktrace.NewSpanLimits()
	limits.EventCountLimit = c.eventLimit
	bo := []sdktrace.BatchSpanProcessorOption{
		sdktrace.WithMaxExportBatchSize(c.batchSize),
		sdktrace.WithBatchTimeout(c.batchTimeout),
	}
	if c.exportTO > 0 {
		bo = append(bo, sdktrace.WithExportTimeout(c.exportTO))
	}
	tp := sdktrace.NewTracerProvider(
		sdktrace.WithResource(res),
		sdktrace.WithRawSpanLimits(limits),
		sdktrace.WithBatcher(exp, bo...),
	)
	return &TracerProvider{tp}, nil
}

// isLoopback reports whether hostport names this machine.
func isLoopback(hostport string) bool {
	host, _, err := net.SplitHostPort(hostport)
	if err != nil {
		return false
	}
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}
