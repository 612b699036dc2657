// Package jaegerquery reads traces from a running Jaeger through its query
// APIs and yields them as a source.Source of model.Spans, for the
// analyzer to turn into requests (source.Requests).
//
//	c, err := jaegerquery.New("grpc://jaeger:16685")
//	...
//	defer c.Close()
//	skips := &source.Skips{} // or WithSkips(skips) on New to count malformed replies
//	src := c.Source(jaegerquery.Query{
//		Service:    "llm-gateway",
//		Start:      time.Now().Add(-15 * time.Minute),
//		Attributes: map[string]string{"model": "llama-3-8b"},
//	})
//	err = source.Requests(ctx, src, skips, func(r *model.Request) error { ... })
//
// # Protocols
//
// One endpoint picks the transport; WithProtocol overrides the choice.
//
//   - gRPC ("grpc://host:16685", "host:16685", "grpcs://" for TLS): api_v3
//     when the server serves it, else api_v2 (when api_v3 answers
//     Unimplemented). api_v3 (served by Jaeger v2) streams one
//     OTLP TracesData message per trace: event names, nanosecond
//     timestamps and the SDK's dropped-event counts come through as
//     recorded. jaeger-idl ships only its .proto, so the requests are
//     encoded here with protowire by the field numbers of
//     jaeger.api_v3.QueryService (TraceQueryParameters: 1 service_name,
//     2 operation_name, 3 attributes, 4/5 start_time_min/max, 6/7
//     duration_min/max, 8 search_depth, 9 raw_traces; GetTraceRequest: 1
//     trace_id as hex, 2/3 start/end time, 4 raw_traces) and the replies
//     decoded into go.opentelemetry.io/proto/otlp TracesData.
//   - api_v2 gRPC uses jaeger-idl's gogo-generated stubs
//     (proto-gen/api_v2) and the Jaeger model spans (model/v1): logs are
//     events named by their "event" field, times are nanoseconds, tags keep
//     their types, span.kind / error / otel.status_code give kind and
//     status. It has no dropped-event count. With stock grpc-go the gogo
//     types panic (invalid Go type model.TraceID): the connection carries
//     its own codec named "proto" that marshals gogo messages with gogo,
//     set with grpc.WithDefaultCallOptions(grpc.ForceCodec(...)) and never
//     registered globally, so other gRPC users in the process are
//     unaffected.
//   - HTTP ("http://host:16686[/base-path]", "https://"): api_v3's
//     /api/v3/traces (OTLP JSON in {"result": ...}; nanosecond times and
//     dropped counts kept) when /api/v3/services answers, else, on a 404,
//     the legacy /api/traces of older Jaegers (the UI's JSON, microsecond
//     times, no dropped counts). api_v3 over HTTP has no attribute filter:
//     Query.Attributes are then applied here, after decoding.
//
// Every call asks for raw traces (raw_traces / raw=true): Jaeger's
// adjusters, such as clock-skew correction, would move token times.
//
// # Search depth and paging
//
// Jaeger returns at most the search depth of traces per FindTraces call
// (and refuses a depth of 0 or above its storage's limit: the memory
// store's max_traces). Query.Limit is that depth, always sent as
// 1 ≤ depth ≤ MaxLimit (default DefaultLimit). A window that comes back
// with exactly Limit traces is split into two halves, each searched
// again, recursively (within MaxWindows calls, down to 2 µs windows); the
// calls run in parallel (WithParallel) and each span is passed on once:
// the windows overlap at their edges and halves repeat their parent's
// traces. The set of (trace, span) ids seen is kept for the call, a few
// dozen bytes per span.
//
// # Limits
//
// api_v3 gRPC sends a whole trace in one message and grpc-go accepts 4 MiB
// by default, while a span with 40,000 token events is about 7 MB: the
// client accepts DefaultMaxRecvMsgSize (256 MiB; WithMaxRecvMsgSize).
// HTTP answers are decoded as streams (packages otlpjson and jaegerjson).
// Each call (one window, one trace) has a timeout (WithTimeout, default
// 30 s) that includes its retries (WithRetries, default 3, with backoff,
// only after Unavailable, connection errors and HTTP 5xx).
//
// # Errors
//
// An unreachable Jaeger gives an *Error naming the endpoint and protocol
// ("jaeger query at grpc://127.0.0.1:16685 unreachable: api_v3 gRPC
// FindTraces: ..."; errors.Is(err, ErrUnreachable)); trace ids Jaeger does
// not have give a *NotFoundError naming them, after the other traces were
// visited; malformed replies are counted in the Skips of WithSkips and
// skipped. The bearer token of WithBearerToken (gRPC per-RPC credentials,
// HTTP Authorization header) is never part of an error.
package jaegerquery
