// Package jaegerjson decodes traces in the Jaeger UI's JSON into
// model.Spans: what the UI's "Download JSON" saves and what Jaeger's
// legacy HTTP API (/api/traces, /api/traces/{id}) answers —
// {"data": [trace, ...], "total": 0, ..., "errors": null} — as well as a
// bare array of traces and a single trace object.
//
// A trace is {"traceID", "spans", "processes"}; spans name their process
// (and so their service) by processID. Times are microseconds, the
// precision of this format. Jaeger's mapping of OpenTelemetry is undone:
// the tag span.kind gives the kind, error=true or otel.status_code=ERROR
// the error status, otel.status_description its message,
// otel.dropped_events_count the dropped events; a log's "event" field is
// the event name. Array attributes arrive as the JSON text Jaeger made of
// them and stay strings.
//
// Decoding streams over the traces with json.Decoder tokens, holding one
// trace at a time (its processes follow its spans, so a trace is the
// unit). A span with fields of the wrong type is reported to the skip
// function with its file:line and trace id and the rest still decodes;
// only I/O errors and the visit function's errors stop Decode.
package jaegerjson
