// Package observability_test checks the files users drop into Prometheus
// and Grafana: rule expressions and dashboard queries parse with
// Prometheus' own PromQL parser, and the dashboard has the queries the
// README promises.
package observability_test

import (
	"encoding/json"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/prometheus/prometheus/promql/parser"
	"go.yaml.in/yaml/v3"
)

var promql = parser.NewParser(parser.Options{})

func TestAlertRulesParse(t *testing.T) {
	b, err := os.ReadFile("alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var f struct {
		Groups []struct {
			Name  string
			Rules []struct {
				Alert, Expr, For string
			}
		}
	}
	if err := yaml.Unmarshal(b, &f); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, g := range f.Groups {
		for _, r := range g.Rules {
			names = append(names, r.Alert)
			if _, err := promql.ParseExpr(r.Expr); err != nil {
				t.Errorf("%s: %v", r.Alert, err)
			}
			if r.For == "" {
				t.Errorf("%s: no for", r.Alert)
			}
			if r.Alert == "LLMTPOTP99High" {
				want := `histogram_quantile(0.99, sum(rate(llm_tpot_bucket[1m])) by (le)) > 0.1`
				if r.Expr != want || r.For != "5m" {
					t.Errorf("seed rule is %q for %s, want %q for 5m", r.Expr, r.For, want)
				}
			}
		}
	}
	for _, want := range []string{"LLMTPOTP99High", "LLMTTFTP99High", "LLMTokenGapDegradationRate"} {
		if !slices.Contains(names, want) {
			t.Errorf("no rule %s (have %v)", want, names)
		}
	}
}

func TestPrometheusConfig(t *testing.T) {
	b, err := os.ReadFile("prometheus.yml")
	if err != nil {
		t.Fatal(err)
	}
	var c struct {
		RuleFiles     []string `yaml:"rule_files"`
		ScrapeConfigs []struct {
			JobName string `yaml:"job_name"`
		} `yaml:"scrape_configs"`
	}
	if err := yaml.Unmarshal(b, &c); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(c.RuleFiles, "alerts.yml") || len(c.ScrapeConfigs) == 0 || c.ScrapeConfigs[0].JobName != "tokentrace-gateway" {
		t.Errorf("prometheus.yml: %+v", c)
	}
}

func TestDashboardQueries(t *testing.T) {
	b, err := os.ReadFile("grafana-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Type, Title string
			Targets     []struct {
				Expr     string
				Exemplar bool
			}
		}
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatal(err)
	}
	var exprs []string
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			if _, err := promql.ParseExpr(tg.Expr); err != nil {
				t.Errorf("%s: %q: %v", p.Title, tg.Expr, err)
			}
			if !tg.Exemplar {
				t.Errorf("%s: exemplars off", p.Title)
			}
			exprs = append(exprs, tg.Expr)
		}
	}
	all := strings.Join(exprs, "\n")
	for _, want := range []string{
		"sum(rate(llm_tpot_sum[1m])) / sum(rate(llm_tpot_count[1m]))", // the seed's mean TPOT
		"histogram_quantile(0.5, sum by (le, model_version, prompt_type) (rate(llm_tpot_bucket",
		"histogram_quantile(0.99, sum by (le, model_version, prompt_type) (rate(llm_tpot_bucket",
		"histogram_quantile(0.9999, sum by (le, model_version, prompt_type) (rate(llm_tpot_bucket",
		"histogram_quantile(0.99, sum by (le, model_version, prompt_type) (rate(gen_ai_server_time_to_first_token_seconds_bucket",
		"tokentrace_inter_token_latency_seconds_bucket",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("dashboard has no query with %q", want)
		}
	}
	heat := false
	for _, p := range d.Panels {
		heat = heat || p.Type == "heatmap"
	}
	if !heat {
		t.Error("no ITL heatmap panel")
	}
}
