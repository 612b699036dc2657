package detect

import (
	"encoding/json"
	"fmt"
	"maps"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// realDir holds runs recorded from llama.cpp's llama-server with ground
// truth (see its README.md).
const realDir = "../../../shared/data/realengine"

type realRun struct {
	Schema  string `json:"schema"`
	Streams []struct {
		Name string    `json:"name"`
		Role string    `json:"role"`
		TMs  []float64 `json:"t_ms"`
	} `json:"streams"`
	Truth struct {
		Streams []struct {
			Name     string `json:"name"`
			Segments []struct {
				StartToken int    `json:"start_token"`
				EndToken   int    `json:"end_token"`
				Cause      string `json:"cause"`
			} `json:"segments"`
		} `json:"streams"`
	} `json:"truth"`
}

type tokRange struct{ a, b int } // inclusive token indices

// matches reports whether two token ranges overlap by at least half of
// the shorter one.
func matches(p, q tokRange) bool {
	ov := min(p.b, q.b) - max(p.a, q.a) + 1
	if ov <= 0 {
		return false
	}
	short := min(p.b-p.a+1, q.b-q.a+1)
	return 2*ov >= short
}

// score counts the found segments that match a truth segment and the
// truth segments matched by a found one.
func score(found, truth []tokRange) (tp, matched int) {
	for _, f := range found {
		for _, t := range truth {
			if matches(f, t) {
				tp++
				break
			}
		}
	}
	for _, t := range truth {
		for _, f := range found {
			if matches(f, t) {
				matched++
				break
			}
		}
	}
	return tp, matched
}

func loadRealRuns(t *testing.T) map[string]*realRun {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(realDir, "*.json"))
	if len(files) == 0 {
		t.Skipf("real-engine data not found in %s (it lives outside the module, in the shared workspace)", realDir)
	}
	runs := map[string]*realRun{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var r realRun
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		if len(r.Streams) == 0 {
			t.Fatalf("%s: no streams", f)
		}
		runs[filepath.Base(f)] = &r
	}
	return runs
}

func gapsOf(tms []float64) []float64 {
	if len(tms) < 2 {
		return nil
	}
	g := make([]float64, len(tms)-1)
	for i := range g {
		g[i] = tms[i+1] - tms[i]
	}
	return g
}

// TestRealEngine runs Detect on every stream of the recorded runs and
// compares the segments with the labelled truth.
func TestRealEngine(t *testing.T) {
	runs := loadRealRuns(t)
	det := NewDetector(DefaultConfig())
	var totFound, totTP, totTruth, totMatched, controlSegs int
	names := slices.Sorted(maps.Keys(runs))
	for _, name := range names {
		run := runs[name]
		truth := map[string][]tokRange{}
		for _, s := range run.Truth.Streams {
			for _, g := range s.Segments {
				truth[s.Name] = append(truth[s.Name], tokRange{g.StartToken, g.EndToken})
			}
		}
		var found, tp, nTruth, matched int
		var detail strings.Builder
		for _, s := range run.Streams {
			gaps := gapsOf(s.TMs)
			segs, base := det.Detect(nil, gaps)
			var got []tokRange
			for _, g := range segs {
				got = append(got, tokRange{g.Start + 1, g.End + 1}) // gap i ends token i+1
			}
			a, m := score(got, truth[s.Name])
			found += len(got)
			tp += a
			nTruth += len(truth[s.Name])
			matched += m
			if strings.Contains(name, "-control-") && s.Role == "background" {
				controlSegs += len(segs)
			}
			fmt.Fprintf(&detail, "\n  %s (%s, %d gaps, baseline %.1f ms): truth %v", s.Name, s.Role, len(gaps), base, truth[s.Name])
			for _, g := range segs {
				fmt.Fprintf(&detail, "\n    %-5s tokens %d-%d median %.1f ms baseline %.1f ms ×%.2f lost %.0f ms",
					g.Kind, g.Start+1, g.End+1, g.MedianMs, g.BaselineMs, g.Slowdown, g.LostMs)
			}
		}
		t.Logf("%s: found %d (%d match truth), truth %d (%d found): precision %s recall %s%s",
			name, found, tp, nTruth, matched, ratio(tp, found), ratio(matched, nTruth), detail.String())
		totFound += found
		totTP += tp
		totTruth += nTruth
		totMatched += matched
	}
	p := frac(totTP, totFound)
	r := frac(totMatched, totTruth)
	f1 := 0.0
	if p+r > 0 {
		f1 = 2 * p * r / (p + r)
	}
	t.Logf("overall: precision %.3f (%d/%d) recall %.3f (%d/%d) F1 %.3f; control background segments %d",
		p, totTP, totFound, r, totMatched, totTruth, f1, controlSegs)
	if f1 < 0.8 {
		t.Errorf("overall F1 %.3f < 0.8", f1)
	}
	if controlSegs != 0 {
		t.Errorf("%d segments on the background streams of the controls, want 0", controlSegs)
	}
}

func frac(a, b int) float64 {
	if b == 0 {
		return 1
	}
	return float64(a) / float64(b)
}

func ratio(a, b int) string {
	if b == 0 {
		return "n/a"
	}
	return fmt.Sprintf("%.2f", float64(a)/float64(b))
}

// realScore runs det on every stream of runs after transform (which may
// cut or perturb a stream's gaps and returns the token offset of what it
// kept) and scores the segments against the truth clipped to what was
// kept. It returns the counts and the number of segments on the
// background streams of the controls.
func realScore(runs map[string]*realRun, det *Detector, transform func(gaps []float64) ([]float64, int)) (found, tp, nTruth, matched, control int) {
	for _, name := range slices.Sorted(maps.Keys(runs)) {
		run := runs[name]
		truth := map[string][]tokRange{}
		for _, s := range run.Truth.Streams {
			for _, g := range s.Segments {
				truth[s.Name] = append(truth[s.Name], tokRange{g.StartToken, g.EndToken})
			}
		}
		for _, s := range run.Streams {
			gaps, off := transform(gapsOf(s.TMs))
			segs, _ := det.Detect(nil, gaps)
			var got, want []tokRange
			for _, g := range segs {
				got = append(got, tokRange{g.Start + 1 + off, g.End + 1 + off})
			}
			for _, r := range truth[s.Name] {
				if a, b := max(r.a, off+1), min(r.b, off+len(gaps)); a <= b {
					want = append(want, tokRange{a, b})
				}
			}
			a, m := score(got, want)
			found += len(got)
			tp += a
			nTruth += len(want)
			matched += m
			if strings.Contains(name, "-control-") && s.Role == "background" {
				control += len(got)
			}
		}
	}
	return
}

func f1(found, tp, nTruth, matched int) float64 {
	p, r := frac(tp, found), frac(matched, nTruth)
	if p+r == 0 {
		return 0
	}
	return 2 * p * r / (p + r)
}

// TestRealEngineRobust checks that the defaults are not a knife edge on
// the recorded runs: the same streams at other sensitivities, cut into
// random sub-requests (other lengths, other starting points), and with
// extra log-normal jitter and extra smooth drift (×0.5 to ×3 over the
// stream) multiplied in.
func TestRealEngineRobust(t *testing.T) {
	runs := loadRealRuns(t)
	same := func(g []float64) ([]float64, int) { return g, 0 }
	for _, s := range sensitivities {
		found, tp, nt, m, ctl := realScore(runs, NewDetector(Config{Sensitivity: s}), same)
		t.Logf("sensitivity %v: precision %d/%d recall %d/%d control segments %d", s, tp, found, m, nt, ctl)
		if f := f1(found, tp, nt, m); f < 0.9 || ctl > 0 {
			t.Errorf("sensitivity %v: F1 %.3f, %d control segments", s, f, ctl)
		}
	}
	det := NewDetector(DefaultConfig())
	rng := newRNG(71)
	cut := func(g []float64) ([]float64, int) {
		lo := rng.IntN(len(g) / 3)
		hi := len(g) - rng.IntN(len(g)/3)
		return g[lo:hi], lo
	}
	var found, tp, nt, m, ctl int
	for range 20 {
		a, b, c, d, e := realScore(runs, det, cut)
		found, tp, nt, m, ctl = found+a, tp+b, nt+c, m+d, ctl+e
	}
	t.Logf("random sub-requests: precision %d/%d recall %d/%d control segments %d", tp, found, m, nt, ctl)
	if f := f1(found, tp, nt, m); f < 0.9 || ctl > 0 {
		t.Errorf("sub-requests: F1 %.3f, %d control segments", f, ctl)
	}
	for _, jitter := range []float64{0.05, 0.10} {
		for _, drift := range []float64{0.5, 2, 3} {
			perturb := func(g []float64) ([]float64, int) {
				g = slices.Clone(g)
				for i := range g {
					g[i] *= math.Exp(jitter*rng.NormFloat64()) * math.Pow(drift, float64(i)/float64(len(g)))
				}
				return g, 0
			}
			var found, tp, nt, m, ctl int
			for range 10 {
				a, b, c, d, e := realScore(runs, det, perturb)
				found, tp, nt, m, ctl = found+a, tp+b, nt+c, m+d, ctl+e
			}
			t.Logf("+%.0f%% jitter, ×%.1f drift: precision %d/%d recall %d/%d control segments %d",
				jitter*100, drift, tp, found, m, nt, ctl)
			if f := f1(found, tp, nt, m); f < 0.9 || ctl > 1 {
				t.Errorf("+%.0f%% jitter ×%.1f drift: F1 %.3f, %d control segments", jitter*100, drift, f, ctl)
			}
		}
	}
}
