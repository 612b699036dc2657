package jaegerquery

import (
	"context"
	"fmt"
	"io"
	"sort"
	"strings"
	"time"

	jmodel "github.com/jaegertracing/jaeger-idl/model/v1"
	"github.com/jaegertracing/jaeger-idl/proto-gen/api_v2"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	"github.com/tokentrace/tokentrace/analyzer/model"
	du "github.com/tokentrace/tokentrace/analyzer/source/internal/decodeutil"
)

// api_v2 gRPC through jaeger-idl's gogo-generated stubs, on a connection
// whose codec marshals them with gogo (see codec).
type grpcV2 struct {
	client api_v2.QueryServiceClient
}

func (*grpcV2) protocol() Protocol { return GRPCv2 }

func (b *grpcV2) probe(ctx context.Context) error {
	_, err := b.services(ctx)
	return err
}

func (b *grpcV2) services(ctx context.Context) ([]string, error) {
	resp, err := b.client.GetServices(ctx, &api_v2.GetServicesRequest{})
	if err != nil {
		return nil, err
	}
	names := append([]string(nil), resp.Services...)
	sort.Strings(names)
	return names, nil
}

// chunkStream is what FindTraces and GetTrace return.
type chunkStream interface {
	Recv() (*api_v2.SpansResponseChunk, error)
}

func (b *grpcV2) find(ctx context.Context, s search, k sink) (int, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := b.client.FindTraces(ctx, &api_v2.FindTracesRequest{Query: &api_v2.TraceQueryParameters{
		ServiceName:   s.service,
		OperationName: s.operation,
		Tags:          s.attrs,
		StartTimeMin:  s.start,
		StartTimeMax:  s.end,
		DurationMin:   s.minDur,
		DurationMax:   s.maxDur,
		SearchDepth:   int32(s.depth),
		RawTraces:     true,
	}})
	if err != nil {
		return 0, err
	}
	where := fmt.Sprintf("api_v2 FindTraces %s %s..%s", s.service, s.start.UTC().Format(time.RFC3339Nano), s.end.UTC().Format(time.RFC3339Nano))
	return recvChunks(st, where, k)
}

func (b *grpcV2) get(ctx context.Context, id string, start, end time.Time, k sink) (bool, error) {
	tid, err := jmodel.TraceIDFromString(id)
	if err != nil {
		return false, err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	st, err := b.client.GetTrace(ctx, &api_v2.GetTraceRequest{TraceID: tid, StartTime: start, EndTime: end, RawTraces: true})
	if err != nil {
		if status.Code(err) == codes.NotFound {
			return false, nil
		}
		return false, err
	}
	n, err := recvChunks(st, "api_v2 GetTrace "+id, k)
	if status.Code(err) == codes.NotFound {
		return false, nil
	}
	return n > 0, err
}

// recvChunks converts the spans of every chunk. A chunk that does not
// decode breaks the gRPC stream (grpc-go ends it with an Internal status):
// that is a skip, and what came before stays.
func recvChunks(st chunkStream, where string, k sink) (int, error) {
	var (
		tc   traceCounter
		span model.Span
	)
	for msg := 1; ; msg++ {
		chunk, err := st.Recv()
		if err == io.EOF {
			return tc.n(), nil
		}
		if err != nil {
			if s, ok := status.FromError(err); ok && s.Code() == codes.Internal && strings.Contains(s.Message(), "unmarshal") {
				k.skip(ReasonMalformedReply, fmt.Sprintf("%s: message %d: %s", where, msg, s.Message()))
				return tc.n(), nil
			}
			return tc.n(), explainGRPC(err)
		}
		for i := range chunk.Spans {
			fillV2(&span, &chunk.Spans[i])
			if reason := du.Check(&span); reason != "" {
				k.skip(reason, du.Example(fmt.Sprintf("%s: message %d", where, msg), span.TraceID, "span "+span.SpanID))
				continue
			}
			tc.add(span.TraceID)
			if err := k.emit(&span); err != nil {
				return tc.n(), err
			}
		}
	}
}
