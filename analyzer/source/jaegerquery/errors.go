package jaegerquery

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"syscall"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// ErrUnreachable is matched (errors.Is) by the errors of calls that could
// not reach Jaeger at all: connection refused, reset or timed out, an
// Unavailable gRPC status, a failed TLS handshake.
var ErrUnreachable = errors.New("jaeger query unreachable")

// Error is the error of a call to Jaeger. It names the endpoint (with any
// password in the URL redacted) and the protocol; it never holds the
// bearer token.
type Error struct {
	Endpoint    string   // e.g. grpc://127.0.0.1:16685
	Protocol    Protocol // the API the call used (Auto while probing)
	Op          string   // FindTraces, GetTrace <id>, probe, ...
	Unreachable bool     // the server could not be reached
	Err         error
}

func (e *Error) Error() string {
	op := e.Protocol.describe()
	if e.Op != "" {
		op += " " + e.Op
	}
	if e.Unreachable {
		return fmt.Sprintf("jaeger query at %s unreachable: %s: %v", e.Endpoint, op, e.Err)
	}
	return fmt.Sprintf("jaeger query at %s: %s: %v", e.Endpoint, op, e.Err)
}

func (e *Error) Unwrap() error { return e.Err }

// Is makes errors.Is(err, ErrUnreachable) true for unreachable servers.
func (e *Error) Is(target error) bool { return target == ErrUnreachable && e.Unreachable }

// NotFoundError reports trace ids asked for (Query.TraceIDs) that Jaeger
// does not have. The traces that were found have been visited.
type NotFoundError struct {
	Endpoint string
	Protocol Protocol
	TraceIDs []string
}

func (e *NotFoundError) Error() string {
	what := "trace " + e.TraceIDs[0]
	if len(e.TraceIDs) > 1 {
		what = "traces " + strings.Join(e.TraceIDs, ", ")
	}
	return fmt.Sprintf("jaeger query at %s: %s: %s not found", e.Endpoint, e.Protocol.describe(), what)
}

// httpStatusError is an HTTP answer that is neither success nor "not found".
type httpStatusError struct {
	Code int
	Body string // start of the body, token removed
}

func (e *httpStatusError) Error() string {
	if e.Body == "" {
		return fmt.Sprintf("HTTP %d", e.Code)
	}
	return fmt.Sprintf("HTTP %d: %s", e.Code, e.Body)
}

// unreachable reports whether err means the server was not reached.
func unreachable(err error) bool {
	if err == nil {
		return false
	}
	if s, ok := status.FromError(err); ok && s.Code() == codes.Unavailable {
		return true
	}
	var ne net.Error
	var oe *net.OpError
	switch {
	case errors.Is(err, syscall.ECONNREFUSED), errors.Is(err, syscall.ECONNRESET),
		errors.Is(err, syscall.EHOSTUNREACH), errors.Is(err, syscall.ENETUNREACH):
		return true
	case errors.As(err, &oe):
		return true
	case errors.As(err, &ne) && ne.Timeout():
		return true
	}
	var dnsErr *net.DNSError
	return errors.As(err, &dnsErr)
}

// retryable reports whether a call that failed with err may succeed when
// tried again: Unavailable, connection errors, HTTP 5xx.
func retryable(err error) bool {
	if err == nil || errors.Is(err, context.Canceled) {
		return false
	}
	var he *httpStatusError
	if errors.As(err, &he) {
		return he.Code >= 500
	}
	if s, ok := status.FromError(err); ok {
		return s.Code() == codes.Unavailable
	}
	return unreachable(err) || errors.Is(err, errTruncatedBody)
}

// errTruncatedBody is an HTTP answer whose body broke off.
var errTruncatedBody = errors.New("connection closed in the middle of the answer")

// redactedError hides a secret in an error's text.
type redactedError struct {
	err    error
	secret string
}

func (e *redactedError) Error() string {
	return strings.ReplaceAll(e.err.Error(), e.secret, "[REDACTED]")
}

func (e *redactedError) Unwrap() error { return e.err }

// redact wraps err so that its text never contains secret.
func redact(err error, secret string) error {
	if err == nil || secret == "" || !strings.Contains(err.Error(), secret) {
		return err
	}
	return &redactedError{err: err, secret: secret}
}
