package jaegerquery

import (
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/jaegertracing/jaeger-idl/proto-gen/api_v2"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"
	"google.golang.org/grpc/status"
)

// Default ports of Jaeger's query service, used when an endpoint has none.
const (
	DefaultGRPCPort = "16685"
	DefaultHTTPPort = "16686"
)

// Client queries one Jaeger. It is safe for concurrent use; Close it when
// done.
type Client struct {
	cfg      config
	endpoint string   // for errors: scheme://host:port[/path], password redacted
	proto    Protocol // as asked (Auto: resolved on first use)

	conn  *grpc.ClientConn // gRPC protocols
	httpc *http.Client     // HTTP protocols
	base  *url.URL

	mu sync.Mutex
	be backend // the resolved protocol

	finds atomic.Int64 // FindTraces calls made (tests look)
}

// New returns a Client for the Jaeger query service at endpoint. It does
// not connect: the first query does (and, with Auto, probes the API).
//
//   - "grpc://host:16685", "host:16685" or "host" (port 16685): gRPC,
//     api_v3 when served, else api_v2 (when api_v3 answers Unimplemented);
//   - "grpcs://host:16685": the same over TLS;
//   - "http://host:16686[/base-path]": HTTP, /api/v3/traces when served,
//     else the legacy /api/traces (when /api/v3 answers 404);
//   - "https://...": the same over TLS.
//
// WithProtocol overrides the choice; the endpoint's host and port are then
// used whatever its scheme. Connections are plain text unless the scheme
// says TLS or WithTLS is given.
func New(endpoint string, opts ...Option) (*Client, error) {
	cfg := config{
		timeout:      DefaultTimeout,
		retries:      DefaultRetries,
		retryBackoff: 100 * time.Millisecond,
		parallel:     DefaultParallel,
		maxRecv:      DefaultMaxRecvMsgSize,
	}
	for _, o := range opts {
		if o != nil {
			o(&cfg)
		}
	}
	switch cfg.protocol {
	case Auto, GRPCv2, GRPCv3, HTTPv3, HTTPLegacy:
	default:
		return nil, fmt.Errorf("jaegerquery: unknown protocol %q", cfg.protocol)
	}
	ep, err := parseEndpoint(endpoint)
	if err != nil {
		return nil, err
	}
	c := &Client{cfg: cfg, proto: cfg.protocol}
	if c.proto == Auto {
		if ep.http {
			c.proto = auto(true)
		} else {
			c.proto = auto(false)
		}
	}
	useTLS := ep.tls
	if cfg.insecureSet {
		useTLS = !cfg.insecure
	}
	tlsCfg := cfg.tlsConfig
	if useTLS && tlsCfg == nil {
		tlsCfg = &tls.Config{MinVersion: tls.VersionTLS12}
	}
	if c.isGRPC() {
		if ep.path != "" && ep.path != "/" {
			return nil, fmt.Errorf("jaegerquery: endpoint %q: a gRPC endpoint has no path", endpoint)
		}
		scheme := "grpc"
		if useTLS {
			scheme = "grpcs"
		}
		hostport := withPort(ep.hostport, DefaultGRPCPort)
		c.endpoint = scheme + "://" + hostport
		if err := c.dialGRPC(hostport, tlsCfg); err != nil {
			return nil, fmt.Errorf("jaegerquery: %s: %w", c.endpoint, err)
		}
	} else {
		scheme := "http"
		if useTLS {
			scheme = "https"
		}
		hostport := ep.hostport
		if !ep.http {
			hostport = withPort(hostport, DefaultHTTPPort)
		}
		c.base = &url.URL{Scheme: scheme, Host: hostport, Path: strings.TrimSuffix(ep.path, "/"), User: ep.user}
		c.endpoint = c.base.Redacted()
		tr := http.DefaultTransport.(*http.Transport).Clone()
		tr.TLSClientConfig = tlsCfg
		tr.MaxIdleConnsPerHost = cfg.parallel + 1
		c.httpc = &http.Client{Transport: tr}
	}
	switch cfg.protocol {
	case GRPCv2:
		c.be = &grpcV2{client: api_v2.NewQueryServiceClient(c.conn)}
	case GRPCv3:
		c.be = &grpcV3{conn: c.conn}
	case HTTPv3, HTTPLegacy:
		c.be = &httpBackend{client: c.httpc, base: c.base, token: cfg.token, legacy: cfg.protocol == HTTPLegacy}
	}
	return c, nil
}

// autoGRPC and autoHTTP are the not-yet-resolved protocols of Auto.
const (
	autoGRPC Protocol = "auto-grpc"
	autoHTTP Protocol = "auto-http"
)

func auto(http bool) Protocol {
	if http {
		return autoHTTP
	}
	return autoGRPC
}

func (c *Client) isGRPC() bool { return c.proto.grpc() || c.proto == autoGRPC }

type endpoint struct {
	hostport, path string
	http, tls      bool
	user           *url.Userinfo
}

func parseEndpoint(s string) (endpoint, error) {
	s = strings.TrimSpace(s)
	if s == "" {
		return endpoint{}, errors.New("jaegerquery: empty endpoint")
	}
	if !strings.Contains(s, "://") {
		if strings.ContainsAny(s, "/?#@") {
			return endpoint{}, fmt.Errorf("jaegerquery: endpoint %q: want host:port or a URL", s)
		}
		return endpoint{hostport: s}, nil
	}
	u, err := url.Parse(s)
	if err != nil {
		return endpoint{}, fmt.Errorf("jaegerquery: endpoint: %w", err)
	}
	ep := endpoint{hostport: u.Host, path: u.Path, user: u.User}
	switch strings.ToLower(u.Scheme) {
	case "grpc":
	case "grpcs":
		ep.tls = true
	case "http":
		ep.http = true
	case "https":
		ep.http, ep.tls = true, true
	default:
		return endpoint{}, fmt.Errorf("jaegerquery: endpoint %q: unknown scheme %q (want grpc, grpcs, http or https)", u.Redacted(), u.Scheme)
	}
	if u.Host == "" {
		return endpoint{}, fmt.Errorf("jaegerquery: endpoint %q has no host", u.Redacted())
	}
	if u.RawQuery != "" || u.Fragment != "" {
		return endpoint{}, fmt.Errorf("jaegerquery: endpoint %q: no query or fragment expected", u.Redacted())
	}
	return ep, nil
}

// withPort adds port to a host without one.
func withPort(hostport, port string) string {
	if _, _, err := net.SplitHostPort(hostport); err == nil {
		return hostport
	}
	h := strings.TrimSuffix(strings.TrimPrefix(hostport, "["), "]")
	return net.JoinHostPort(h, port)
}

// bearer is the per-RPC credentials of WithBearerToken.
type bearer struct {
	token  string
	secure bool
}

func (b bearer) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + b.token}, nil
}

func (b bearer) RequireTransportSecurity() bool { return b.secure }

func (c *Client) dialGRPC(hostport string, tlsCfg *tls.Config) error {
	opts := []grpc.DialOption{
		grpc.WithDefaultCallOptions(grpc.ForceCodec(codec{}), grpc.MaxCallRecvMsgSize(c.cfg.maxRecv)),
		// Retries are ours (WithRetries), with our backoff.
		grpc.WithDisableRetry(),
	}
	if tlsCfg != nil {
		opts = append(opts, grpc.WithTransportCredentials(credentials.NewTLS(tlsCfg)))
	} else {
		opts = append(opts, grpc.WithTransportCredentials(insecure.NewCredentials()))
	}
	if c.cfg.token != "" {
		opts = append(opts, grpc.WithPerRPCCredentials(bearer{token: c.cfg.token, secure: tlsCfg != nil}))
	}
	conn, err := grpc.NewClient("passthrough:///"+hostport, opts...)
	if err != nil {
		return err
	}
	c.conn = conn
	return nil
}

// Close releases the connection.
func (c *Client) Close() error {
	if c.conn != nil {
		return c.conn.Close()
	}
	if c.httpc != nil {
		c.httpc.CloseIdleConnections()
	}
	return nil
}

// Endpoint returns the endpoint as errors name it (e.g.
// grpc://127.0.0.1:16685), any password redacted.
func (c *Client) Endpoint() string { return c.endpoint }

// Protocol returns the query API in use, probing the server first when
// the protocol is Auto and not yet known.
func (c *Client) Protocol(ctx context.Context) (Protocol, error) {
	be, err := c.backend(ctx)
	if err != nil {
		return Auto, err
	}
	return be.protocol(), nil
}

// Services lists the services Jaeger knows, sorted.
func (c *Client) Services(ctx context.Context) ([]string, error) {
	be, err := c.backend(ctx)
	if err != nil {
		return nil, err
	}
	var names []string
	err = c.call(ctx, be.protocol(), "GetServices", func(ctx context.Context) error {
		var err error
		names, err = be.services(ctx)
		return err
	})
	return names, err
}

// backend returns the protocol's backend, probing for it under Auto. A
// failed probe is not remembered, so a later call tries again.
func (c *Client) backend(ctx context.Context) (backend, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.be != nil {
		return c.be, nil
	}
	if c.proto == autoGRPC {
		v3 := &grpcV3{conn: c.conn}
		err := c.call(ctx, GRPCv3, "probe (GetServices)", v3.probe)
		if err == nil {
			c.be = v3
			return v3, nil
		}
		if status.Code(err) != codes.Unimplemented {
			return nil, err
		}
		v2 := &grpcV2{client: api_v2.NewQueryServiceClient(c.conn)}
		if err := c.call(ctx, GRPCv2, "probe (GetServices; api_v3 is not served)", v2.probe); err != nil {
			return nil, err
		}
		c.be = v2
		return v2, nil
	}
	v3 := &httpBackend{client: c.httpc, base: c.base, token: c.cfg.token}
	err := c.call(ctx, HTTPv3, "probe (GET /api/v3/services)", v3.probe)
	if err == nil {
		c.be = v3
		return v3, nil
	}
	var no errNoV3
	if !errors.As(err, &no) {
		return nil, err
	}
	legacy := &httpBackend{client: c.httpc, base: c.base, token: c.cfg.token, legacy: true}
	if err := c.call(ctx, HTTPLegacy, "probe (GET /api/services; /api/v3 is not served)", legacy.probe); err != nil {
		return nil, err
	}
	c.be = legacy
	return legacy, nil
}

// call runs f with the per-call timeout, retrying it after errors that
// may pass (Unavailable, connection errors, HTTP 5xx) with exponential
// backoff, and wraps its final error in an *Error.
func (c *Client) call(ctx context.Context, p Protocol, op string, f func(context.Context) error) error {
	cctx, cancel := context.WithTimeout(ctx, c.cfg.timeout)
	defer cancel()
	backoff := c.cfg.retryBackoff
	for attempt := 0; ; attempt++ {
		err := f(cctx)
		if err == nil {
			return nil
		}
		var ve visitError
		if errors.As(err, &ve) {
			return ve.err // the visitor's own error, as is
		}
		if ctx.Err() != nil {
			// The caller gave up (or another part of the query failed).
			return context.Cause(ctx)
		}
		if cctx.Err() != nil {
			return c.wrap(p, op, fmt.Errorf("no complete answer within %v (WithTimeout): %w", c.cfg.timeout, err))
		}
		if attempt >= c.cfg.retries || !retryable(err) {
			if attempt > 0 {
				err = fmt.Errorf("%w (after %d attempts)", err, attempt+1)
			}
			return c.wrap(p, op, err)
		}
		t := time.NewTimer(backoff)
		select {
		case <-t.C:
		case <-cctx.Done():
			t.Stop()
			if ctx.Err() != nil {
				return context.Cause(ctx)
			}
			return c.wrap(p, op, fmt.Errorf("no answer within %v (WithTimeout): %w", c.cfg.timeout, err))
		}
		backoff *= 2
	}
}

func (c *Client) wrap(p Protocol, op string, err error) error {
	return &Error{Endpoint: c.endpoint, Protocol: p, Op: op, Unreachable: unreachable(err), Err: redact(err, c.cfg.token)}
}

// visitError carries a visitor's error through a backend unchanged.
type visitError struct{ err error }

func (e visitError) Error() string { return e.err.Error() }
func (e visitError) Unwrap() error { return e.err }
