//go:build !race

// The accuracy runs replay real timing: the race detector's 5-10× slowdown
// would change the timing they measure, so they run without it (the test
// script runs this package a second time, without -race).

package accuracy_test

import (
	"context"
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
	faithful := true
	for _, f := range recordings(t) {
		c, err := accuracy.Recording(ctx, f, analyzer.DefaultConfig())
		if err != nil {
			t.Fatal(err)
		}
		logCase(t, c)
		t.Logf("  replay lateness P99 %v", c.ReplayLateP99)
		// A token written milliseconds late is a gap the recording did not
		// have: past this the host is too busy to replay real timing.
		if c.ReplayLateP99 > maxReplayLate {
			faithful = false
		}
		cases = append(cases, c)
	}
	total, base := accuracy.Total(cases)
	var b strings.Builder
	accuracy.WriteRow(&b, "ALL recordings", total)
	accuracy.WriteRow(&b, "  no-change baseline", base)
	t.Log("\n" + b.String())
	// Matched segments get the right cause whatever the host's load.
	if total.CauseAccuracy() < 0.9 {
		t.Errorf("cause accuracy %.3f on the recordings, want ≥ 0.9", total.CauseAccuracy())
	}
	if !faithful {
		t.Logf("host too busy to replay real timing (lateness P99 > %v): detection floors not asserted", maxReplayLate)
		return
	}
	if total.F1() < 0.8 || total.Recall() < 0.9 {
		t.Errorf("recordings: F1 %.3f recall %.3f, want ≥ 0.8 and ≥ 0.9", total.F1(), total.Recall())
	}
	if total.FalseDegraded > 0 {
		t.Errorf("%d clean streams (controls) reported degraded", total.FalseDegraded)
	}
}

// maxReplayLate is the replay's own timing error from which its accuracy
// figures are not trusted.
const maxReplayLate = 3 * time.Millisecond

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
	// Floors under what a quiet 2-core machine measures (docs/benchmarks.md):
	// they catch a broken detector or correlator, not the last percent.
	if total.F1() < 0.8 || total.CauseAccuracy() < 0.9 || total.Precision() < 0.8 {
		t.Errorf("scenarios: F1 %.3f, cause accuracy %.3f, precision %.3f; want ≥ 0.8, ≥ 0.9, ≥ 0.8",
			total.F1(), total.CauseAccuracy(), total.Precision())
	}
	if total.F1() <= base.F1() {
		t.Errorf("F1 %.3f does not beat the no-change baseline %.3f", total.F1(), base.F1())
	}
	for _, c := range cases {
		if c.Name == "clean" && c.Score.FalseDegraded > 1 {
			t.Errorf("clean scenario: %d of %d requests reported degraded", c.Score.FalseDegraded, c.Score.CleanRequests)
		}
	}
}
