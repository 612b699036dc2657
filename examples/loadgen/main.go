// Command loadgen sends a seeded mix of streamed OpenAI-compatible requests
// to a gateway (or an engine) and reports, measured on the client side,
// time to first token, time per output token, inter-token latency and
// end-to-end latency in the style of vLLM's benchmark, overall and per
// request type.
//
//	go run ./examples/loadgen -url http://127.0.0.1:8080 -rate 5 -n 200 -duration 60s \
//	    -mix qa=0.7,analysis=0.25,intruder=0.05 -seed 1
//
// Built-in request types (pick and weigh them with -mix):
//
//	qa        50 prompt tokens, 100 output tokens
//	analysis  800 prompt tokens, 400 output tokens
//	intruder  3000 prompt tokens, 50 output tokens (long prefill)
//
// The run stops at the first of -n requests and -duration; at least one
// must be set. An interrupt (Ctrl-C) stops the arrivals, waits for the
// requests in flight and prints the summary; a second one aborts them.
// It exits non-zero on a bad flag or when no request succeeded. Prompts are
// filler text made from -seed; no prompt or answer text is ever printed.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"

	"golang.org/x/term"

	"github.com/tokentrace/tokentrace/internal/loadgen"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if err != nil {
		fmt.Fprintln(os.Stderr, "loadgen:", err)
		os.Exit(1)
	}
}

// headerFlag collects repeated -H "Name: value" flags.
type headerFlag map[string]string

func (h headerFlag) String() string {
	names := make([]string, 0, len(h))
	for k := range h {
		names = append(names, k+": …") // values (keys, tokens) are never printed
	}
	return strings.Join(names, ", ")
}

func (h headerFlag) Set(s string) error {
	name, value, ok := strings.Cut(s, ":")
	name = strings.TrimSpace(name)
	if !ok || name == "" {
		return errors.New(`want "Name: value"`)
	}
	h[http.CanonicalHeaderKey(name)] = strings.TrimSpace(value)
	return nil
}

// run is the whole program: it parses args, runs the load and writes the
// summary to stdout. Cancelling ctx stops the arrivals and waits for the
// requests in flight.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	def := loadgen.DefaultConfig()
	fs := flag.NewFlagSet("loadgen", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		baseURL     = fs.String("url", def.BaseURL, "base URL of the OpenAI-compatible server")
		rate        = fs.Float64("rate", def.Rate, "mean arrival rate in requests/s (inf: all at once, a closed loop under -concurrency)")
		arrival     = fs.String("arrival", def.Arrival, "arrival process: poisson or fixed")
		concurrency = fs.Int("concurrency", def.Concurrency, "most requests in flight; arrivals wait for a place (0: no limit)")
		requests    = fs.Int("n", def.Requests, "stop after this many requests (0: no count bound)")
		duration    = fs.Duration("duration", 0, "send no request after this long (0: no time bound)")
		seed        = fs.Uint64("seed", def.Seed, "seed of the arrival times, the mix and the prompts")
		usage       = fs.Bool("usage", def.IncludeUsage, "ask streamed answers for a usage chunk (stream_options.include_usage)")
		mix         = fs.String("mix", "qa=0.7,analysis=0.25,intruder=0.05", "request types and weights, name=weight,...; built-in: qa, analysis, intruder")
		model       = fs.String("model", loadgen.DefaultModel, "model name sent with every request")
		stream      = fs.Bool("stream", true, "stream the answers (false: latency and usage only)")
		endpoint    = fs.String("endpoint", loadgen.EndpointChat, "chat (/v1/chat/completions) or completions (/v1/completions)")
		timeout     = fs.Duration("timeout", 0, "timeout of each request (0: none)")
		progress    = fs.Bool("progress", true, "show a progress bar on stderr when it is a terminal")
		jsonPath    = fs.String("json", "", "write the JSON summary to this file (-: to stdout, instead of the text)")
		recordsPath = fs.String("records", "", "write every request's measurements as JSON lines to this file")
		headers     = headerFlag{}
	)
	fs.Var(headers, "H", `header "Name: value" sent with every request (repeatable; never printed)`)
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return nil
		}
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	types, err := loadgen.ParseMix(*mix, loadgen.BuiltinTypes())
	if err != nil {
		return err
	}
	for i := range types {
		types[i].Model, types[i].Stream, types[i].Endpoint = *model, *stream, *endpoint
	}
	cfg := loadgen.Config{
		BaseURL: *baseURL, Types: types, Rate: *rate, Arrival: *arrival,
		Concurrency: *concurrency, Requests: *requests, Duration: *duration, Seed: *seed,
		IncludeUsage: *usage, Headers: headers,
	}
	if *timeout > 0 {
		cfg.Client = &http.Client{Timeout: *timeout}
	}
	if *progress {
		cfg.Progress = stderr
	}
	if math.IsNaN(cfg.Rate) {
		return errors.New("-rate: not a number")
	}
	// Validate before starting anything (Schedule checks all but bounds).
	if _, err := loadgen.Schedule(cfg, 0); err != nil {
		return err
	}
	if cfg.Requests <= 0 && cfg.Duration <= 0 {
		return errors.New("set -n or -duration: the run must be bounded")
	}

	// The first interrupt (ctx) stops the arrivals; a second aborts the
	// requests in flight.
	hard, abort := context.WithCancel(context.WithoutCancel(ctx))
	defer abort()
	cfg.Stop = ctx.Done()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		select {
		case <-ctx.Done():
		case <-hard.Done():
		}
		if hard.Err() != nil {
			return
		}
		if f, ok := stderr.(*os.File); ok && *progress && term.IsTerminal(int(f.Fd())) {
			fmt.Fprintln(stderr) // below the progress bar
		}
		fmt.Fprintln(stderr, "loadgen: stopping: no new requests; waiting for those in flight (interrupt again to abort them)")
		sig, stop := signal.NotifyContext(hard, os.Interrupt, syscall.SIGTERM)
		defer stop()
		<-sig.Done()
		abort()
	}()
	res, err := loadgen.Run(hard, cfg)
	abort()
	wg.Wait()
	if err != nil {
		return err
	}

	sum := res.Summary()
	if *jsonPath == "-" {
		err = sum.WriteJSON(stdout)
	} else {
		err = sum.WriteText(stdout)
		if err == nil && *jsonPath != "" {
			err = writeFile(*jsonPath, sum.WriteJSON)
		}
	}
	if err == nil && *recordsPath != "" {
		err = writeFile(*recordsPath, res.WriteRecordsJSON)
	}
	if err != nil {
		return err
	}
	switch {
	case sum.Requests == 0:
		return errors.New("no request was sent")
	case sum.Successful == 0 && sum.Failed > 0:
		return fmt.Errorf("all %d requests failed (first error: %s)", sum.Failed, sum.Errors[0].Message)
	case sum.Successful == 0:
		return errors.New("no request succeeded")
	}
	return nil
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
