package loadgen

import (
	"bytes"
	"strings"
	"testing"
	"time"
)

// On a terminal the bar shows completed/target and the errors, and is
// erased at the end. (Run's choice of bar or silence is tested with a
// buffer and a pipe in run_test.go.)
func TestBarRenders(t *testing.T) {
	var buf bytes.Buffer
	b := newBar(&buf, 3)
	b.done(false)
	time.Sleep(150 * time.Millisecond) // past the render throttle
	b.done(true)
	out := buf.String()
	if !strings.Contains(out, "2/3") || !strings.Contains(out, "(1 errors)") {
		t.Errorf("bar output %q lacks 2/3 and the error count", out)
	}
	n := buf.Len()
	b.finish()
	if buf.Len() == n {
		t.Error("finish did not erase the bar")
	}
	if _, ok := newProgress(&buf, 3).(noProgress); !ok {
		t.Error("a buffer is not a terminal, but got a bar")
	}
	if _, ok := newProgress(nil, 3).(noProgress); !ok {
		t.Error("nil writer got a bar")
	}
}
