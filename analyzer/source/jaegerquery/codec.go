package jaegerquery

import (
	"fmt"

	gogoproto "github.com/gogo/protobuf/proto"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
)

// codec is the gRPC codec of a Client's connection, passed with
// grpc.ForceCodec as a default call option and never registered globally.
// Its name is "proto" (the wire format is plain protobuf), but it marshals
// the gogo-generated api_v2 messages with gogo's Marshal/Unmarshal: with
// stock grpc-go their custom types (model.TraceID) make GetTrace panic.
// Messages of google.golang.org/protobuf go through proto.Marshal, and a
// *rawMessage is passed through as bytes (the api_v3 requests encoded by
// hand, and replies decoded by the caller so that one malformed message
// is a skip, not the end of the stream).
type codec struct{}

func (codec) Name() string { return "proto" }

func (codec) Marshal(v any) ([]byte, error) {
	switch m := v.(type) {
	case *rawMessage:
		return m.b, nil
	case interface{ ProtoReflect() protoreflect.Message }:
		return proto.Marshal(m)
	case gogoproto.Message:
		return gogoproto.Marshal(m)
	}
	return nil, fmt.Errorf("jaegerquery codec: cannot marshal %T", v)
}

func (codec) Unmarshal(data []byte, v any) error {
	switch m := v.(type) {
	case *rawMessage:
		m.b = append(m.b[:0], data...)
		return nil
	case interface{ ProtoReflect() protoreflect.Message }:
		return proto.Unmarshal(data, m)
	case gogoproto.Message:
		return gogoproto.Unmarshal(data, m)
	}
	return fmt.Errorf("jaegerquery codec: cannot unmarshal into %T", v)
}

// rawMessage is a protobuf message already encoded (or still to decode).
type rawMessage struct{ b []byte }
