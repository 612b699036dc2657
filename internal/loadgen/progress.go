package loadgen

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// progress follows a run's completed requests.
type progress interface {
	done(ok bool)
	finish()
}

// newProgress returns a progress bar on w when w is a terminal, and a
// progress that prints nothing otherwise (pipes, files, CI, nil).
func newProgress(w io.Writer, target int) progress {
	f, ok := w.(*os.File)
	if !ok || f == nil || !term.IsTerminal(int(f.Fd())) {
		return noProgress{}
	}
	return newBar(w, target)
}

type noProgress struct{}

func (noProgress) done(bool) {}
func (noProgress) finish()   {}

// bar is a progressbar showing completed/target and the errors so far; a
// run bounded only by time has no target and shows a spinner with the
// count.
type bar struct {
	mu     sync.Mutex
	b      *progressbar.ProgressBar
	errors int
}

func newBar(w io.Writer, target int) *bar {
	max := int64(target)
	if target <= 0 {
		max = -1
	}
	b := progressbar.NewOptions64(max,
		progressbar.OptionSetWriter(w),
		progressbar.OptionSetDescription("requests"),
		progressbar.OptionShowCount(),
		progressbar.OptionSetWidth(30),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionSetPredictTime(target > 0),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetRenderBlankState(true),
	)
	return &bar{b: b}
}

func (p *bar) done(ok bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	if !ok {
		p.errors++
		p.b.Describe(fmt.Sprintf("requests (%d errors)", p.errors))
	}
	_ = p.b.Add(1)
}

// finish erases the bar: the summary that follows says it all.
func (p *bar) finish() {
	p.mu.Lock()
	defer p.mu.Unlock()
	_ = p.b.Clear()
	_ = p.b.Exit()
}
