package sim

import (
	"fmt"
	"sort"
	"time"
)

// Profile is the step-time model of a model on a device: how long one
// engine step takes for a given batch.
type Profile struct {
	Name string `json:"name"`
	// Fixed is the cost of a step whatever it holds (weights read once).
	Fixed time.Duration `json:"fixed"`
	// PerSeq is the added cost of each decoding sequence in the step.
	PerSeq time.Duration `json:"per_seq"`
	// PerPrefillToken is the cost of each prompt token processed.
	PerPrefillToken time.Duration `json:"per_prefill_token"`
	// PerContextToken is the cost of each token of context held by the
	// decoding sequences (attention over the KV cache): step time drifts
	// up smoothly as contexts grow.
	PerContextToken time.Duration `json:"per_context_token"`
	// Noise is the sigma of the multiplicative log-normal step noise.
	Noise float64 `json:"noise"`
	// SpikeProb and SpikeFactor give rare slow steps (scheduler hiccups,
	// host interference): the long tail seen on fast engines.
	SpikeProb   float64 `json:"spike_prob"`
	SpikeFactor float64 `json:"spike_factor"`
	// MaxContext is the longest prompt+output accepted.
	MaxContext int `json:"max_context"`
}

// Profiles are the built-in step-time models; docs/simulator.md says how
// each was calibrated.
var Profiles = map[string]Profile{
	// fast: a small model on a fast GPU. Steady decode ≈ 1.5–1.6 ms/token
	// with a few requests, with a long tail from rare slow steps (1.5 % of
	// steps 8× dearer); calibrated so that the mixed scenario's load on it,
	// spikes on, gives the seed report's inter-token latency median
	// (1.60 ms) and P99 (12.88 ms, 8× the median). The seed's mean
	// (2.2× median) needs many moderately slow gaps, a busier load than
	// mixed, not rarer or larger spikes: docs/simulator.md.
	"fast": {
		Name: "fast", Fixed: 1450 * time.Microsecond, PerSeq: 40 * time.Microsecond,
		PerPrefillToken: 20 * time.Microsecond, PerContextToken: 20 * time.Nanosecond,
		Noise: 0.05, SpikeProb: 0.015, SpikeFactor: 8, MaxContext: 32768,
	},
	// 13b: a 13B-class model on one A100: 15–30 ms per decode step, and
	// Sarathi-Serve's 0.21 s of prefill per 1k prompt tokens.
	"13b": {
		Name: "13b", Fixed: 14 * time.Millisecond, PerSeq: 250 * time.Microsecond,
		PerPrefillToken: 210 * time.Microsecond, PerContextToken: 400 * time.Nanosecond,
		Noise: 0.04, SpikeProb: 0.001, SpikeFactor: 4, MaxContext: 16384,
	},
	// llamacpp-cpu: the real engine of shared/data/realengine (llama.cpp
	// server, 60M-parameter model, 2 CPU cores): 5.3 ms/token alone,
	// ≈ 17 ms with 4 streams, 11.6 → 22.6 ms with 3 streams as context
	// grows over 400 tokens, 0.67 ms per prompt token.
	"llamacpp-cpu": {
		Name: "llamacpp-cpu", Fixed: 3 * time.Millisecond, PerSeq: 2300 * time.Microsecond,
		PerPrefillToken: 670 * time.Microsecond, PerContextToken: 12 * time.Microsecond,
		Noise: 0.08, SpikeProb: 0.002, SpikeFactor: 3, MaxContext: 16384,
	},
}

// ProfileNames lists the built-in profiles, sorted.
func ProfileNames() []string {
	names := make([]string, 0, len(Profiles))
	for n := range Profiles {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// LookupProfile returns the named built-in profile.
func LookupProfile(name string) (Profile, error) {
	p, ok := Profiles[name]
	if !ok {
		return Profile{}, fmt.Errorf("sim: unknown profile %q (have %v)", name, ProfileNames())
	}
	return p, nil
}

// StepCost is the noiseless cost of a step holding decodes decoding
// sequences with contextTokens of context between them and prefillTokens
// prompt tokens.
func (p Profile) StepCost(decodes, prefillTokens, contextTokens int) time.Duration {
	return p.Fixed + time.Duration(decodes)*p.PerSeq +
		time.Duration(prefillTokens)*p.PerPrefillToken +
		time.Duration(contextTokens)*p.PerContextToken
}
