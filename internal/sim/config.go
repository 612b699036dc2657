package sim

import (
	"errors"
	"time"
)

// Config sizes the engine and switches its effects. The zero value of each
// effect turns it off.
type Config struct {
	// Instance names the engine instance (default "sim-0").
	Instance string `json:"instance,omitempty"`
	// Model is the model name the engine serves (default "sim-llama").
	Model   string  `json:"model,omitempty"`
	Profile Profile `json:"profile"`
	// MaxRunning is the most sequences in one batch (vLLM max_num_seqs;
	// default 64).
	MaxRunning int `json:"max_running,omitempty"`

	Prefill PrefillConfig `json:"prefill"`
	KV      KVConfig      `json:"kv"`
	GC      GCConfig      `json:"gc"`
	Warmup  WarmupConfig  `json:"warmup"`

	// LongContext is the context length from which a co-running request is
	// taken to make every step noticeably dearer (ground truth cause
	// "batch"); default 1000 tokens.
	LongContext int `json:"long_context,omitempty"`
	// Seed drives every random choice (noise, GC timing).
	Seed uint64 `json:"seed"`
	// TimeScale multiplies every simulated duration before the engine
	// sleeps (0.1 runs ten times faster); default 1, real time.
	TimeScale float64 `json:"time_scale,omitempty"`
}

// PrefillConfig chooses how prompts enter the batch.
type PrefillConfig struct {
	// Chunked splits prefills into chunks so that each step holds at most
	// TokenBudget tokens (decodes count one each), like vLLM V1's
	// max_num_batched_tokens; otherwise a prompt is prefilled whole in one
	// step alongside the decodes.
	Chunked     bool `json:"chunked"`
	TokenBudget int  `json:"token_budget,omitempty"`
}

// KVConfig is the KV-cache budget.
type KVConfig struct {
	// Blocks is the number of KV blocks (0 = unlimited, no preemption).
	Blocks    int `json:"blocks,omitempty"`
	BlockSize int `json:"block_size,omitempty"` // tokens per block, default 16
	// Swap preempts by swapping the victim's blocks to host memory instead
	// of dropping them and recomputing.
	Swap bool `json:"swap"`
	// SwapPerBlock is the transfer time of one block each way.
	SwapPerBlock time.Duration `json:"swap_per_block,omitempty"`
}

// GCConfig describes stop-the-world pauses of the engine process.
type GCConfig struct {
	// Period between pauses (0 = no GC); Jitter spreads it uniformly
	// (±Jitter); Random draws exponential intervals of mean Period instead.
	Period time.Duration `json:"period,omitempty"`
	Jitter time.Duration `json:"jitter,omitempty"`
	Random bool          `json:"random,omitempty"`
	// Pause length, uniform in [MinPause, MaxPause].
	MinPause time.Duration `json:"min_pause,omitempty"`
	MaxPause time.Duration `json:"max_pause,omitempty"`
}

// WarmupConfig makes the first requests slower (cold start).
type WarmupConfig struct {
	// Requests is how many requests count as cold; while any of them is
	// running, steps are Slowdown times dearer (0.4 = 40 % slower).
	Requests int     `json:"requests,omitempty"`
	Slowdown float64 `json:"slowdown,omitempty"`
}

func (c *Config) setDefaults() error {
	if c.Instance == "" {
		c.Instance = "sim-0"
	}
	if c.Model == "" {
		c.Model = "sim-llama"
	}
	if c.Profile.Fixed <= 0 {
		return errors.New("sim: profile has no fixed step cost")
	}
	if c.Profile.MaxContext <= 0 {
		c.Profile.MaxContext = 8192
	}
	if c.MaxRunning <= 0 {
		c.MaxRunning = 64
	}
	if c.Prefill.Chunked && c.Prefill.TokenBudget <= 0 {
		c.Prefill.TokenBudget = 512
	}
	if c.KV.BlockSize <= 0 {
		c.KV.BlockSize = 16
	}
	if c.KV.Blocks > 0 && c.KV.Blocks*c.KV.BlockSize < c.Profile.MaxContext {
		// A request must fit the cache alone, or it could never run.
		c.Profile.MaxContext = c.KV.Blocks * c.KV.BlockSize
	}
	if c.GC.Period > 0 && c.GC.MaxPause < c.GC.MinPause {
		c.GC.MaxPause = c.GC.MinPause
	}
	if c.LongContext <= 0 {
		c.LongContext = 1000
	}
	if c.TimeScale <= 0 {
		c.TimeScale = 1
	}
	return nil
}
