package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"time"

	"github.com/tokentrace/tokentrace/analyzer"
	"github.com/tokentrace/tokentrace/analyzer/report"
	"github.com/tokentrace/tokentrace/analyzer/source"
)

// command is one subcommand; the table below is the only list of them.
type command struct {
	name  string
	args  string
	short string
	run   func(ctx context.Context, args []string, stdout, stderr io.Writer) error
}

func commands() []command {
	return []command{
		{"demo", "[flags]", "run a simulated engine, the instrumented gateway and a load, and explain the slow requests (no Jaeger needed)", runDemo},
		{"analyze", "--file F... [flags]", "find the degraded requests of trace files and name their causes", runAnalyze},
		{"trace", "TRACE_ID --file F... [flags]", "explain one request in depth", runTrace},
		{"stats", "--file F... [--by model,prompt_type,instance]", "TTFT, TPOT and ITL statistics by dimension, and the distortion checks", runStats},
		{"version", "", "print the version", func(_ context.Context, _ []string, stdout, _ io.Writer) error {
			_, err := fmt.Fprintln(stdout, "tokentrace", version)
			return err
		}},
	}
}

const version = "0.1.0"

var errHelp = errors.New("help shown")

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		usage(stderr)
		return usageError{"no command"}
	}
	name, rest := args[0], args[1:]
	if name == "help" || name == "-h" || name == "--help" {
		if len(rest) > 0 {
			return run(ctx, []string{rest[0], "-h"}, stdout, stderr)
		}
		usage(stdout)
		return nil
	}
	for _, c := range commands() {
		if c.name == name {
			return c.run(ctx, rest, stdout, stderr)
		}
	}
	return usageError{fmt.Sprintf("unknown command %q", name)}
}

func usage(w io.Writer) {
	fmt.Fprintln(w, "tokentrace explains why streamed LLM responses slowed down mid-generation.\n\nUsage: tokentrace COMMAND [flags]\n\nCommands:")
	for _, c := range commands() {
		fmt.Fprintf(w, "  %-8s %s\n", c.name, c.short)
	}
	fmt.Fprintln(w, "\nExit status: 0 success, 1 error, 2 bad usage, 3 a gate failed (--fail-on-degraded, --max-p99-tpot).")
}

// stringList is a repeatable flag that also splits on commas.
type stringList []string

func (s *stringList) String() string { return strings.Join(*s, ",") }

func (s *stringList) Set(v string) error {
	for _, p := range strings.Split(v, ",") {
		if p = strings.TrimSpace(p); p != "" {
			*s = append(*s, p)
		}
	}
	return nil
}

// common holds the flags shared by analyze, trace and stats.
type common struct {
	files       stringList
	format      string
	out         string
	by          stringList
	sensitivity float64
	jaegerUI    string
	detail      int
	cold        int
	failOn      bool
	maxP99TPOT  float64
}

func (c *common) register(fs *flag.FlagSet, defFormat string) {
	fs.Var(&c.files, "file", "trace file (OTLP JSON or protobuf, Jaeger UI JSON); repeatable")
	fs.StringVar(&c.format, "format", defFormat, "output format: text, json, md or html")
	fs.StringVar(&c.out, "out", "", "write the report to this file instead of stdout")
	fs.Var(&c.by, "by", "group statistics by these dimensions: model, model_version, prompt_type, instance, context, warmth")
	fs.Float64Var(&c.sensitivity, "sensitivity", 1, "detector sensitivity: higher finds smaller and shorter slow-downs")
	fs.StringVar(&c.jaegerUI, "jaeger-ui", "", "Jaeger UI base URL: link each request to <URL>/trace/<id>")
	fs.IntVar(&c.detail, "detail", 10, "how many of the worst requests to show in depth")
	fs.IntVar(&c.cold, "cold", 100, "the first N requests of each instance count as cold (warm-up)")
	fs.BoolVar(&c.failOn, "fail-on-degraded", false, "exit with status 3 if any request is degraded (a CI gate)")
	fs.Float64Var(&c.maxP99TPOT, "max-p99-tpot", 0, "exit with status 3 if P99 TPOT exceeds this many milliseconds (0: off)")
}

func parse(fs *flag.FlagSet, args []string) error {
	fs.SetOutput(io.Discard)
	err := fs.Parse(args)
	if errors.Is(err, flag.ErrHelp) {
		return errHelp
	}
	if err != nil {
		return usageError{err.Error()}
	}
	return nil
}

func (c *common) config() (analyzer.Config, error) {
	cfg := analyzer.DefaultConfig()
	if c.sensitivity <= 0 {
		return cfg, usageError{"--sensitivity must be > 0"}
	}
	switch c.format {
	case "text", "json", "md", "html":
	default:
		return cfg, usageError{fmt.Sprintf("unknown --format %q (text, json, md, html)", c.format)}
	}
	cfg.Detect.Sensitivity = c.sensitivity
	cfg.JaegerUI = strings.TrimRight(c.jaegerUI, "/")
	cfg.Detail = c.detail
	cfg.Stats.ColdRequests = c.cold
	if len(c.by) > 0 {
		cfg.GroupBy = c.by
	}
	return cfg, nil
}

func (c *common) source(args []string) (source.Source, string, error) {
	files := append(append([]string(nil), c.files...), args...)
	if len(files) == 0 {
		return nil, "", usageError{"no input: give --file FILE (Jaeger sources: --jaeger, coming with the Jaeger issue)"}
	}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			return nil, "", err
		}
	}
	return source.Files(files, nil), strings.Join(files, ", "), nil
}

// output writes rpt in the chosen format, to --out or stdout, then
// applies the gates.
func (c *common) output(rpt *report.Report, stdout io.Writer, opts report.Options) error {
	w := stdout
	if c.out != "" {
		f, err := os.Create(c.out)
		if err != nil {
			return err
		}
		defer f.Close()
		w = f
	}
	opts.JaegerUI = c.jaegerUI
	if opts.MaxRequests == 0 {
		opts.MaxRequests = c.detail
	}
	if err := report.Write(w, rpt, c.format, opts); err != nil {
		return err
	}
	if c.out != "" {
		if f, ok := w.(*os.File); ok {
			if err := f.Close(); err != nil {
				return err
			}
		}
	}
	return c.gates(rpt)
}

func (c *common) gates(rpt *report.Report) error {
	if c.failOn && rpt.Summary.DegradedRequests > 0 {
		return gateError{fmt.Sprintf("%d of %d requests degraded", rpt.Summary.DegradedRequests, rpt.Summary.Requests)}
	}
	if c.maxP99TPOT > 0 && rpt.Summary.TPOT.P99 > c.maxP99TPOT {
		return gateError{fmt.Sprintf("P99 TPOT %.2f ms exceeds %.2f ms", rpt.Summary.TPOT.P99, c.maxP99TPOT)}
	}
	return nil
}

func runAnalyze(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("analyze", flag.ContinueOnError)
	var c common
	c.register(fs, "text")
	if err := parse(fs, args); err != nil {
		return helpOr(err, fs, stdout, "analyze --file F... [flags]")
	}
	cfg, err := c.config()
	if err != nil {
		return err
	}
	src, desc, err := c.source(fs.Args())
	if err != nil {
		return err
	}
	cfg.Source = desc
	rpt, err := analyzer.Analyze(ctx, src, cfg)
	if err != nil {
		return err
	}
	return c.output(rpt, stdout, report.Options{Color: isTerminal(stdout)})
}

func runTrace(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("trace", flag.ContinueOnError)
	var c common
	c.register(fs, "text")
	// The trace id may come before the flags.
	var id string
	if len(args) > 0 && !strings.HasPrefix(args[0], "-") {
		id, args = args[0], args[1:]
	}
	if err := parse(fs, args); err != nil {
		return helpOr(err, fs, stdout, "trace TRACE_ID --file F... [flags]")
	}
	rest := fs.Args()
	if id == "" && len(rest) > 0 {
		id, rest = rest[0], rest[1:]
	}
	if id == "" {
		return usageError{"trace: give a TRACE_ID"}
	}
	id = strings.ToLower(id)
	cfg, err := c.config()
	if err != nil {
		return err
	}
	src, desc, err := c.source(rest)
	if err != nil {
		return err
	}
	cfg.Source = desc
	cfg.Focus = id
	// Every request is analysed: the others are the cross-trace evidence.
	rpt, err := analyzer.Analyze(ctx, src, cfg)
	if err != nil {
		return err
	}
	var one []report.Request
	for _, r := range rpt.Requests {
		if r.TraceID == id {
			one = append(one, r)
		}
	}
	if len(one) == 0 {
		return fmt.Errorf("trace %s: not found among the %d requests of %s", id, len(rpt.Requests), desc)
	}
	rpt.Requests = one
	return c.output(rpt, stdout, report.Options{Color: isTerminal(stdout), MaxRequests: len(one), RequestsOnly: true})
}

func runStats(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("stats", flag.ContinueOnError)
	var c common
	c.register(fs, "text")
	if err := parse(fs, args); err != nil {
		return helpOr(err, fs, stdout, "stats --file F... [--by model,prompt_type,instance]")
	}
	cfg, err := c.config()
	if err != nil {
		return err
	}
	if len(c.by) == 0 {
		cfg.GroupBy = []string{"model", "prompt_type", "instance"}
	}
	src, desc, err := c.source(fs.Args())
	if err != nil {
		return err
	}
	cfg.Source = desc
	rpt, err := analyzer.Analyze(ctx, src, cfg)
	if err != nil {
		return err
	}
	rpt.Requests = nil
	return c.output(rpt, stdout, report.Options{Color: isTerminal(stdout), StatsOnly: true})
}

func helpOr(err error, fs *flag.FlagSet, stdout io.Writer, synopsis string) error {
	if !errors.Is(err, errHelp) {
		return err
	}
	fmt.Fprintf(stdout, "Usage: tokentrace %s %s\n\nFlags:\n", fs.Name(), strings.TrimPrefix(synopsis, fs.Name()+" "))
	fs.SetOutput(stdout)
	fs.PrintDefaults()
	return errHelp
}

func isTerminal(w io.Writer) bool {
	f, ok := w.(*os.File)
	if !ok {
		return false
	}
	st, err := f.Stat()
	return err == nil && st.Mode()&os.ModeCharDevice != 0
}

// sortedKeys is used by the demo's summary.
func sortedKeys(m map[string]int) []string {
	k := make([]string, 0, len(m))
	for s := range m {
		k = append(k, s)
	}
	sort.Strings(k)
	return k
}

var _ = time.Second
