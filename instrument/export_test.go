package instrument_test

import "go.opentelemetry.io/otel/attribute"

func attributeKey(s string) attribute.Key { return attribute.Key(s) }
