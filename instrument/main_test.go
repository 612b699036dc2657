package instrument_test

import (
	"testing"

	"go.uber.org/goleak"
)

// TestMain fails the package if a test leaves goroutines behind: a span
// finisher that never ran, a stream the middleware kept open, a server or
// exporter that was not shut down. Every test ends its servers and waits
// for the finisher (endedSpans calls instrument.Flush); goleak retries for
// a while, so goroutines that are just returning are not reported.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}
