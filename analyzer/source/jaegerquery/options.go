package jaegerquery

import (
	"crypto/tls"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/tokentrace/tokentrace/analyzer/source"
)

// Protocol names a Jaeger query API.
type Protocol string

// The query APIs a Client speaks. Auto (the zero value) picks one from the
// endpoint and probes the server (see New).
const (
	Auto       Protocol = ""
	GRPCv2     Protocol = "v2"          // api_v2 gRPC (jaeger-idl stubs, Jaeger model spans)
	GRPCv3     Protocol = "v3"          // api_v3 gRPC (OTLP TracesData)
	HTTPv3     Protocol = "http-v3"     // /api/v3/traces (OTLP JSON in {"result": ...})
	HTTPLegacy Protocol = "http-legacy" // /api/traces (the UI's JSON)
)

// Protocols lists the explicit protocols, for flag help.
var Protocols = []Protocol{GRPCv2, GRPCv3, HTTPv3, HTTPLegacy}

// ParseProtocol parses a protocol name as a flag gives it: "auto" (or
// ""), "v2", "v3", "http-v3", "http-legacy"; "grpc-v2", "grpc-v3",
// "api_v2", "api_v3" and "legacy" are accepted too.
func ParseProtocol(s string) (Protocol, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "", "auto":
		return Auto, nil
	case "v2", "grpc-v2", "api_v2", "api-v2":
		return GRPCv2, nil
	case "v3", "grpc-v3", "api_v3", "api-v3":
		return GRPCv3, nil
	case "http-v3", "http_v3", "httpv3":
		return HTTPv3, nil
	case "http-legacy", "http_legacy", "legacy", "http-v1", "http":
		return HTTPLegacy, nil
	}
	return "", fmt.Errorf("jaegerquery: unknown protocol %q (want auto, v2, v3, http-v3 or http-legacy)", s)
}

// String returns the protocol's flag value ("auto" for Auto).
func (p Protocol) String() string {
	if p == Auto {
		return "auto"
	}
	return string(p)
}

// describe names the protocol in errors.
func (p Protocol) describe() string {
	switch p {
	case GRPCv2:
		return "api_v2 gRPC"
	case GRPCv3:
		return "api_v3 gRPC"
	case HTTPv3:
		return "api_v3 HTTP"
	case HTTPLegacy:
		return "legacy HTTP API"
	}
	return "auto-detected protocol"
}

func (p Protocol) grpc() bool { return p == GRPCv2 || p == GRPCv3 }

// Defaults of the options.
const (
	DefaultTimeout        = 30 * time.Second
	DefaultRetries        = 3
	DefaultParallel       = 4
	DefaultMaxRecvMsgSize = 256 << 20
	// DefaultLimit is the search depth sent when Query.Limit is 0.
	DefaultLimit = 1000
	// MaxLimit bounds Query.Limit: Jaeger's memory store refuses a search
	// depth above its max_traces (100,000 in the all-in-one default).
	MaxLimit = 100000
	// DefaultLookback is the search window when Query.Start is zero.
	DefaultLookback = time.Hour
)

// An Option configures New.
type Option func(*config)

type config struct {
	protocol     Protocol
	tlsConfig    *tls.Config
	insecure     bool
	insecureSet  bool
	token        string
	timeout      time.Duration
	retries      int
	retryBackoff time.Duration
	parallel     int
	maxRecv      int
	progress     io.Writer
	skips        *source.Skips
}

// WithProtocol picks the query API instead of probing for one: GRPCv2,
// GRPCv3, HTTPv3 or HTTPLegacy (Auto probes). The endpoint's host and port
// are used whatever its scheme.
func WithProtocol(p Protocol) Option { return func(c *config) { c.protocol = p } }

// WithTLS connects with TLS using cfg (nil: the system roots). It is
// implied by the schemes grpcs:// and https://.
func WithTLS(cfg *tls.Config) Option {
	return func(c *config) {
		if cfg == nil {
			cfg = &tls.Config{MinVersion: tls.VersionTLS12}
		}
		c.tlsConfig, c.insecure, c.insecureSet = cfg, false, true
	}
}

// WithInsecure connects without TLS (the default for grpc://, http:// and
// bare host:port endpoints).
func WithInsecure() Option {
	return func(c *config) { c.tlsConfig, c.insecure, c.insecureSet = nil, true, true }
}

// WithBearerToken sends "Authorization: Bearer token" with every call: as
// gRPC per-RPC credentials and as an HTTP header. The token never appears
// in errors or logs. Without TLS it travels in clear text.
func WithBearerToken(token string) Option { return func(c *config) { c.token = token } }

// WithTimeout bounds each call to Jaeger (one search window, one trace,
// one probe), retries included. A call's answer streams through the
// visitor, so the time the visitor takes counts too: for slow visitors or
// links, raise it or lower Query.Limit. Default DefaultTimeout; ≤ 0 keeps
// it.
func WithTimeout(d time.Duration) Option {
	return func(c *config) {
		if d > 0 {
			c.timeout = d
		}
	}
}

// WithRetries sets how many times a call is retried, with exponential
// backoff, after an Unavailable status, a connection error or an HTTP 5xx.
// Other errors are not retried. Default DefaultRetries; 0 disables
// retries, < 0 keeps the default.
func WithRetries(n int) Option {
	return func(c *config) {
		if n >= 0 {
			c.retries = n
		}
	}
}

// WithParallel bounds the calls in flight at once (search windows and
// traces fetched by id). Default DefaultParallel; < 1 keeps it.
func WithParallel(n int) Option {
	return func(c *config) {
		if n >= 1 {
			c.parallel = n
		}
	}
}

// WithMaxRecvMsgSize bounds one gRPC message received (api_v3 sends a
// whole trace in one message; a span with 40,000 token events is ~7 MB).
// Default DefaultMaxRecvMsgSize; ≤ 0 keeps it. HTTP answers are decoded
// as streams and bounded per span or trace by the decoders instead.
func WithMaxRecvMsgSize(n int) Option {
	return func(c *config) {
		if n > 0 {
			c.maxRecv = n
		}
	}
}

// WithProgress shows a progress bar (traces fetched) on w when w is a
// terminal; otherwise, and by default, nothing is printed.
func WithProgress(w io.Writer) Option { return func(c *config) { c.progress = w } }

// WithSkips counts what was skipped and why (malformed replies, spans
// without ids, search windows still full at the paging bound). Pass the
// same Skips to source.Requests. Default: discarded.
func WithSkips(s *source.Skips) Option { return func(c *config) { c.skips = s } }
