// Package source yields the spans the analyzer works on, from trace files
// and from memory, as backend-neutral model.Spans, and turns tokentrace
// spans into model.Requests.
//
// A Source streams: it calls a Visitor once per span and holds at most one
// trace (one line, one message) at a time, so memory stays bounded
// whatever the size of the input. Problems with single records — a
// malformed line, a span with wrong field types, a duplicate span — are
// counted in a Skips, by reason with one example location each, and
// skipped; only I/O errors (and the visitor's own errors) stop a Source.
//
// Files recognises each file's format from its content, not its name:
//
//   - OTLP JSON: the OpenTelemetry Collector file exporter's lines, a single
//     TracesData document, Jaeger's api_v3 HTTP answer (package otlpjson);
//   - OTLP protobuf: the file exporter's length-prefixed messages, or one
//     TracesData message (package otlpproto);
//   - Jaeger UI JSON: "Download JSON" and the /api/traces answers (package
//     jaegerjson);
//
// any of them gzip-compressed. Spans recorded in memory by the
// OpenTelemetry SDK come from package sdkspan. Requests converts any
// Source's tokentrace spans with model.FromSpan.
package source
