// Package runtest runs an example program's run function inside a test,
// as the program's main runs it, and waits for the address it announces
// on its first line of output ("listening on ADDR").
package runtest

import (
	"bytes"
	"context"
	"io"
	"strings"
	"sync"
	"testing"
	"time"
)

// RunFunc is a program's whole life: it serves until ctx is done.
type RunFunc func(ctx context.Context, args []string, stdout, stderr io.Writer) error

// Program is one run of a program.
type Program struct {
	URL    string // "http://" and the address announced
	Stdout *Lines
	Stderr *Lines
	cancel context.CancelFunc
	done   chan error
}

// Start runs run(args) on its own goroutine and waits up to 10 s for its
// first stdout line, "listening on ADDR". The test's cleanup interrupts it
// and waits up to 30 s for it to return.
func Start(t testing.TB, run RunFunc, args ...string) *Program {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p := &Program{Stdout: NewLines(), Stderr: NewLines(), cancel: cancel, done: make(chan error, 1)}
	go func() { p.done <- run(ctx, args, p.Stdout, p.Stderr) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-p.done:
		case <-time.After(30 * time.Second):
			t.Error("run did not return")
		}
	})
	select {
	case line := <-p.Stdout.first:
		addr, ok := strings.CutPrefix(line, "listening on ")
		if !ok {
			t.Fatalf("first line %q", line)
		}
		p.URL = "http://" + addr
	case err := <-p.done:
		p.done <- err // for the cleanup
		t.Fatalf("run returned before listening: %v\n%s", err, p.Stderr)
	case <-time.After(10 * time.Second):
		t.Fatal("no address printed")
	}
	return p
}

// Stop interrupts the run (as SIGINT does) and returns run's error and how
// long it took to return; the test fails if that is more than within.
func (p *Program) Stop(t testing.TB, within time.Duration) (time.Duration, error) {
	t.Helper()
	start := time.Now()
	p.cancel()
	select {
	case err := <-p.done:
		p.done <- err // for the cleanup
		return time.Since(start), err
	case <-time.After(within):
		t.Fatalf("run did not return within %v of the interrupt", within)
		return 0, nil
	}
}

// Lines is a stdout or stderr that the program and the test may use at
// once; it hands over the first line.
type Lines struct {
	mu    sync.Mutex
	buf   bytes.Buffer
	first chan string
}

// NewLines returns an empty Lines.
func NewLines() *Lines { return &Lines{first: make(chan string, 1)} }

func (w *Lines) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	had := bytes.IndexByte(w.buf.Bytes(), '\n') >= 0
	w.buf.Write(p)
	if i := bytes.IndexByte(w.buf.Bytes(), '\n'); !had && i >= 0 {
		w.first <- string(w.buf.Bytes()[:i])
	}
	return len(p), nil
}

// String returns everything written so far.
func (w *Lines) String() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.buf.String()
}
