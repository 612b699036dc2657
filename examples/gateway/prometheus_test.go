package main

import (
	"cmp"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	"github.com/prometheus/prometheus/model/exemplar"
	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/model/textparse"
	"github.com/prometheus/prometheus/promql/parser"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"go.yaml.in/yaml/v3"

	"github.com/tokentrace/tokentrace/semconv"
)

// The histograms whose bucket lines must carry exemplars: two from the SDK,
// one from the TokenHistograms producer.
var exemplarFamilies = []string{
	"llm_tpot",
	"gen_ai_server_time_to_first_token_seconds",
	"tokentrace_inter_token_latency_seconds",
}

func TestPrometheusEndpointServesTheMetricsOfTheStreams(t *testing.T) {
	rcv := startReceiver(t)
	engineURL, _ := startEngine(t)
	maddr := freeAddr(t)
	g := startGateway(t, "-upstream", engineURL, "-otlp", rcv.addr, "-metrics-listen", maddr, "-poll-interval", "50ms")
	tokens := []int{40, 40, 40}
	streamAll(t, g.URL, nil, tokens...)
	metricsURL := "http://" + maddr + "/metrics"

	// The spans (one per request) reach the receiver within the batch
	// timeout (1 s); their chunk counts say how many inter-token gaps the
	// metrics will hold.
	var spans []*tracepb.Span
	deadline := time.Now().Add(10 * time.Second)
	for {
		if spans, _ = rcv.received(); len(spans) >= len(tokens) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the OTLP receiver got %d spans after 10 s, want %d", len(spans), len(tokens))
		}
		time.Sleep(50 * time.Millisecond)
	}
	if len(spans) != len(tokens) {
		t.Fatalf("the OTLP receiver got %d spans, want one per request (%d)", len(spans), len(tokens))
	}
	gaps := 0
	for _, s := range spans {
		attrs := map[string]int64{}
		for _, a := range s.GetAttributes() {
			attrs[a.GetKey()] = a.GetValue().GetIntValue()
		}
		gaps += int(attrs[string(semconv.Chunks)] - attrs[string(semconv.ChunksUntimed)] - 1)
	}

	// Metrics are recorded when each request's span is completed, in the
	// background (after the span ended): poll until every request is in
	// all three histograms. The scrape is OpenMetrics, as prometheus.yml
	// asks for, parsed with Prometheus' own parser.
	var om *promScrape
	deadline = time.Now().Add(10 * time.Second)
	for {
		var err error
		om, err = scrapeOpenMetrics(metricsURL)
		if err != nil {
			t.Fatal(err)
		}
		n := len(tokens)
		if om.count("llm_tpot") == n && om.count("gen_ai_server_time_to_first_token_seconds") == n &&
			om.count("tokentrace_inter_token_latency_seconds") == gaps {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("after 10 s: llm_tpot %d, TTFT %d samples (want %d), inter-token latency %d (want %d gaps):\n%s",
				om.count("llm_tpot"), om.count("gen_ai_server_time_to_first_token_seconds"), n,
				om.count("tokentrace_inter_token_latency_seconds"), gaps, om.raw)
		}
		time.Sleep(100 * time.Millisecond)
	}

	t.Run("text format", func(t *testing.T) {
		resp, err := http.Get(metricsURL)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		p := expfmt.NewTextParser(model.UTF8Validation)
		fams, err := p.TextToMetricFamilies(strings.NewReader(string(b)))
		if err != nil {
			t.Fatalf("metrics do not parse: %v\n%s", err, b)
		}
		for _, name := range []string{"llm_tpot", "gen_ai_server_time_to_first_token_seconds", "gen_ai_server_time_per_output_token_seconds", "tokentrace_inter_token_latency_seconds"} {
			if fams[name] == nil {
				t.Errorf("%s missing", name)
			}
		}
	})

	t.Run("exemplars name the requests' spans", func(t *testing.T) {
		checkExemplars(t, om, spans)
	})

	t.Run("observability files match the scrape", func(t *testing.T) {
		// The gateway labels every request (model_version, prompt_type):
		// every label the files group or filter by must be on the series.
		checkObservabilityFiles(t, om)
	})
}

// checkExemplars checks that the bucket lines of exemplarFamilies carry
// exemplars {trace_id, span_id} naming spans the OTLP receiver got, each in
// the bucket its value falls in.
func checkExemplars(t *testing.T, om *promScrape, spans []*tracepb.Span) {
	t.Helper()
	traceOf := map[string]string{} // span id → trace id, hex
	for _, s := range spans {
		traceOf[hex.EncodeToString(s.GetSpanId())] = hex.EncodeToString(s.GetTraceId())
	}
	traceID, spanID := regexp.MustCompile(`^[0-9a-f]{32}$`), regexp.MustCompile(`^[0-9a-f]{16}$`)
	for _, fam := range exemplarFamilies {
		buckets := om.samples[fam+"_bucket"]
		// The bucket edges of each series, to check an exemplar's value
		// falls in the bucket that carries it.
		edges := map[string][]float64{}
		for _, s := range buckets {
			edges[seriesKey(s.labels)] = append(edges[seriesKey(s.labels)], s.le())
		}
		n := 0
		for _, s := range buckets {
			for _, e := range s.exemplars {
				n++
				tid, sid := e.Labels.Get("trace_id"), e.Labels.Get("span_id")
				switch {
				case !traceID.MatchString(tid) || tid == strings.Repeat("0", 32):
					t.Errorf("%s: exemplar %s: trace_id is not 32 hex digits, not all zero", s.labels, e.Labels)
				case !spanID.MatchString(sid) || sid == strings.Repeat("0", 16):
					t.Errorf("%s: exemplar %s: span_id is not 16 hex digits, not all zero", s.labels, e.Labels)
				case traceOf[sid] != tid:
					t.Errorf("%s: exemplar %s names no span the OTLP receiver got (spans: %v)", s.labels, e.Labels, traceOf)
				}
				le := s.le()
				below := math.Inf(-1)
				for _, edge := range edges[seriesKey(s.labels)] {
					if edge < le && edge > below {
						below = edge
					}
				}
				if !(e.Value > below && e.Value <= le) {
					t.Errorf("%s: exemplar value %v is not in the bucket (%v, %v]", s.labels, e.Value, below, le)
				}
			}
		}
		if n == 0 {
			t.Errorf("no bucket line of %s carries an exemplar:\n%s", fam, om.raw)
		}
	}
}

// promScrape is a scrape as Prometheus ingests it: samples by metric name,
// with the labels it stores (le normalised as Prometheus 3 does: "0.2",
// "1.0") and the exemplars.
type promScrape struct {
	raw     string
	types   map[string]model.MetricType // family → type
	family  map[string]string           // sample name (llm_tpot_bucket) → family (llm_tpot)
	samples map[string][]sample         // sample name → samples
}

type sample struct {
	labels    labels.Labels
	value     float64
	exemplars []exemplar.Exemplar
}

func (s sample) le() float64 {
	v, err := strconv.ParseFloat(s.labels.Get(model.BucketLabel), 64)
	if err != nil {
		return math.NaN()
	}
	return v
}

// count is the summed _count of histogram fam, -1 when it has none.
func (s *promScrape) count(fam string) int {
	ss := s.samples[fam+"_count"]
	if len(ss) == 0 {
		return -1
	}
	n := 0.0
	for _, x := range ss {
		n += x.value
	}
	return int(n)
}

// seriesKey identifies a series of a histogram: its labels but le.
func seriesKey(ls labels.Labels) string {
	return labels.NewBuilder(ls).Del(model.BucketLabel).Labels().String()
}

// scrapeOpenMetrics scrapes url asking for OpenMetrics and parses the
// answer with Prometheus' OpenMetrics parser.
func scrapeOpenMetrics(url string) (*promScrape, error) {
	req, err := http.NewRequest(http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	req.Header.Set("Accept", "application/openmetrics-text; version=1.0.0")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return nil, err
	}
	ct := resp.Header.Get("Content-Type")
	if !strings.HasPrefix(ct, "application/openmetrics-text; version=1.0.0") {
		return nil, fmt.Errorf("asked for OpenMetrics, got Content-Type %q", ct)
	}
	s := &promScrape{raw: string(b), types: map[string]model.MetricType{}, family: map[string]string{}, samples: map[string][]sample{}}
	p, err := textparse.New(b, ct, labels.NewSymbolTable(), textparse.ParserOptions{})
	if err != nil {
		return nil, err
	}
	fam := ""
	for {
		et, err := p.Next()
		if errors.Is(err, io.EOF) {
			return s, nil
		}
		if err != nil {
			return nil, fmt.Errorf("the OpenMetrics scrape does not parse: %v\n%s", err, b)
		}
		switch et {
		case textparse.EntryType:
			name, typ := p.Type()
			fam = string(name)
			s.types[fam] = typ
		case textparse.EntrySeries:
			_, _, v := p.Series()
			var smp sample
			smp.value = v
			p.Labels(&smp.labels)
			for {
				var e exemplar.Exemplar
				if !p.Exemplar(&e) {
					break
				}
				smp.exemplars = append(smp.exemplars, e)
			}
			name := smp.labels.Get(model.MetricNameLabel)
			s.samples[name] = append(s.samples[name], smp)
			s.family[name] = fam
		}
	}
}

// promExpr is a PromQL expression of an observability file and where it is.
type promExpr struct{ where, expr string }

// observabilityExprs reads the expressions of ../observability/alerts.yml
// (rules) and ../observability/grafana-dashboard.json (panel targets).
func observabilityExprs(t *testing.T) []promExpr {
	t.Helper()
	var exprs []promExpr
	b, err := os.ReadFile("../observability/alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var rules struct {
		Groups []struct {
			Rules []struct{ Alert, Record, Expr string }
		}
	}
	if err := yaml.Unmarshal(b, &rules); err != nil {
		t.Fatalf("alerts.yml: %v", err)
	}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			exprs = append(exprs, promExpr{"alerts.yml rule " + r.Alert + r.Record, r.Expr})
		}
	}
	if b, err = os.ReadFile("../observability/grafana-dashboard.json"); err != nil {
		t.Fatal(err)
	}
	type panel struct {
		Title   string
		Targets []struct{ RefID, Expr string }
		Panels  []panel // a row's
	}
	var dash struct{ Panels []panel }
	if err := json.Unmarshal(b, &dash); err != nil {
		t.Fatalf("grafana-dashboard.json: %v", err)
	}
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			for _, tg := range p.Targets {
				exprs = append(exprs, promExpr{fmt.Sprintf("grafana-dashboard.json panel %q target %s", p.Title, tg.RefID), tg.Expr})
			}
			walk(p.Panels)
		}
	}
	walk(dash.Panels)
	if len(exprs) == 0 {
		t.Fatal("no expressions in the observability files")
	}
	return exprs
}

// servedByGateway says whether the gateway's /metrics should serve a
// metric. The engines' metrics (vllm:*, sglang:*), which prometheus.yml
// scrapes from the engines themselves, are not the gateway's and are not
// checked here.
func servedByGateway(name string) bool {
	return strings.HasPrefix(name, "llm_tpot") || strings.HasPrefix(name, "gen_ai_") || strings.HasPrefix(name, "tokentrace_")
}

// targetLabels are added by Prometheus to every series it scrapes (from
// the scrape config), so a query may group by them though no exposition
// has them.
var targetLabels = []string{"job", "instance"}

// checkObservabilityFiles parses every expression of the observability
// files and checks, for each vector selector of a metric the gateway
// serves, against the scrape: the metric exists; each le it matches is a
// bucket edge of that histogram (as Prometheus stores it); each other label
// it matches, and each label an enclosing aggregation groups by, is on
// some series of the metric.
func checkObservabilityFiles(t *testing.T, om *promScrape) {
	t.Helper()
	promql := parser.NewParser(parser.Options{})
	skipped := map[string]bool{}
	for _, pe := range observabilityExprs(t) {
		expr, err := promql.ParseExpr(pe.expr)
		if err != nil {
			t.Errorf("%s: %q does not parse: %v", pe.where, pe.expr, err)
			continue
		}
		parser.Inspect(expr, func(node parser.Node, path []parser.Node) error {
			vs, ok := node.(*parser.VectorSelector)
			if !ok {
				return nil
			}
			name := vs.Name
			var matchers []*labels.Matcher
			for _, m := range vs.LabelMatchers {
				if m.Name != model.MetricNameLabel {
					matchers = append(matchers, m)
				} else if name == "" && m.Type == labels.MatchEqual {
					name = m.Value
				}
			}
			if !servedByGateway(name) {
				skipped[name] = true
				return nil
			}
			series := om.samples[name]
			if len(series) == 0 {
				t.Errorf("%s: %q: the gateway serves no metric %s (families: %v)", pe.where, pe.expr, name, slices.Sorted(maps.Keys(om.types)))
				return nil
			}
			fam := om.family[name]
			bucket := om.types[fam] == model.MetricTypeHistogram && name == fam+"_bucket"
			has := func(label string) bool {
				if slices.Contains(targetLabels, label) {
					return true
				}
				for _, s := range series {
					if s.labels.Has(label) {
						return true
					}
				}
				return false
			}
			for _, m := range matchers {
				if m.Name != model.BucketLabel {
					if !m.Matches("") && !has(m.Name) {
						t.Errorf("%s: %q: %s matches label %s, which no series of %s has (labels: %v)", pe.where, pe.expr, m, m.Name, name, labelNames(series))
					}
					continue
				}
				edges := map[string]bool{}
				for _, s := range series {
					edges[s.labels.Get(model.BucketLabel)] = true
				}
				les := slices.Collect(maps.Keys(edges))
				if !bucket {
					t.Errorf("%s: %q: %s on %s, which is not a histogram's buckets (type %q)", pe.where, pe.expr, m, name, om.types[fam])
				} else if !slices.ContainsFunc(les, m.Matches) {
					t.Errorf("%s: %q: %s matches no bucket edge of %s (edges as Prometheus stores them: %v)", pe.where, pe.expr, m, fam, sortedEdges(les))
				}
			}
			for _, n := range path {
				agg, ok := n.(*parser.AggregateExpr)
				if !ok || agg.Without {
					continue // without(...) may name labels that are absent
				}
				for _, l := range agg.Grouping {
					switch {
					case l == model.BucketLabel && !bucket:
						t.Errorf("%s: %q: groups %s by le, which is not a histogram's buckets", pe.where, pe.expr, name)
					case l != model.BucketLabel && !has(l):
						t.Errorf("%s: %q: groups by %s, which no series of %s has (labels: %v)", pe.where, pe.expr, l, name, labelNames(series))
					}
				}
			}
			return nil
		})
	}
	if len(skipped) > 0 {
		t.Logf("not the gateway's metrics, not checked: %v", slices.Sorted(maps.Keys(skipped)))
	}
}

func labelNames(series []sample) []string {
	set := map[string]bool{}
	for _, s := range series {
		s.labels.Range(func(l labels.Label) { set[l.Name] = true })
	}
	return slices.Sorted(maps.Keys(set))
}

// sortedEdges sorts le values by their number.
func sortedEdges(les []string) []string {
	slices.SortFunc(les, func(a, b string) int {
		x, _ := strconv.ParseFloat(a, 64)
		y, _ := strconv.ParseFloat(b, 64)
		return cmp.Compare(x, y)
	})
	return les
}
