// Package otlpjson decodes traces written as OTLP JSON into model.Spans.
//
// It reads what the OpenTelemetry Collector's file exporter writes (one
// TracesData JSON object per line), a single TracesData document (pretty
// printed or not), a JSON array of them, and Jaeger's api_v3 HTTP answer
// ({"result": {"resourceSpans": [...]}}). OTLP JSON differs from
// protojson's defaults in ways this package follows: trace and span ids
// are hex, 64-bit integers are strings, enums are numbers. It is lenient
// where writers differ: integers as numbers or strings, enums as numbers
// or names ("SPAN_KIND_SERVER"), ids as hex or base64.
//
// Decoding streams: a file of lines is read one line (one TracesData, at
// most 256 MiB) at a time, and a document is walked token by token down
// to its spans, so at most one line or one span is held at a time,
// whatever the size of the file. Well-formed lines of the usual shape
// take a fast path that walks them by hand; anything else goes through
// encoding/json, and both give the same spans. A bad line or span is
// reported to the skip function with its file:line and the rest still
// decodes; only I/O errors and the visit function's errors stop Decode.
package otlpjson
