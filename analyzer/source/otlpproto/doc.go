// Package otlpproto decodes traces written as OTLP protobuf into
// model.Spans: the OpenTelemetry Collector file exporter's "proto" format
// (each message a 4-byte big-endian length then a TracesData), and a
// single TracesData (or ExportTraceServiceRequest) message.
//
// A file of length-prefixed messages is read one message at a time; a
// single message is read one ResourceSpans at a time, so memory stays
// bounded by the largest message (or ResourceSpans). A message that does
// not parse is reported to the skip function and the next one still
// decodes; only I/O errors and the visit function's errors stop Decode.
//
// FromTracesData converts a TracesData already in memory, such as one
// message of Jaeger's api_v3 gRPC stream.
package otlpproto
