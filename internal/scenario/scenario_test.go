package scenario

import (
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"go.opentelemetry.io/otel/trace"

	"github.com/tokentrace/tokentrace/internal/loadgen"
	"github.com/tokentrace/tokentrace/internal/sim"
)

func TestNamesListsTheBuiltins(t *testing.T) {
	names := Names()
	want := []string{"batch-longctx", "clean", "engine-gc", "kv-preempt", "kv-swap", "mixed", "prefill-chunked", "prefill-unchunked"}
	for _, n := range want {
		if !slices.Contains(names, n) {
			t.Errorf("Names() = %v lacks %s", names, n)
		}
	}
	if !slices.IsSorted(names) {
		t.Errorf("Names() not sorted: %v", names)
	}
}

// Every built-in scenario parses, builds a valid engine for each instance
// that accepts every request of its mix, and has a bounded load.
func TestBuiltinsAreValid(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			s, err := Builtin(name)
			if err != nil {
				t.Fatal(err)
			}
			if s.Name != name || s.Description == "" || s.Instances < 1 || s.TimeScale != 1 {
				t.Errorf("scenario %q: name %q, %d instances, time scale %v, description %q", name, s.Name, s.Instances, s.TimeScale, s.Description)
			}
			seeds := map[uint64]bool{}
			instances := map[string]bool{}
			for i := range s.Instances {
				cfg := s.EngineConfig(i)
				e, err := sim.New(cfg)
				if err != nil {
					t.Fatalf("instance %d: %v", i, err)
				}
				got := e.Config()
				if got.Model != s.Model() || got.Profile.Name != s.Engine.Profile || (got.Profile.SpikeProb > 0) != s.Engine.Spikes {
					t.Errorf("instance %d: model %q profile %q spikes %v", i, got.Model, got.Profile.Name, got.Profile.SpikeProb)
				}
				seeds[got.Seed], instances[got.Instance] = true, true
				for _, rt := range s.Load.Mix {
					if _, err := e.Submit(rt.PromptTokens, rt.MaxTokens, trace.TraceID{}); err != nil {
						t.Errorf("instance %d refuses the %s requests: %v", i, rt.Name, err)
					}
				}
			}
			if len(seeds) != s.Instances || len(instances) != s.Instances {
				t.Errorf("%d instances share seeds %v or names %v", s.Instances, seeds, instances)
			}

			lc := s.LoadConfig("http://127.0.0.1:8080")
			if lc.Requests <= 0 || lc.Requests > 1000 || lc.Duration <= 0 || lc.Duration > 10*time.Minute {
				t.Errorf("load is not bounded: %d requests, %v", lc.Requests, lc.Duration)
			}
			if _, err := loadgen.Schedule(lc, 1); err != nil {
				t.Errorf("load config: %v", err)
			}
			if len(lc.Types) != len(s.Load.Mix) || lc.Seed != s.Seed || lc.BaseURL != "http://127.0.0.1:8080" {
				t.Errorf("load config %+v", lc)
			}
			for _, rt := range lc.Types {
				if rt.Model != s.Model() || !rt.Stream {
					t.Errorf("request type %+v", rt)
				}
			}
		})
	}
}

func TestEngineConfigMirrorsTheScenario(t *testing.T) {
	s, err := Builtin("mixed")
	if err != nil {
		t.Fatal(err)
	}
	c := s.EngineConfig(1)
	if c.Instance != "mixed-1" || c.Seed != s.Seed+1000003 || !c.Prefill.Chunked || c.Prefill.TokenBudget != 512 ||
		c.KV.Blocks != 320 || c.GC.Period != 2500*time.Millisecond || c.GC.Jitter != 500*time.Millisecond ||
		c.GC.MinPause != 120*time.Millisecond || c.GC.MaxPause != 250*time.Millisecond ||
		c.Warmup.Requests != 8 || c.Warmup.Slowdown != 0.4 || c.Profile.SpikeProb != 0 {
		t.Errorf("EngineConfig(1) = %+v", c)
	}
	s.Engine.Spikes = true
	if c := s.EngineConfig(0); c.Profile.SpikeProb != sim.Profiles["13b"].SpikeProb {
		t.Errorf("spikes on: SpikeProb %v", c.Profile.SpikeProb)
	}
}

// A scaled run sends the same requests into the same engine states:
// arrivals come faster and the time bound shrinks by the same factor.
func TestLoadConfigFollowsTheTimeScale(t *testing.T) {
	s, err := Builtin("clean")
	if err != nil {
		t.Fatal(err)
	}
	one := s.LoadConfig("http://x:1")
	s.TimeScale = 0.25
	quarter := s.LoadConfig("http://x:1")
	if quarter.Rate != one.Rate*4 || quarter.Duration != one.Duration/4 || quarter.Requests != one.Requests {
		t.Errorf("time scale 0.25: rate %v (was %v), duration %v (was %v)", quarter.Rate, one.Rate, quarter.Duration, one.Duration)
	}
	if c := s.EngineConfig(0); c.TimeScale != 0.25 {
		t.Errorf("engine time scale %v", c.TimeScale)
	}
}

func writeFile(t *testing.T, name, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), name)
	if err := os.WriteFile(path, []byte(body), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

const minimal = `{"name": "mine", "seed": 3, "engine": {"profile": "fast", "gc": {"period": "1s", "min_pause": 50000000}},
  "load": {"rate": 2, "requests": 5, "duration": "10s", "mix": [{"name": "q", "weight": 1, "prompt_tokens": 10, "max_tokens": 20, "endpoint": "completions"}]}}`

func TestOpenReadsAFile(t *testing.T) {
	s, err := Open(writeFile(t, "mine.json", minimal))
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "mine" || s.Instances != 1 || s.TimeScale != 1 || s.Model() != "sim-llama" ||
		time.Duration(s.Engine.GC.Period) != time.Second || time.Duration(s.Engine.GC.MinPause) != 50*time.Millisecond {
		t.Errorf("parsed %+v", s)
	}
	if lc := s.LoadConfig("http://x:1"); lc.Types[0].Endpoint != loadgen.EndpointCompletions || lc.Duration != 10*time.Second {
		t.Errorf("load config %+v", lc)
	}
	// Open takes a built-in name too.
	if s, err := Open("kv-swap"); err != nil || !s.Engine.KV.Swap {
		t.Errorf("Open(kv-swap) = %+v, %v", s.Engine, err)
	}
	// A file without a name is named after the file.
	s, err = Open(writeFile(t, "unnamed.json", strings.Replace(minimal, `"name": "mine", `, "", 1)))
	if err != nil || s.Name != "unnamed" || s.EngineConfig(0).Instance != "unnamed-0" {
		t.Errorf("unnamed file: name %q, %v", s.Name, err)
	}
}

func TestOpenRejectsBadFiles(t *testing.T) {
	tests := []struct{ name, body, want string }{
		{"unknown field", strings.Replace(minimal, `"seed": 3`, `"seed": 3, "sed": 4`, 1), `unknown field "sed"`},
		{"unknown nested field", strings.Replace(minimal, `"profile": "fast"`, `"profile": "fast", "chunk": true`, 1), `unknown field "chunk"`},
		{"unknown profile", strings.Replace(minimal, `"fast"`, `"70b"`, 1), "unknown profile"},
		{"empty mix", `{"engine": {"profile": "fast"}, "load": {"rate": 1, "mix": []}}`, "empty request mix"},
		{"trailing data", minimal + `{}`, "after the JSON object"},
		{"bad duration", strings.Replace(minimal, `"1s"`, `"1 second"`, 1), "duration"},
		{"not json", `engine: fast`, "scenario"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := Open(writeFile(t, "bad.json", tt.body))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err = %v, want it to mention %q", err, tt.want)
			}
		})
	}
	if _, err := Open(filepath.Join(t.TempDir(), "missing.json")); err == nil {
		t.Error("a missing file opened")
	}
	if _, err := Builtin("nosuch"); err == nil || !strings.Contains(err.Error(), "mixed") {
		t.Errorf("Builtin(nosuch) = %v, want an error listing the built-ins", err)
	}
}
