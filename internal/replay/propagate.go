package replay

import (
	"context"
	"net/http"

	"go.opentelemetry.io/otel/propagation"
)

func propagatorExtract(r *http.Request) context.Context {
	return propagation.TraceContext{}.Extract(r.Context(), propagation.HeaderCarrier(r.Header))
}
