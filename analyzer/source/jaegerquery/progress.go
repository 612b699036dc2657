package jaegerquery

import (
	"io"
	"os"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress follows the traces fetched.
type progress interface {
	add(n int)
	finish()
}

// newProgress returns a bar on w when w is a terminal (total < 0: no
// known total, a spinner with the count), and otherwise a progress that
// prints nothing.
func newProgress(w io.Writer, total int) progress {
	f, ok := w.(*os.File)
	if !ok || f == nil || !term.IsTerminal(int(f.Fd())) {
		return noProgress{}
	}
	return &bar{b: progressbar.NewOptions(total,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription("traces from Jaeger"),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetRenderBlankState(true),
	)}
}

type noProgress struct{}

func (noProgress) add(int) {}
func (noProgress) finish() {}

// bar is only used under the run's lock.
type bar struct{ b *progressbar.ProgressBar }

func (p *bar) add(n int) { _ = p.b.Add(n) }

// finish erases the bar: what follows says it all.
func (p *bar) finish() {
	_ = p.b.Clear()
	_ = p.b.Exit()
}
