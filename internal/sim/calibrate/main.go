// Command calibrate measures the simulator's built-in profiles in real time
// (TimeScale 1) and prints the figures that docs/simulator.md compares with
// the measurements each profile was calibrated against:
//
//	go run ./internal/sim/calibrate
//
// For every profile: the steady decode time per token with 1 and 4
// sequences (median gap over output tokens 10–110 of a 16-token prompt),
// and the time to first token of a 1,000-token prompt on an idle engine
// (one step: prefill of 1k tokens). For llamacpp-cpu, the real engine's
// experiments of shared/data/realengine: 3 streams as their context grows,
// and a 1,442-token intruder arriving while they decode. For fast, the
// mixed scenario's load (two instances, chunked prefill, KV pressure,
// engine GC, cold start) with the profile's spikes on, through the
// in-process gateway, measured by the load generator like vLLM's
// benchmark: TPOT per request and ITL pooled over every gap.
//
// Each measurement is the model's noiseless step cost ("model") beside
// what the engine actually produced on this machine ("measured"). It takes
// about a minute and needs an otherwise idle machine.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"slices"
	"text/tabwriter"
	"time"

	"go.opentelemetry.io/otel/trace"
	"go.opentelemetry.io/otel/trace/noop"

	"github.com/tokentrace/tokentrace/internal/loadgen"
	"github.com/tokentrace/tokentrace/internal/scenario"
	"github.com/tokentrace/tokentrace/internal/sim"
	"github.com/tokentrace/tokentrace/internal/stack"
)

func main() {
	requests := flag.Int("n", 0, "requests of the fast/mixed load (0: the scenario's 60)")
	mixed := flag.Bool("mixed", true, "run the fast profile on the mixed scenario's load (about 25 s)")
	flag.Parse()
	if err := run(os.Stdout, *requests, *mixed); err != nil {
		fmt.Fprintln(os.Stderr, "calibrate:", err)
		os.Exit(1)
	}
}

func run(w io.Writer, requests int, mixed bool) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "profile\tdecode 1 seq model\tmeasured\tdecode 4 seq model\tmeasured\tprefill 1k model\tmeasured\t")
	busy := false
	off := func(model, measured time.Duration) {
		busy = busy || float64(measured) > 1.15*float64(model)
	}
	for _, name := range sim.ProfileNames() {
		p, _ := sim.LookupProfile(name)
		one, err := decode(p, 1, 16, 110)
		if err != nil {
			return err
		}
		four, err := decode(p, 4, 16, 110)
		if err != nil {
			return err
		}
		pre, err := prefill(p, 1000)
		if err != nil {
			return err
		}
		m1, m4, mp := cost(p, 1, 0, 1*(16+60)), cost(p, 4, 0, 4*(16+60)), cost(p, 0, 1000, 0)
		d1, d4 := median(one, 10, 110), median(four, 10, 110)
		off(m1, d1)
		off(m4, d4)
		off(mp, pre)
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", name, msf(m1), msf(d1), msf(m4), msf(d4), msf(mp), msf(pre))
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	fmt.Fprintln(w, "(ms; decode: median gap of tokens 10-110, model at the mean context; prefill: TTFT of a 1k-token prompt alone)")
	if busy {
		fmt.Fprintln(w, "WARNING: some step times are over 15 % above the model: the machine is busy, the figures below are not reliable")
	}

	if err := realEngine(w); err != nil {
		return err
	}
	if mixed {
		return fastMixed(w, requests)
	}
	return nil
}

// realEngine repeats the llama.cpp experiments of shared/data/realengine on
// the llamacpp-cpu profile.
func realEngine(w io.Writer) error {
	p, _ := sim.LookupProfile("llamacpp-cpu")
	three, err := decode(p, 3, 8, 400)
	if err != nil {
		return err
	}
	fmt.Fprintf(w, "\nllamacpp-cpu, 3 streams of 400 tokens: median gap %s ms over tokens 0-100, %s ms over 300-400 (real engine: 11.6 -> 22.6)\n",
		msf(median(three, 1, 100)), msf(median(three, 300, 400)))

	// Three background streams decode; a 1,442-token prompt arrives after
	// 60 of their tokens.
	e, stop, err := start(p)
	if err != nil {
		return err
	}
	defer stop()
	var bgs []*sim.Request
	for range 3 {
		r, err := e.Submit(8, 300, trace.TraceID{})
		if err != nil {
			return err
		}
		bgs = append(bgs, r)
	}
	head := collectN(bgs[0], 60)
	sent := time.Now()
	in, err := e.Submit(1442, 100, trace.TraceID{})
	if err != nil {
		return err
	}
	intruder := collect(in)
	bg := append(head, collect(bgs[0])...)
	for _, r := range bgs[1:] {
		collect(r)
	}
	ttft := intruder[0].Sub(sent)
	var gap, before, during []time.Duration
	for i := 1; i < len(bg); i++ {
		d := bg[i].Sub(bg[i-1])
		switch {
		case !bg[i].Before(intruder[0]) && bg[i-1].Before(intruder[0]):
			gap = append(gap, d) // the gap that holds the prefill
		case bg[i].Before(sent) && i > 30:
			before = append(before, d)
		case bg[i-1].After(intruder[0]) && !bg[i].After(intruder[len(intruder)-1]):
			during = append(during, d)
		}
	}
	slowdown := float64(med(during)) / float64(med(before))
	fmt.Fprintf(w, "llamacpp-cpu, 1,442-token intruder while 3 streams decode: intruder TTFT %s ms, background gap %s ms (real: one gap of ~1050 ms = the TTFT);\n",
		msf(ttft), msf(slices.Max(gap)))
	fmt.Fprintf(w, "  background median gap %s ms before, %s ms while the intruder decodes: %.1fx (real: 10-15 -> 29-49 ms, 2.5-3.5x)\n",
		msf(med(before)), msf(med(during)), slowdown)
	return nil
}

// fastMixed runs the mixed scenario's load on the fast profile with spikes.
func fastMixed(w io.Writer, requests int) error {
	sc, err := scenario.Builtin("mixed")
	if err != nil {
		return err
	}
	sc.Engine.Profile, sc.Engine.Spikes, sc.TimeScale = "fast", true, 1
	if requests > 0 {
		sc.Load.Requests = requests
		sc.Load.Duration = 0
	}
	ctx := context.Background()
	st, err := stack.Start(ctx, stack.Options{Scenario: sc, TracerProvider: noop.NewTracerProvider()})
	if err != nil {
		return err
	}
	res, err := st.RunLoad(ctx, nil)
	if cerr := st.Close(ctx); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	sum := res.Summary()
	fmt.Fprintf(w, "\nfast profile with spikes, mixed scenario load (%d requests, %d ok, %d output tokens):\n", sum.Requests, sum.Successful, sum.OutputTokens)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "ms\tmean\tmedian\tP99\tP99.99\tmax\tn\t")
	row := func(name string, s loadgen.Stats) {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%d\t\n", name, msf(s.Mean), msf(s.Median), msf(s.P99), msf(s.P9999), msf(s.Max), s.Count)
	}
	row("TPOT per request", sum.TPOT)
	row("ITL pooled", sum.ITL)
	fmt.Fprintln(tw, "seed report\t3.47\t1.60\t12.88\t120.22\t\t\t")
	return tw.Flush()
}

// start runs an engine on profile p in real time.
func start(p sim.Profile) (*sim.Engine, func(), error) {
	e, err := sim.New(sim.Config{Profile: p, Seed: 1})
	if err != nil {
		return nil, nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	go e.Run(ctx)
	return e, func() { cancel(); e.Wait() }, nil
}

// decode runs n sequences of the given prompt and output sizes, admitted
// in the same step, and returns their token times.
func decode(p sim.Profile, n, prompt, tokens int) ([][]time.Time, error) {
	e, stop, err := start(p)
	if err != nil {
		return nil, err
	}
	defer stop()
	var rs []*sim.Request
	for range n {
		r, err := e.Submit(prompt, tokens, trace.TraceID{})
		if err != nil {
			return nil, err
		}
		rs = append(rs, r)
	}
	var out [][]time.Time
	for _, r := range rs {
		out = append(out, collect(r))
	}
	return out, nil
}

// prefill returns the time to the first token of a prompt on an idle
// engine: one step that prefills it whole.
func prefill(p sim.Profile, prompt int) (time.Duration, error) {
	e, stop, err := start(p)
	if err != nil {
		return 0, err
	}
	defer stop()
	var ds []time.Duration
	for range 9 {
		t0 := time.Now()
		r, err := e.Submit(prompt, 1, trace.TraceID{})
		if err != nil {
			return 0, err
		}
		ds = append(ds, collect(r)[0].Sub(t0))
	}
	return med(ds), nil
}

func collect(r *sim.Request) []time.Time {
	var ts []time.Time
	for t := range r.Tokens {
		ts = append(ts, t.Time)
	}
	return ts
}

func collectN(r *sim.Request, n int) []time.Time {
	var ts []time.Time
	for t := range r.Tokens {
		ts = append(ts, t.Time)
		if len(ts) == n {
			break
		}
	}
	return ts
}

// median is the median gap of tokens [lo, hi) over every sequence; gap i
// is t_i − t_{i−1}.
func median(seqs [][]time.Time, lo, hi int) time.Duration {
	var gaps []time.Duration
	for _, ts := range seqs {
		for i := max(lo, 1); i < min(hi, len(ts)); i++ {
			gaps = append(gaps, ts[i].Sub(ts[i-1]))
		}
	}
	return med(gaps)
}

func med(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	s := slices.Clone(d)
	slices.Sort(s)
	return loadgen.Percentile(s, 50)
}

// cost is the profile's noiseless step cost, as the engine computes it.
func cost(p sim.Profile, decodes, prefillTokens, contextTokens int) time.Duration {
	return p.StepCost(decodes, prefillTokens, contextTokens)
}

func msf(d time.Duration) string { return fmt.Sprintf("%.2f", float64(d)/float64(time.Millisecond)) }
