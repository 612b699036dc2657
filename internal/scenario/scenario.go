// Package scenario holds the named scenarios that the demo, the tests and
// the accuracy benchmark share: an engine configuration (simulator
// profile and injected effects), a number of engine instances, and a load.
// The built-in ones are JSON files embedded from scenarios/; a user can
// write their own in the same format and load it with Load.
package scenario

import (
	"bytes"
	"embed"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/tokentrace/tokentrace/internal/loadgen"
	"github.com/tokentrace/tokentrace/internal/sim"
)

//go:embed scenarios/*.json
var builtin embed.FS

// Duration is a time.Duration written as a Go duration string ("150ms")
// in scenario files.
type Duration time.Duration

// UnmarshalJSON accepts "150ms" or a number of nanoseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return err
		}
		*d = Duration(v)
		return nil
	}
	var n int64
	if err := json.Unmarshal(b, &n); err != nil {
		return fmt.Errorf("duration must be a string like \"150ms\": %s", b)
	}
	*d = Duration(n)
	return nil
}

// MarshalJSON writes the duration as a string.
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// Scenario is one named workload with known injected slow-downs.
type Scenario struct {
	Name        string  `json:"name"`
	Description string  `json:"description"`
	Instances   int     `json:"instances"`
	Seed        uint64  `json:"seed"`
	TimeScale   float64 `json:"time_scale,omitempty"`
	Engine      Engine  `json:"engine"`
	Load        Load    `json:"load"`
}

// Engine is the simulator configuration of every instance.
type Engine struct {
	Model       string  `json:"model"`
	Profile     string  `json:"profile"`
	MaxRunning  int     `json:"max_running,omitempty"`
	LongContext int     `json:"long_context,omitempty"`
	Prefill     Prefill `json:"prefill"`
	KV          KV      `json:"kv"`
	GC          GC      `json:"gc"`
	Warmup      Warmup  `json:"warmup"`
	// Spikes keeps the profile's rare slow steps; off, the only slow-downs
	// are the injected ones.
	Spikes bool `json:"spikes"`
}

// Prefill, KV, GC and Warmup mirror sim's config with readable durations.
type (
	Prefill struct {
		Chunked     bool `json:"chunked"`
		TokenBudget int  `json:"token_budget,omitempty"`
	}
	KV struct {
		Blocks       int      `json:"blocks,omitempty"`
		BlockSize    int      `json:"block_size,omitempty"`
		Swap         bool     `json:"swap,omitempty"`
		SwapPerBlock Duration `json:"swap_per_block,omitempty"`
	}
	GC struct {
		Period   Duration `json:"period,omitempty"`
		Jitter   Duration `json:"jitter,omitempty"`
		Random   bool     `json:"random,omitempty"`
		MinPause Duration `json:"min_pause,omitempty"`
		MaxPause Duration `json:"max_pause,omitempty"`
	}
	Warmup struct {
		Requests int     `json:"requests,omitempty"`
		Slowdown float64 `json:"slowdown,omitempty"`
	}
)

// Load is the request pattern.
type Load struct {
	Rate        float64       `json:"rate"`
	Arrival     string        `json:"arrival,omitempty"`
	Concurrency int           `json:"concurrency,omitempty"`
	Requests    int           `json:"requests,omitempty"`
	Duration    Duration      `json:"duration,omitempty"`
	Mix         []RequestType `json:"mix"`
}

// RequestType is one kind of request of the mix.
type RequestType struct {
	Name         string  `json:"name"`
	Weight       float64 `json:"weight"`
	PromptTokens int     `json:"prompt_tokens"`
	MaxTokens    int     `json:"max_tokens"`
	Endpoint     string  `json:"endpoint,omitempty"`
}

// Names lists the built-in scenarios, sorted.
func Names() []string {
	entries, _ := builtin.ReadDir("scenarios")
	var names []string
	for _, e := range entries {
		names = append(names, strings.TrimSuffix(e.Name(), ".json"))
	}
	sort.Strings(names)
	return names
}

// Builtin returns the named built-in scenario.
func Builtin(name string) (Scenario, error) {
	b, err := builtin.ReadFile(path.Join("scenarios", name+".json"))
	if err != nil {
		return Scenario{}, fmt.Errorf("scenario: no built-in scenario %q (have %s)", name, strings.Join(Names(), ", "))
	}
	return parse(b, name)
}

// Open reads a scenario: a built-in name, or a path to a JSON file.
func Open(nameOrPath string) (Scenario, error) {
	if !strings.ContainsAny(nameOrPath, "/\\.") {
		return Builtin(nameOrPath)
	}
	b, err := os.ReadFile(nameOrPath)
	if err != nil {
		return Scenario{}, err
	}
	return parse(b, nameOrPath)
}

func parse(b []byte, name string) (Scenario, error) {
	var s Scenario
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&s); err != nil {
		return Scenario{}, fmt.Errorf("scenario %s: %w", name, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return Scenario{}, fmt.Errorf("scenario %s: data after the JSON object", name)
	}
	if s.Name == "" {
		// EngineConfig names instances after the scenario.
		s.Name = strings.TrimSuffix(filepath.Base(name), ".json")
	}
	if s.Instances <= 0 {
		s.Instances = 1
	}
	if s.TimeScale <= 0 {
		s.TimeScale = 1
	}
	if _, err := sim.LookupProfile(s.Engine.Profile); err != nil {
		return Scenario{}, fmt.Errorf("scenario %s: %w", name, err)
	}
	if len(s.Load.Mix) == 0 {
		return Scenario{}, fmt.Errorf("scenario %s: empty request mix", name)
	}
	return s, nil
}

// Model is the model name served by the scenario's engines.
func (s Scenario) Model() string {
	if s.Engine.Model != "" {
		return s.Engine.Model
	}
	return "sim-llama"
}

// EngineConfig returns the simulator configuration of instance i.
func (s Scenario) EngineConfig(i int) sim.Config {
	p, _ := sim.LookupProfile(s.Engine.Profile)
	if !s.Engine.Spikes {
		p.SpikeProb = 0
	}
	e := s.Engine
	return sim.Config{
		Instance:    fmt.Sprintf("%s-%d", s.Name, i),
		Model:       s.Model(),
		Profile:     p,
		MaxRunning:  e.MaxRunning,
		LongContext: e.LongContext,
		Prefill:     sim.PrefillConfig{Chunked: e.Prefill.Chunked, TokenBudget: e.Prefill.TokenBudget},
		KV: sim.KVConfig{Blocks: e.KV.Blocks, BlockSize: e.KV.BlockSize, Swap: e.KV.Swap,
			SwapPerBlock: time.Duration(e.KV.SwapPerBlock)},
		GC: sim.GCConfig{Period: time.Duration(e.GC.Period), Jitter: time.Duration(e.GC.Jitter), Random: e.GC.Random,
			MinPause: time.Duration(e.GC.MinPause), MaxPause: time.Duration(e.GC.MaxPause)},
		Warmup:    sim.WarmupConfig{Requests: e.Warmup.Requests, Slowdown: e.Warmup.Slowdown},
		Seed:      s.Seed + uint64(i)*1000003,
		TimeScale: s.TimeScale,
	}
}

// LoadConfig returns the load generator configuration toward baseURL.
// Arrival rate and duration follow the time scale, so a scaled run sends
// the same requests into the same engine states.
func (s Scenario) LoadConfig(baseURL string) loadgen.Config {
	c := loadgen.DefaultConfig()
	c.BaseURL = baseURL
	c.Seed = s.Seed
	c.Rate = s.Load.Rate / s.TimeScale
	if s.Load.Arrival != "" {
		c.Arrival = s.Load.Arrival
	}
	c.Concurrency = s.Load.Concurrency
	c.Requests = s.Load.Requests
	c.Duration = time.Duration(float64(s.Load.Duration) * s.TimeScale)
	c.Types = nil
	for _, t := range s.Load.Mix {
		rt := loadgen.NewRequestType(t.Name, t.Weight, t.PromptTokens, t.MaxTokens)
		rt.Model = s.Model()
		if t.Endpoint != "" {
			rt.Endpoint = t.Endpoint
		}
		c.Types = append(c.Types, rt)
	}
	return c
}
