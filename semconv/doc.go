// Package semconv holds every span, attribute and event name of the
// tokentrace trace schema, and the schema's version.
//
// It is the one contract between the two halves of tokentrace: the
// instrument package writes these names, the analyzer reads them. Nothing
// else in the module spells a name of the schema. docs/schema.md describes
// each name, its type and its unit.
//
// The GenAI names (gen_ai.*) follow the OpenTelemetry GenAI semantic
// conventions (status "Development"). They are defined here rather than
// imported because the generated GenAI keys exist in go.opentelemetry.io/otel
// only up to semconv/v1.41.0 and later versions dropped them.
package semconv
