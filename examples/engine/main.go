// Command engine is a simulated continuous-batching LLM engine behind an
// OpenAI-compatible API: a stand-in for vLLM or llama.cpp that produces,
// in real time, the slow-downs tokentrace explains, and writes down which
// one it injected where (the ground truth).
//
//	go run ./examples/engine -scenario prefill-chunked -truth truth.jsonl
//	go run ./examples/engine -profile fast -gc-period 2s -gc-min 100ms -gc-max 250ms
//
// It serves POST /v1/chat/completions and /v1/completions (streamed or
// not), GET /v1/models, GET /metrics (vLLM's metric names) and GET
// /health, and prints "listening on ADDR" as its first line on stdout.
//
// -scenario takes the engine configuration of a built-in scenario (see
// docs/simulator.md) or of a scenario JSON file; without it the engine runs
// the 13b profile with no injected effect. Every effect flag that is set
// overrides the scenario. The engine instance is named by -instance, by
// default the address it listens on, which is what the gateway's
// instrument.Transport calls it, so that -truth records and spans agree.
//
// On SIGINT or SIGTERM it stops accepting requests, lets the streams in
// flight finish (at most -shutdown-timeout), then stops; a second signal
// kills it at once.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"github.com/tokentrace/tokentrace/internal/scenario"
	"github.com/tokentrace/tokentrace/internal/sim"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	go func() { <-ctx.Done(); stop() }() // a second signal kills at once
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "engine:", err)
		os.Exit(1)
	}
}

// Defaults without a scenario.
const (
	defaultAddr            = "127.0.0.1:8000"
	defaultProfile         = "13b"
	defaultShutdownTimeout = 10 * time.Second
)

// options are the flags that are not engine configuration.
type options struct {
	addr, scenario, profile, truth string
	spikes                         bool
	shutdownTimeout                time.Duration
}

// define declares every flag on fs, bound to o and c, with their current
// values as defaults.
func define(fs *flag.FlagSet, o *options, c *sim.Config) {
	fs.StringVar(&o.addr, "addr", o.addr, "listen address (host:port; port 0 picks a free one)")
	fs.StringVar(&o.scenario, "scenario", o.scenario, "take the engine configuration of a scenario: a built-in name ("+strings.Join(scenario.Names(), ", ")+") or a JSON file")
	fs.StringVar(&o.profile, "profile", o.profile, "step-time profile: "+strings.Join(sim.ProfileNames(), ", "))
	fs.BoolVar(&o.spikes, "spikes", o.spikes, "keep the profile's rare slow steps (off: only the injected effects slow tokens down)")
	fs.StringVar(&o.truth, "truth", o.truth, "write the ground truth, one JSON line per finished request, to this file")
	fs.DurationVar(&o.shutdownTimeout, "shutdown-timeout", o.shutdownTimeout, "on SIGINT/SIGTERM, how long streams in flight may take to finish")

	fs.StringVar(&c.Model, "model", c.Model, "model name served")
	fs.StringVar(&c.Instance, "instance", c.Instance, "engine instance name in the ground truth (default: the listen address)")
	fs.IntVar(&c.MaxRunning, "max-running", c.MaxRunning, "most sequences in one batch (vLLM max_num_seqs; 0: 64)")
	fs.Uint64Var(&c.Seed, "seed", c.Seed, "seed of the step noise, spikes and GC timing")
	fs.Float64Var(&c.TimeScale, "time-scale", c.TimeScale, "multiply every simulated duration (0.1: ten times faster)")

	fs.BoolVar(&c.Prefill.Chunked, "chunked", c.Prefill.Chunked, "chunked prefill (vLLM V1): prompts enter the batch in chunks")
	fs.IntVar(&c.Prefill.TokenBudget, "token-budget", c.Prefill.TokenBudget, "with -chunked, most tokens in one step (max_num_batched_tokens; 0: 512)")
	fs.IntVar(&c.KV.Blocks, "kv-blocks", c.KV.Blocks, "KV-cache blocks; a full cache preempts the newest request (0: unlimited)")
	fs.IntVar(&c.KV.BlockSize, "kv-block-size", c.KV.BlockSize, "tokens per KV block (0: 16)")
	fs.BoolVar(&c.KV.Swap, "swap", c.KV.Swap, "preempt by swapping blocks to host memory (vLLM V0) instead of recompute")
	fs.DurationVar(&c.KV.SwapPerBlock, "swap-per-block", c.KV.SwapPerBlock, "with -swap, transfer time of one block each way")
	fs.DurationVar(&c.GC.Period, "gc-period", c.GC.Period, "stop-the-world GC pause every this long (0: no GC)")
	fs.DurationVar(&c.GC.Jitter, "gc-jitter", c.GC.Jitter, "spread the GC period uniformly by ± this")
	fs.BoolVar(&c.GC.Random, "gc-random", c.GC.Random, "draw exponential GC intervals of mean -gc-period instead")
	fs.DurationVar(&c.GC.MinPause, "gc-min", c.GC.MinPause, "shortest GC pause")
	fs.DurationVar(&c.GC.MaxPause, "gc-max", c.GC.MaxPause, "longest GC pause")
	fs.IntVar(&c.Warmup.Requests, "warmup-requests", c.Warmup.Requests, "the first this many requests are cold")
	fs.Float64Var(&c.Warmup.Slowdown, "warmup-slowdown", c.Warmup.Slowdown, "steps are this much dearer while a cold request runs (0.4: 40 % slower)")
}

// parseFlags returns the engine configuration and the other options.
// Flags are parsed twice: once to find -scenario, then over the scenario's
// configuration, so that only the flags given override it.
func parseFlags(args []string, stderr io.Writer) (sim.Config, options, error) {
	o := options{addr: defaultAddr, profile: defaultProfile, shutdownTimeout: defaultShutdownTimeout}
	cfg := sim.Config{Model: "sim-llama", Seed: 1, TimeScale: 1}
	fs := flag.NewFlagSet("engine", flag.ContinueOnError)
	fs.SetOutput(stderr)
	first, firstCfg := o, cfg
	define(fs, &first, &firstCfg)
	if err := fs.Parse(args); err != nil {
		return cfg, o, err
	}
	if fs.NArg() > 0 {
		return cfg, o, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if first.scenario != "" {
		sc, err := scenario.Open(first.scenario)
		if err != nil {
			return cfg, o, err
		}
		cfg = sc.EngineConfig(0)
		cfg.Instance = "" // the listen address, unless -instance
		o.profile, o.spikes = sc.Engine.Profile, sc.Engine.Spikes
	}
	fs = flag.NewFlagSet("engine", flag.ContinueOnError)
	fs.SetOutput(io.Discard)
	define(fs, &o, &cfg)
	if err := fs.Parse(args); err != nil {
		return cfg, o, err
	}
	p, err := sim.LookupProfile(o.profile)
	if err != nil {
		return cfg, o, err
	}
	if !o.spikes {
		p.SpikeProb = 0
	}
	cfg.Profile = p
	return cfg, o, validate(cfg, o)
}

func validate(c sim.Config, o options) error {
	for _, v := range []struct {
		name string
		bad  bool
	}{
		{"-time-scale must be > 0", !(c.TimeScale > 0)},
		{"-max-running must be ≥ 0", c.MaxRunning < 0},
		{"-token-budget must be ≥ 0", c.Prefill.TokenBudget < 0},
		{"-kv-blocks must be ≥ 0", c.KV.Blocks < 0},
		{"-kv-block-size must be ≥ 0", c.KV.BlockSize < 0},
		{"-swap-per-block must be ≥ 0", c.KV.SwapPerBlock < 0},
		{"GC durations must be ≥ 0", min(c.GC.Period, c.GC.Jitter, c.GC.MinPause, c.GC.MaxPause) < 0},
		{"-gc-max must be ≥ -gc-min", c.GC.Period > 0 && c.GC.MaxPause < c.GC.MinPause},
		{"-warmup-requests and -warmup-slowdown must be ≥ 0", c.Warmup.Requests < 0 || !(c.Warmup.Slowdown >= 0)},
		{"-shutdown-timeout must be ≥ 0", o.shutdownTimeout < 0},
	} {
		if v.bad {
			return errors.New(v.name)
		}
	}
	return nil
}

// run is the whole program: it serves the engine until ctx is done.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	cfg, o, err := parseFlags(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return nil
	}
	if err != nil {
		return err
	}
	log := slog.New(slog.NewTextHandler(stderr, nil))

	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return err
	}
	defer ln.Close()
	if cfg.Instance == "" {
		cfg.Instance = ln.Addr().String()
	}
	var opts []sim.Option
	var truth *sim.TruthWriter
	if o.truth != "" {
		f, err := os.Create(o.truth)
		if err != nil {
			return err
		}
		defer f.Close()
		truth = sim.NewTruthWriter(f)
		opts = append(opts, sim.WithTruth(truth))
	}
	engine, err := sim.New(cfg, opts...)
	if err != nil {
		return err
	}
	engineCtx, stopEngine := context.WithCancel(context.Background())
	defer stopEngine()
	go engine.Run(engineCtx)

	srv := &http.Server{Handler: sim.NewServer(engine), ReadHeaderTimeout: 10 * time.Second}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ln) }()
	fmt.Fprintf(stdout, "listening on %s\n", ln.Addr())
	cfg = engine.Config()
	log.Info("engine ready", "addr", ln.Addr().String(), "instance", cfg.Instance, "model", cfg.Model,
		"profile", cfg.Profile.Name, "effects", effects(cfg), "time_scale", cfg.TimeScale)

	select {
	case err = <-served:
		// Serve failed before any shutdown.
	case <-ctx.Done():
		log.Info("shutting down: waiting for the streams in flight", "timeout", o.shutdownTimeout)
		sctx, cancel := context.WithTimeout(context.Background(), o.shutdownTimeout)
		if err = srv.Shutdown(sctx); err != nil {
			log.Warn("streams still in flight at the timeout; cutting them", "err", err)
			err = srv.Close()
		}
		cancel()
	}
	stopEngine()
	engine.Wait()
	if truth != nil {
		err = errors.Join(err, truth.Err())
		log.Info("ground truth written", "file", o.truth, "records", len(truth.Records()))
	}
	return err
}

// effects describes what the engine injects, for the log.
func effects(c sim.Config) string {
	var e []string
	if c.Prefill.Chunked {
		e = append(e, fmt.Sprintf("chunked prefill (%d tokens/step)", c.Prefill.TokenBudget))
	} else {
		// Itself an effect: a newcomer's whole prompt stalls the batch.
		e = append(e, "unchunked prefill (a newcomer's whole prompt in one step)")
	}
	if c.KV.Blocks > 0 {
		mode := "recompute"
		if c.KV.Swap {
			mode = fmt.Sprintf("swap %v/block", c.KV.SwapPerBlock)
		}
		e = append(e, fmt.Sprintf("KV cache %d×%d tokens (%s)", c.KV.Blocks, c.KV.BlockSize, mode))
	}
	if c.GC.Period > 0 {
		every := c.GC.Period.String()
		if c.GC.Random {
			every = "~" + every + " (exponential)"
		} else if c.GC.Jitter > 0 {
			every += "±" + c.GC.Jitter.String()
		}
		e = append(e, fmt.Sprintf("GC pauses %v–%v every %s", c.GC.MinPause, c.GC.MaxPause, every))
	}
	if c.Warmup.Requests > 0 && c.Warmup.Slowdown > 0 {
		e = append(e, fmt.Sprintf("warm-up: first %d requests %+.0f%%", c.Warmup.Requests, 100*c.Warmup.Slowdown))
	}
	if c.Profile.SpikeProb > 0 {
		e = append(e, fmt.Sprintf("spikes (%.1f%% of steps ×%g)", 100*c.Profile.SpikeProb, c.Profile.SpikeFactor))
	}
	return strings.Join(e, ", ")
}
