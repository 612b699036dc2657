//go:build !race

// The accuracy runs replay real timing: the race detector's 5-10× slowdown
// would change the timing they measure, so they run without it (the test
// script runs this package a second time, without -race).

package accuracy_test

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/tokentrace/tokentrace/analyzer"
	"github.com/tokentrace/tokentrace/internal/accuracy"
	"github.com/tokentrace/tokentrace/internal/scenario"
)

const realEngineDir = "../../../shared/data/realengine"

func recordings(t testing.TB) []string {
	files, _ := filepath.Glob(filepath.Join(realEngineDir, "*.json"))
	if len(files) == 0 {
		t.Skipf("no recordings in %s (shared/ is beside the repository)", realEngineDir)
	}
	return files
}

func logCase(t testing.TB, c *accuracy.Case) {
	var b strings.Builder
	accuracy.WriteRow(&b, c.Name, c.Score)
	accuracy.WriteRow(&b, "  no-change baseline", c.Baseline)
	t.Log(strings.TrimRight(b.String(), "\n"))
	for tc, m := range c.Score.Confusion {
		for fc, n := range m {
			if tc != fc {
				t.Logf("  confusion: true %s → found %s: %d", tc, fc, n)
			}
		}
	}
}

func TestRealEngineAccuracy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	var cases []*accuracy.Case
	for _, f := range recordings(t) {
		c, err := accuracy.Recording(ctx, f, analyzer.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		logCase(t, c)
		cases = append(cases, c)
	}
	total, base := accuracy.Total(cases)
	var b strings.Builder
	accuracy.WriteRow(&b, "ALL recordings", total)
	accuracy.WriteRow(&b, "  no-change baseline", base)
	t.Log("\n" + b.String())
	if os.Getenv("TOKENTRACE_ACCURACY_REPORT") == "" {
		return
	}
}

func TestScenarioAccuracy(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	var cases []*accuracy.Case
	for _, name := range scenario.Names() {
		sc, err := scenario.Builtin(name)
		if err != nil {
			t.Fatal(err)
		}
		c, err := accuracy.Scenario(ctx, sc, analyzer.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		logCase(t, c)
		cases = append(cases, c)
	}
	total, base := accuracy.Total(cases)
	var b strings.Builder
	accuracy.WriteRow(&b, "ALL scenarios", total)
	accuracy.WriteRow(&b, "  no-change baseline", base)
	t.Log("\n" + b.String())
}
