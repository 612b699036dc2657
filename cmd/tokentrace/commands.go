package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strings"
	"time"

	"github.com/tokentrace/tokentrace/analyzer"
	"github.com/tokentrace/tokentrace/analyzer/model"
	"github.com/tokentrace/tokentrace/analyzer/report"
	"github.com/tokentrace/tokentrace/analyzer/source"
	"github.com/tokentrace/tokentrace/analyzer/source/jaegerquery"
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

	// Jaeger as the source.
	jaeger      string
	protocol    string
	service     string
	operation   string
	since       time.Duration
	start, end  string
	minDuration time.Duration
	limit       int
	model       string
	promptType  string
	instance    string
	timeout     time.Duration
	skips       *source.Skips
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
	fs.StringVar(&c.jaeger, "jaeger", "", "Jaeger query endpoint: host:16685 or grpc://host:16685 (gRPC api_v3, falling back to api_v2), http://host:16686 (HTTP api_v3, falling back to /api/traces); bearer token from $TOKENTRACE_JAEGER_TOKEN")
	fs.StringVar(&c.protocol, "jaeger-protocol", "auto", "force the Jaeger API: auto, v3, v2, http-v3, http-legacy")
	fs.StringVar(&c.service, "service", "", "Jaeger: the gateway's service name (required with --jaeger)")
	fs.StringVar(&c.operation, "operation", "", "Jaeger: span name, e.g. \"chat llama-3-8b\"")
	fs.DurationVar(&c.since, "since", time.Hour, "Jaeger: look back this far (ignored with --start)")
	fs.StringVar(&c.start, "start", "", "Jaeger: window start, RFC 3339")
	fs.StringVar(&c.end, "end", "", "Jaeger: window end, RFC 3339 (default now)")
	fs.DurationVar(&c.minDuration, "min-duration", 0, "Jaeger: only requests at least this long")
	fs.IntVar(&c.limit, "limit", 1000, "Jaeger: search depth per query window; full windows are split in time")
	fs.StringVar(&c.model, "model", "", "Jaeger: only requests for this model")
	fs.StringVar(&c.promptType, "prompt-type", "", "Jaeger: only requests of this prompt type")
	fs.StringVar(&c.instance, "instance", "", "Jaeger: only requests served by this engine instance")
	fs.DurationVar(&c.timeout, "timeout", 30*time.Second, "Jaeger: timeout of each query")
}

// query builds the Jaeger query of the flags.
func (c *common) query(ids []string) (jaegerquery.Query, error) {
	q := jaegerquery.Query{Service: c.service, Operation: c.operation, MinDuration: c.minDuration, Limit: c.limit, TraceIDs: ids}
	end := time.Now()
	if c.end != "" {
		t, err := time.Parse(time.RFC3339Nano, c.end)
		if err != nil {
			return q, usageError{"--end: " + err.Error()}
		}
		end = t
	}
	start := end.Add(-c.since)
	if c.start != "" {
		t, err := time.Parse(time.RFC3339Nano, c.start)
		if err != nil {
			return q, usageError{"--start: " + err.Error()}
		}
		start = t
	}
	if !start.Before(end) {
		return q, usageError{"the window's start is not before its end"}
	}
	q.Start, q.End = start, end
	attrs := map[string]string{}
	for k, v := range map[string]string{"model": c.model, "prompt_type": c.promptType, "instance": c.instance} {
		if v != "" {
			attrs[jaegerquery.AttributeKey(k)] = v
		}
	}
	if len(attrs) > 0 {
		q.Attributes = attrs
	}
	if len(ids) == 0 && q.Service == "" {
		return q, usageError{"--service is required with --jaeger"}
	}
	return q, nil
}

// jaegerClient connects to --jaeger.
func (c *common) jaegerClient(stderr io.Writer) (*jaegerquery.Client, error) {
	proto, err := jaegerquery.ParseProtocol(c.protocol)
	if err != nil {
		return nil, usageError{err.Error()}
	}
	c.skips = &source.Skips{}
	opts := []jaegerquery.Option{jaegerquery.WithProtocol(proto), jaegerquery.WithSkips(c.skips),
		jaegerquery.WithTimeout(c.timeout), jaegerquery.WithProgress(stderr)}
	if tok := os.Getenv("TOKENTRACE_JAEGER_TOKEN"); tok != "" {
		opts = append(opts, jaegerquery.WithBearerToken(tok))
	}
	return jaegerquery.New(c.jaeger, opts...)
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

func (c *common) source(args []string, stderr io.Writer) (source.Source, string, func(), error) {
	files := append(append([]string(nil), c.files...), args...)
	if c.jaeger != "" {
		if len(files) > 0 {
			return nil, "", nil, usageError{"give --jaeger or --file, not both"}
		}
		q, err := c.query(nil)
		if err != nil {
			return nil, "", nil, err
		}
		cl, err := c.jaegerClient(stderr)
		if err != nil {
			return nil, "", nil, err
		}
		desc := fmt.Sprintf("Jaeger %s, service %s, %s → %s", cl.Endpoint(), q.Service, q.Start.Format(time.RFC3339), q.End.Format(time.RFC3339))
		return cl.Source(q), desc, func() { cl.Close() }, nil
	}
	if len(files) == 0 {
		return nil, "", nil, usageError{"no input: give --file FILE or --jaeger ENDPOINT --service NAME"}
	}
	for _, f := range files {
		if _, err := os.Stat(f); err != nil {
			return nil, "", nil, err
		}
	}
	c.skips = &source.Skips{}
	return source.Files(files, c.skips), strings.Join(files, ", "), func() {}, nil
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
	src, desc, done, err := c.source(fs.Args(), stderr)
	if err != nil {
		return err
	}
	defer done()
	cfg.Source, cfg.Skips = desc, c.skips
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
	src, desc, done, err := c.traceSource(ctx, id, rest, stderr)
	if err != nil {
		return err
	}
	defer done()
	cfg.Source, cfg.Skips = desc, c.skips
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
	src, desc, done, err := c.source(fs.Args(), stderr)
	if err != nil {
		return err
	}
	defer done()
	cfg.Source, cfg.Skips = desc, c.skips
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

// traceSource is the source of "trace": from files, every request (the
// others are cross-trace evidence); from Jaeger, the trace itself and then
// every request of its service around its time.
func (c *common) traceSource(ctx context.Context, id string, files []string, stderr io.Writer) (source.Source, string, func(), error) {
	if c.jaeger == "" {
		return c.source(files, stderr)
	}
	cl, err := c.jaegerClient(stderr)
	if err != nil {
		return nil, "", nil, err
	}
	// First the trace alone, to learn its service and time.
	var svc string
	var first, last time.Time
	err = cl.Source(jaegerquery.Query{TraceIDs: []string{id}}).Spans(ctx, func(s *model.Span) error {
		if svc == "" {
			svc = s.Service
		}
		if first.IsZero() || s.Start.Before(first) {
			first = s.Start
		}
		if s.End.After(last) {
			last = s.End
		}
		return nil
	})
	if err != nil {
		cl.Close()
		return nil, "", nil, err
	}
	if c.service != "" {
		svc = c.service
	}
	// Requests that overlapped it on its instance explain it: pull a
	// window around it.
	margin := 2 * time.Minute
	q := jaegerquery.Query{Service: svc, Start: first.Add(-margin), End: last.Add(margin), Limit: c.limit}
	src := source.Dedup(source.Func(func(ctx context.Context, visit source.Visitor) error {
		if err := cl.Source(jaegerquery.Query{TraceIDs: []string{id}}).Spans(ctx, visit); err != nil {
			return err
		}
		return cl.Source(q).Spans(ctx, visit)
	}), c.skips)
	desc := fmt.Sprintf("Jaeger %s, trace %s and service %s ±%v around it", cl.Endpoint(), id, svc, margin)
	return src, desc, func() { cl.Close() }, nil
}
