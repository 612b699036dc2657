// Package sdkspan turns spans recorded in memory by the OpenTelemetry Go
// SDK (sdktrace.ReadOnlySpan, e.g. from a tracetest.SpanRecorder) into
// model.Spans, with their exact nanosecond timestamps, their resource's
// service.name and the SDK's count of dropped events. It is what
// "tokentrace demo" analyses, without going through a file or Jaeger.
package sdkspan
