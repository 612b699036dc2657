package jaegerquery

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"

	"github.com/tokentrace/tokentrace/analyzer/source/otlpproto"
)

// api_v3 gRPC. jaeger-idl ships only proto/api_v3/query_service.proto, so
// requests are encoded here with protowire by its field numbers and the
// replies (streams of opentelemetry.proto.trace.v1.TracesData, one message
// per trace) are decoded into tracepb.TracesData.
const v3Method = "/jaeger.api_v3.QueryService/"

// Field numbers of query_service.proto (package jaeger.api_v3).
const (
	v3FindTracesQuery = 1 // FindTracesRequest.query

	v3QueryService     = 1 // TraceQueryParameters.service_name
	v3QueryOperation   = 2 // .operation_name
	v3QueryAttributes  = 3 // .attributes (map<string,string>)
	v3QueryStartMin    = 4 // .start_time_min (Timestamp)
	v3QueryStartMax    = 5 // .start_time_max (Timestamp)
	v3QueryDurationMin = 6 // .duration_min (Duration)
	v3QueryDurationMax = 7 // .duration_max (Duration)
	v3QuerySearchDepth = 8 // .search_depth (int32)
	v3QueryRawTraces   = 9 // .raw_traces (bool)

	v3GetTraceID        = 1 // GetTraceRequest.trace_id (hex string)
	v3GetTraceStart     = 2 // .start_time
	v3GetTraceEnd       = 3 // .end_time
	v3GetTraceRawTraces = 4 // .raw_traces

	v3ServicesServices = 1 // GetServicesResponse.services
)

type grpcV3 struct {
	conn *grpc.ClientConn
}

func (*grpcV3) protocol() Protocol { return GRPCv3 }

func (b *grpcV3) probe(ctx context.Context) error {
	_, err := b.services(ctx)
	return err
}

func (b *grpcV3) services(ctx context.Context) ([]string, error) {
	var out rawMessage
	if err := b.conn.Invoke(ctx, v3Method+"GetServices", &rawMessage{}, &out); err != nil {
		return nil, err
	}
	var names []string
	bb := out.b
	for len(bb) > 0 {
		num, typ, n := protowire.ConsumeTag(bb)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		bb = bb[n:]
		if num == v3ServicesServices && typ == protowire.BytesType {
			v, n := protowire.ConsumeBytes(bb)
			if n < 0 {
				return nil, protowire.ParseError(n)
			}
			names = append(names, string(v))
			bb = bb[n:]
			continue
		}
		n = protowire.ConsumeFieldValue(num, typ, bb)
		if n < 0 {
			return nil, protowire.ParseError(n)
		}
		bb = bb[n:]
	}
	sort.Strings(names)
	return names, nil
}

func (b *grpcV3) find(ctx context.Context, s search, k sink) (int, error) {
	where := fmt.Sprintf("api_v3 FindTraces %s %s..%s", s.service, s.start.UTC().Format(time.RFC3339Nano), s.end.UTC().Format(time.RFC3339Nano))
	return b.stream(ctx, "FindTraces", encodeFindTraces(s), where, k)
}

func (b *grpcV3) get(ctx context.Context, id string, start, end time.Time, k sink) (bool, error) {
	n, err := b.stream(ctx, "GetTrace", encodeGetTrace(id, start, end), "api_v3 GetTrace "+id, k)
	if status.Code(err) == codes.NotFound {
		return false, nil
	}
	// v1.76.0 answers an unknown id with an empty stream.
	return n > 0, err
}

// stream calls a server-streaming method and decodes each TracesData.
// A message that does not parse is counted as a skip and the next one
// still decodes.
func (b *grpcV3) stream(ctx context.Context, method string, req []byte, where string, k sink) (int, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := b.conn.NewStream(ctx, &grpc.StreamDesc{ServerStreams: true}, v3Method+method)
	if err != nil {
		return 0, err
	}
	if err := st.SendMsg(&rawMessage{b: req}); err != nil {
		if err == io.EOF {
			// The server ended the stream: its status says why.
			err = st.RecvMsg(&rawMessage{})
		}
		return 0, err
	}
	if err := st.CloseSend(); err != nil {
		return 0, err
	}
	var (
		tc  traceCounter
		raw rawMessage
		td  tracepb.TracesData
	)
	emit := tc.counting(k.emit)
	for msg := 1; ; msg++ {
		if err := st.RecvMsg(&raw); err != nil {
			if err == io.EOF {
				return tc.n(), nil
			}
			return tc.n(), explainGRPC(err)
		}
		if err := proto.Unmarshal(raw.b, &td); err != nil {
			k.skip(ReasonMalformedMsg, fmt.Sprintf("%s: message %d: %v", where, msg, err))
			continue
		}
		if err := otlpproto.FromTracesData(&td, fmt.Sprintf("%s: message %d", where, msg), emit, k.skip); err != nil {
			return tc.n(), err
		}
	}
}

// explainGRPC adds advice to the errors a user can fix.
func explainGRPC(err error) error {
	s, ok := status.FromError(err)
	if ok && s.Code() == codes.ResourceExhausted && strings.Contains(s.Message(), "larger than max") {
		return fmt.Errorf("%w (one trace is larger than the gRPC message limit: raise it with WithMaxRecvMsgSize)", err)
	}
	return err
}

// encodeFindTraces encodes a FindTracesRequest.
func encodeFindTraces(s search) []byte {
	var q []byte
	q = appendString(q, v3QueryService, s.service)
	q = appendString(q, v3QueryOperation, s.operation)
	keys := make([]string, 0, len(s.attrs))
	for k := range s.attrs {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		var e []byte
		e = appendString(e, 1, k)
		e = appendString(e, 2, s.attrs[k])
		q = protowire.AppendTag(q, v3QueryAttributes, protowire.BytesType)
		q = protowire.AppendBytes(q, e)
	}
	q = appendTimestamp(q, v3QueryStartMin, s.start)
	q = appendTimestamp(q, v3QueryStartMax, s.end)
	q = appendDuration(q, v3QueryDurationMin, s.minDur)
	q = appendDuration(q, v3QueryDurationMax, s.maxDur)
	q = protowire.AppendTag(q, v3QuerySearchDepth, protowire.VarintType)
	q = protowire.AppendVarint(q, uint64(int64(int32(s.depth))))
	q = protowire.AppendTag(q, v3QueryRawTraces, protowire.VarintType)
	q = protowire.AppendVarint(q, 1)
	var req []byte
	req = protowire.AppendTag(req, v3FindTracesQuery, protowire.BytesType)
	return protowire.AppendBytes(req, q)
}

// encodeGetTrace encodes a GetTraceRequest.
func encodeGetTrace(id string, start, end time.Time) []byte {
	var req []byte
	req = appendString(req, v3GetTraceID, id)
	req = appendTimestamp(req, v3GetTraceStart, start)
	req = appendTimestamp(req, v3GetTraceEnd, end)
	req = protowire.AppendTag(req, v3GetTraceRawTraces, protowire.VarintType)
	return protowire.AppendVarint(req, 1)
}

func appendString(b []byte, num protowire.Number, s string) []byte {
	if s == "" {
		return b
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

// appendTimestamp appends a google.protobuf.Timestamp (omitted when t is
// zero).
func appendTimestamp(b []byte, num protowire.Number, t time.Time) []byte {
	if t.IsZero() {
		return b
	}
	return appendSecondsNanos(b, num, t.Unix(), int32(t.Nanosecond()))
}

// appendDuration appends a google.protobuf.Duration (omitted when 0).
func appendDuration(b []byte, num protowire.Number, d time.Duration) []byte {
	if d == 0 {
		return b
	}
	return appendSecondsNanos(b, num, int64(d/time.Second), int32(d%time.Second))
}

func appendSecondsNanos(b []byte, num protowire.Number, sec int64, nanos int32) []byte {
	var m []byte
	if sec != 0 {
		m = protowire.AppendTag(m, 1, protowire.VarintType)
		m = protowire.AppendVarint(m, uint64(sec))
	}
	if nanos != 0 {
		m = protowire.AppendTag(m, 2, protowire.VarintType)
		m = protowire.AppendVarint(m, uint64(int64(nanos)))
	}
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendBytes(b, m)
}
