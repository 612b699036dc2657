package report

import (
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// printHTML writes one self-contained page: no script, no external asset,
// inline CSS and SVG. Every value from the traces goes through
// html/template's contextual escaping; the markup is also well-formed XML
// (void elements self-closed, no named entities), so that each SVG can be
// lifted out and parsed on its own.
func printHTML(w io.Writer, rpt *Report, opts Options) error {
	v := htmlPage{Rpt: rpt, Schema: rpt.Schema, RunWide: !opts.RequestsOnly, RequestsTitle: "Worst requests"}
	if opts.RequestsOnly {
		v.RequestsTitle = "Requests"
	}
	if !rpt.Generated.IsZero() {
		v.Generated = rpt.Generated.Format(time.RFC3339)
	}
	s := &rpt.Summary
	v.Overview = fmt.Sprintf("%s requests, %s tokens; %s degraded", FormatCount(s.Requests), FormatCount(s.Tokens), FormatCount(s.DegradedRequests))
	if s.Requests > 0 {
		v.Overview += " (" + FormatPercent(float64(s.DegradedRequests)/float64(s.Requests)) + ")"
	}
	v.Overview += fmt.Sprintf(", %s segments", FormatCount(s.Segments))
	if len(s.Causes) > 0 {
		v.Overview += ": " + causesLine(s.Causes, ident)
	}
	for _, d := range []struct {
		name string
		d    Dist
	}{{"TTFT", s.TTFT}, {"TPOT", s.TPOT}, {"ITL", s.ITL}} {
		v.Dists = append(v.Dists, htmlRow{Name: d.name, Cells: distCells(d.d)})
	}
	for _, h := range s.Histograms {
		var d Dist
		title := h.Name
		switch h.Name {
		case "ttft_ms":
			d, title = s.TTFT, "TTFT"
		case "tpot_ms":
			d, title = s.TPOT, "TPOT"
		case "itl_ms":
			d, title = s.ITL, "ITL"
		}
		if c, ok := histChart(title, h, d); ok {
			v.Hists = append(v.Hists, c)
		}
	}
	for _, g := range rpt.Groups {
		v.Groups = append(v.Groups, htmlGroup{Dimension: g.Dimension, Key: g.Key, Cells: []string{
			FormatCount(g.Requests), FormatCount(g.Errors), FormatCount(g.Degraded), FormatMs(g.TTFT.P50),
			FormatMs(g.TPOT.P50), FormatMs(g.TPOT.P99), FormatMs(g.ITL.P99), FormatMs(g.ITL.P999)}})
	}
	v.Checks = rpt.Checks
	for _, sk := range rpt.Skipped {
		n := fmt.Sprintf("Skipped %s: %s", FormatCount(sk.Count), sk.Reason)
		if sk.Example != "" {
			n += " (e.g. " + sk.Example + ")"
		}
		v.Notes = append(v.Notes, n)
	}
	for _, w := range rpt.Warnings {
		v.Notes = append(v.Notes, "Warning: "+w)
	}
	if opts.RequestsOnly {
		v.Notes = nil
	}
	causes := map[string]bool{}
	for i, r := range worst(rpt, opts) {
		hr := htmlRequest{N: i + 1, R: r, Lost: humanMs(r.LostMs())}
		rows := timeline(r)
		if c, ok := timelineChart(r, rows); ok {
			hr.Chart = &c
		}
		for _, row := range rows {
			x := htmlPace{Tokens: tokenRange(row.From, row.To, "–"), Pace: pace(row)}
			if s := row.Seg; s != nil {
				x.Kind, x.Slowdown, x.Cause, x.Color = segKind(s), times(s.Slowdown), causeLine(s, ident), causeColor(s.Cause)
				causes[s.Cause] = true
			}
			hr.Rows = append(hr.Rows, x)
		}
		for j := range r.Segments {
			hr.Sentences = append(hr.Sentences, sentence(r, &r.Segments[j], ident))
		}
		v.Requests = append(v.Requests, hr)
	}
	for _, c := range []string{CausePrefill, CauseBatch, CauseKVSwap, CauseGC, CauseUnknown} {
		if causes[c] {
			v.Legend = append(v.Legend, htmlLegend{Cause: c, Color: causeColor(c)})
		}
	}
	var b strings.Builder
	if err := pageTemplate.Execute(&b, v); err != nil {
		return err
	}
	_, err := io.WriteString(w, xmlSafe(b.String()))
	return err
}

// xmlSafe replaces what html/template lets through but XML forbids —
// control characters (an ESC from a trace) and invalid UTF-8 — with
// U+FFFD. The page's own markup has neither, and the replacement cannot
// form markup.
func xmlSafe(s string) string {
	return strings.Map(func(r rune) rune {
		if r < 0x20 && r != '\n' && r != '\t' && r != '\r' || r == 0xFFFE || r == 0xFFFF {
			return '\uFFFD'
		}
		return r
	}, s)
}

type htmlPage struct {
	// RunWide shows the summary, groups and checks (not with RequestsOnly).
	RunWide       bool
	RequestsTitle string
	Rpt           *Report
	Schema        string
	Generated     string
	Overview      string
	Dists         []htmlRow
	Hists         []svgChart
	Groups        []htmlGroup
	Checks        []Check
	Requests      []htmlRequest
	Legend        []htmlLegend
	Notes         []string
}

type htmlRow struct {
	Name  string
	Cells []string
}

type htmlGroup struct {
	Dimension, Key string
	Cells          []string
}

type htmlRequest struct {
	N         int
	R         *Request
	Lost      string
	Chart     *svgChart
	Rows      []htmlPace
	Sentences []string
}

type htmlPace struct {
	Tokens, Pace                 string
	Kind, Slowdown, Cause, Color string
}

type htmlLegend struct{ Cause, Color string }

// distCells are a Dist's figures for a table: n, mean, p50, …, max; "-"
// without samples.
func distCells(d Dist) []string {
	if d.Count == 0 {
		return []string{"0", "-", "-", "-", "-", "-", "-", "-"}
	}
	return []string{FormatCount(d.Count), FormatMs(d.Mean), FormatMs(d.P50), FormatMs(d.P90), FormatMs(d.P99),
		FormatMs(d.P999), FormatMs(d.P9999), FormatMs(d.Max)}
}

// causeColor is the colour of a cause in charts and tables.
func causeColor(cause string) string {
	switch cause {
	case CausePrefill:
		return "#e8590c"
	case CauseBatch:
		return "#7048e8"
	case CauseKVSwap:
		return "#c2255c"
	case CauseGC:
		return "#1c7ed6"
	}
	return "#868e96"
}

// svgChart is a chart as drawing primitives, computed before rendering;
// drawn in the order Grid, Rects, Lines, Paths, Texts.
type svgChart struct {
	Title string
	W, H  float64
	Grid  []svgLine
	Rects []svgRect
	Lines []svgLine
	Paths []svgPath
	Texts []svgText
}

type svgRect struct {
	X, Y, W, H float64
	Fill       string
	Opacity    float64
	Title      string
}

type svgLine struct {
	X1, Y1, X2, Y2 float64
	Stroke         string
	Width          float64
	Dash           bool
}

type svgPath struct {
	D      string
	Stroke string
	Width  float64
}

type svgText struct {
	X, Y   float64
	Text   string
	Anchor string // start, middle, end
	Fill   string
	Size   float64
}

const (
	inkAxis  = "#495057"
	inkGrid  = "#e9ecef"
	inkData  = "#212529"
	inkMark  = "#e03131"
	inkClean = "#868e96"
	inkBar   = "#4c6ef5"
)

// plot is the drawing area of a chart with log or linear axes.
type plot struct {
	left, right, top, bottom float64
	x0, x1, y0, y1           float64 // data ranges
	logX, logY               bool
}

func (p plot) x(v float64) float64 { return p.left + (p.right-p.left)*frac(v, p.x0, p.x1, p.logX) }
func (p plot) y(v float64) float64 { return p.bottom - (p.bottom-p.top)*frac(v, p.y0, p.y1, p.logY) }

func frac(v, lo, hi float64, log bool) float64 {
	if log {
		v, lo, hi = math.Log10(math.Max(v, lo)), math.Log10(lo), math.Log10(hi)
	}
	if hi <= lo {
		return 0
	}
	return math.Min(1, math.Max(0, (v-lo)/(hi-lo)))
}

// logTicks are the 1-2-5 values within [lo, hi], or only the decades when
// that gives too many.
func logTicks(lo, hi float64) []float64 {
	var all, dec []float64
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		for _, m := range []float64{1, 2, 5} {
			if v := m * math.Pow(10, e); v >= lo*0.999 && v <= hi*1.001 {
				all = append(all, v)
				if m == 1 {
					dec = append(dec, v)
				}
			}
		}
	}
	if len(all) > 7 && len(dec) >= 2 {
		return dec
	}
	return all
}

// tickMs labels a round tick value: "20ms", "500µs", "1s".
func tickMs(v float64) string {
	switch {
	case v >= 1000:
		return strconv.FormatFloat(v/1000, 'g', 3, 64) + "s"
	case v >= 1:
		return strconv.FormatFloat(v, 'g', 3, 64) + "ms"
	}
	return strconv.FormatFloat(v*1000, 'g', 3, 64) + "µs"
}

// niceStep is a 1-2-5 step near span/n.
func niceStep(span float64, n int) float64 {
	raw := span / float64(n)
	if raw <= 1 {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}

// labels places short labels in rows above a plot so that they do not
// overlap: each goes into the first row where it fits.
type labels struct {
	left, right float64        // where labels may go
	rows        [][][2]float64 // occupied x ranges per row
}

// place returns the row, the x and the anchor for a label of n runes
// centred (or, at the edges, aligned) on x; ok is false when no row has
// room (the label is left out: the shading and its tooltip remain).
func (l *labels) place(x float64, n int, size float64) (row int, at float64, anchor string, ok bool) {
	const rows = 3
	w := 0.6 * size * float64(n)
	lo, anchor, at := x-w/2, "middle", x
	if lo < l.left {
		lo, anchor, at = x, "start", x
	}
	if lo+w > l.right {
		lo, anchor, at = x-w, "end", x
	}
	for row = 0; row < rows; row++ {
		if row == len(l.rows) {
			l.rows = append(l.rows, nil)
		}
		free := true
		for _, r := range l.rows[row] {
			if lo < r[1]+4 && lo+w > r[0]-4 {
				free = false
				break
			}
		}
		if free {
			l.rows[row] = append(l.rows[row], [2]float64{lo, lo + w})
			return row, at, anchor, true
		}
	}
	return 0, 0, "", false
}

// timelineChart draws a request: x = token index, y = ms/token (log) of
// every gap when the report has them, the pace of each timeline row, and
// each segment shaded in its cause's colour with a label.
func timelineChart(r *Request, rows []paceRow) (svgChart, bool) {
	if len(rows) == 0 {
		return svgChart{}, false
	}
	last := float64(rows[len(rows)-1].To)
	c := svgChart{Title: "ms per token along request " + ShortID(r.TraceID), W: 760, H: 240}
	p := plot{left: 54, right: c.W - 16, top: 44, bottom: c.H - 30, x0: 0, x1: last, logY: true}
	type pt struct{ t, ms float64 }
	var pts []pt
	for i, g := range r.GapsMs {
		t := float64(i + 1)
		if len(r.GapTokens) == len(r.GapsMs) {
			t = float64(r.GapTokens[i])
		}
		if isFinite(g) && g > 0 {
			pts = append(pts, pt{t, g})
		}
	}
	lo, hi := math.Inf(1), math.Inf(-1)
	for _, q := range pts {
		lo, hi = math.Min(lo, q.ms), math.Max(hi, q.ms)
	}
	for _, row := range rows {
		if isFinite(row.Ms) && row.Ms > 0 {
			lo, hi = math.Min(lo, row.Ms), math.Max(hi, row.Ms)
		}
	}
	if math.IsInf(lo, 0) {
		lo, hi = 1, 10
	}
	p.y0, p.y1 = lo/1.3, hi*1.3
	if p.y1/p.y0 < 5 {
		m := math.Sqrt(p.y0 * p.y1)
		p.y0, p.y1 = m/math.Sqrt(5), m*math.Sqrt(5)
	}
	axes(&c, p, logTicks(p.y0, p.y1), "ms/token")
	step := niceStep(last, 6)
	for t := 0.0; t <= last; t += step {
		c.Lines = append(c.Lines, svgLine{X1: p.x(t), Y1: p.bottom, X2: p.x(t), Y2: p.bottom + 4, Stroke: inkAxis, Width: 1})
		c.Texts = append(c.Texts, svgText{X: p.x(t), Y: p.bottom + 16, Text: strconv.Itoa(int(t)), Anchor: "middle", Fill: inkAxis, Size: 11})
	}
	c.Texts = append(c.Texts, svgText{X: p.right, Y: c.H - 2, Text: "token", Anchor: "end", Fill: inkAxis, Size: 11})

	// Segments: shaded, labelled above the plot.
	lab := labels{left: p.left, right: c.W}
	for _, rw := range rows {
		s := rw.Seg
		if s == nil {
			continue
		}
		x0, x1 := p.x(math.Max(0, float64(rw.From)-0.5)), p.x(math.Min(last, float64(rw.To)+0.5))
		if x1-x0 < 4 {
			x0, x1 = (x0+x1)/2-2, (x0+x1)/2+2
		}
		col := causeColor(s.Cause)
		c.Rects = append(c.Rects, svgRect{X: x0, Y: p.top, W: x1 - x0, H: p.bottom - p.top, Fill: col, Opacity: 0.2,
			Title: fmt.Sprintf("tokens %s: %s/token, %s — %s", tokenRange(rw.From, rw.To, "–"), humanMs(s.MedianMs), times(s.Slowdown), causeLine(s, ident))})
		label := s.Cause + " " + times(s.Slowdown)
		if row, at, anchor, ok := lab.place((x0+x1)/2, len([]rune(label)), 10); ok {
			c.Texts = append(c.Texts, svgText{X: at, Y: p.top - 6 - 12*float64(row), Text: label, Anchor: anchor, Fill: col, Size: 10})
		}
	}
	// Pace of each row: solid where measured, dashed where approximate; a
	// one-token stall is a spike.
	for _, rw := range rows {
		if !isFinite(rw.Ms) || rw.Ms <= 0 {
			continue
		}
		col := inkClean
		if rw.Seg != nil {
			col = causeColor(rw.Seg.Cause)
		}
		y := p.y(rw.Ms)
		if rw.Seg != nil && rw.From == rw.To {
			x := p.x(float64(rw.From))
			c.Lines = append(c.Lines, svgLine{X1: x, Y1: p.bottom, X2: x, Y2: y, Stroke: col, Width: 3})
			continue
		}
		c.Lines = append(c.Lines, svgLine{X1: p.x(math.Max(0, float64(rw.From)-0.5)), Y1: y, X2: p.x(math.Min(last, float64(rw.To)+0.5)), Y2: y,
			Stroke: col, Width: 2, Dash: rw.Approx})
	}
	// Every gap (at most one point per pixel column: the column's largest
	// gap, so that stalls stay visible).
	if len(pts) > 0 {
		cols := map[int]pt{}
		var order []int
		for _, q := range pts {
			k := int(p.x(q.t))
			if old, ok := cols[k]; !ok {
				cols[k] = q
				order = append(order, k)
			} else if q.ms > old.ms {
				cols[k] = q
			}
		}
		var d strings.Builder
		for i, k := range order {
			q := cols[k]
			cmd := "L"
			if i == 0 {
				cmd = "M"
			}
			fmt.Fprintf(&d, "%s%s %s ", cmd, num(p.x(q.t)), num(p.y(q.ms)))
		}
		c.Paths = append(c.Paths, svgPath{D: strings.TrimSpace(d.String()), Stroke: inkData, Width: 1})
	}
	return c, true
}

// axes draws the frame, the y grid and its labels.
func axes(c *svgChart, p plot, yTicks []float64, yTitle string) {
	for _, v := range yTicks {
		y := p.y(v)
		c.Grid = append(c.Grid, svgLine{X1: p.left, Y1: y, X2: p.right, Y2: y, Stroke: inkGrid, Width: 1})
		c.Texts = append(c.Texts, svgText{X: p.left - 6, Y: y + 4, Text: tickMs(v), Anchor: "end", Fill: inkAxis, Size: 11})
	}
	c.Lines = append(c.Lines,
		svgLine{X1: p.left, Y1: p.bottom, X2: p.right, Y2: p.bottom, Stroke: inkAxis, Width: 1},
		svgLine{X1: p.left, Y1: p.top, X2: p.left, Y2: p.bottom, Stroke: inkAxis, Width: 1})
	if yTitle != "" {
		c.Texts = append(c.Texts, svgText{X: 4, Y: 12, Text: yTitle, Anchor: "start", Fill: inkAxis, Size: 11})
	}
}

// histChart draws a histogram: x = the buckets on a log scale, y =
// log(1 + count) so that the tail stays visible, with P50, P99 and P99.9
// marked.
func histChart(title string, h Histogram, d Dist) (svgChart, bool) {
	if len(h.Bounds) == 0 || len(h.Counts) != len(h.Bounds)+1 || !(h.Bounds[0] > 0) {
		return svgChart{}, false
	}
	type bar struct {
		lo, hi float64
		n      int
		label  string
	}
	var bars []bar
	nb := len(h.Bounds)
	if h.Counts[0] > 0 {
		bars = append(bars, bar{h.Bounds[0] / 1.5, h.Bounds[0], h.Counts[0], "≤ " + FormatMs(h.Bounds[0])})
	}
	for i := 1; i < nb; i++ {
		bars = append(bars, bar{h.Bounds[i-1], h.Bounds[i], h.Counts[i], "(" + FormatMs(h.Bounds[i-1]) + ", " + FormatMs(h.Bounds[i]) + "]"})
	}
	if h.Counts[nb] > 0 {
		bars = append(bars, bar{h.Bounds[nb-1], h.Bounds[nb-1] * 1.5, h.Counts[nb], "> " + FormatMs(h.Bounds[nb-1])})
	}
	if len(bars) == 0 {
		return svgChart{}, false
	}
	maxN := 0
	for _, b := range bars {
		maxN = max(maxN, b.n)
	}
	c := svgChart{Title: title + " distribution (log buckets)", W: 380, H: 210}
	p := plot{left: 44, right: c.W - 14, top: 40, bottom: c.H - 30, x0: bars[0].lo, x1: bars[len(bars)-1].hi, logX: true}
	yOf := func(n int) float64 {
		if maxN == 0 {
			return p.bottom
		}
		return p.bottom - (p.bottom-p.top)*math.Log1p(float64(n))/math.Log1p(float64(maxN))
	}
	for _, n := range []int{1, 10, 100, 1000, 10000, 100000, 1000000, 10000000} {
		if n > maxN {
			break
		}
		c.Grid = append(c.Grid, svgLine{X1: p.left, Y1: yOf(n), X2: p.right, Y2: yOf(n), Stroke: inkGrid, Width: 1})
		c.Texts = append(c.Texts, svgText{X: p.left - 4, Y: yOf(n) + 4, Text: FormatCount(n), Anchor: "end", Fill: inkAxis, Size: 10})
	}
	for _, b := range bars {
		if b.n == 0 {
			continue
		}
		x0, x1 := p.x(b.lo), p.x(b.hi)
		c.Rects = append(c.Rects, svgRect{X: x0 + 0.5, Y: yOf(b.n), W: math.Max(1, x1-x0-1), H: p.bottom - yOf(b.n), Fill: inkBar,
			Title: b.label + ": " + FormatCount(b.n)})
	}
	c.Lines = append(c.Lines, svgLine{X1: p.left, Y1: p.bottom, X2: p.right, Y2: p.bottom, Stroke: inkAxis, Width: 1})
	ticks := logTicks(p.x0, p.x1)
	if len(ticks) < 3 { // a narrow range: label the bucket bounds
		ticks = ticks[:0]
		for i := 0; i < nb; i += max(1, nb/5) {
			ticks = append(ticks, h.Bounds[i])
		}
	}
	for _, v := range ticks {
		c.Lines = append(c.Lines, svgLine{X1: p.x(v), Y1: p.bottom, X2: p.x(v), Y2: p.bottom + 4, Stroke: inkAxis, Width: 1})
		c.Texts = append(c.Texts, svgText{X: p.x(v), Y: p.bottom + 15, Text: tickMs(v), Anchor: "middle", Fill: inkAxis, Size: 10})
	}
	lab := labels{left: 0, right: c.W}
	for _, m := range []struct {
		name string
		v    float64
	}{{"p50", d.P50}, {"p99", d.P99}, {"p99.9", d.P999}} {
		if d.Count == 0 || !(m.v >= p.x0 && m.v <= p.x1) {
			continue
		}
		x := p.x(m.v)
		text := m.name + " " + FormatMs(m.v)
		row, at, anchor, ok := lab.place(x, len([]rune(text)), 9)
		y := p.top - 6 - 11*float64(row)
		c.Lines = append(c.Lines, svgLine{X1: x, Y1: y + 2, X2: x, Y2: p.bottom, Stroke: inkMark, Width: 1, Dash: true})
		if ok {
			c.Texts = append(c.Texts, svgText{X: at, Y: y, Text: text, Anchor: anchor, Fill: inkMark, Size: 9})
		}
	}
	c.Texts = append(c.Texts, svgText{X: 4, Y: 12, Text: "count (log)", Anchor: "start", Fill: inkAxis, Size: 10})
	return c, true
}

// num formats a coordinate.
func num(v float64) string {
	if !isFinite(v) {
		return "0"
	}
	return strconv.FormatFloat(math.Round(v*10)/10, 'f', -1, 64)
}

var pageTemplate = template.Must(template.New("page").Funcs(template.FuncMap{
	"n":      num,
	"fms":    FormatMs,
	"fcount": FormatCount,
	"unset":  func(s string) string { return cmp0(s, "(unset)") },
}).Parse(pageHTML))

func cmp0(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

const pageHTML = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8"/>
<meta name="viewport" content="width=device-width, initial-scale=1"/>
<title>tokentrace report{{with .Rpt.Source}} · {{.}}{{end}}</title>
<style>
body { font: 14px/1.45 system-ui, -apple-system, "Segoe UI", sans-serif; color: #212529; margin: 0; background: #f8f9fa; }
main { max-width: 1100px; margin: 0 auto; padding: 16px 24px 48px; background: #fff; }
h1 { font-size: 22px; margin: 8px 0 2px; }
h2 { font-size: 17px; margin: 28px 0 8px; border-bottom: 1px solid #dee2e6; padding-bottom: 4px; }
h3 { font-size: 15px; margin: 22px 0 4px; }
.meta, .facts { color: #495057; margin: 2px 0; }
code { font: 12.5px ui-monospace, SFMono-Regular, Menlo, monospace; }
table { border-collapse: collapse; margin: 6px 0; font-variant-numeric: tabular-nums; }
th, td { padding: 3px 10px; border-bottom: 1px solid #f1f3f5; text-align: right; }
th:first-child, td.l, th.l { text-align: left; }
thead th { border-bottom: 2px solid #dee2e6; }
tr.warn td { background: #fff3bf; }
.status-warn { color: #e67700; font-weight: 600; }
.charts { display: flex; flex-wrap: wrap; gap: 12px; }
figure { margin: 6px 0; }
figcaption { color: #495057; font-size: 12px; }
svg { max-width: 100%; height: auto; font-family: system-ui, sans-serif; }
.swatch { display: inline-block; width: 10px; height: 10px; margin: 0 4px 0 10px; border-radius: 2px; }
.bar { display: inline-block; height: 9px; border-radius: 2px; }
.notes { color: #495057; }
</style>
</head>
<body>
<main>
<header>
<h1>tokentrace report</h1>
<p class="meta">{{with .Rpt.Source}}Source: {{.}} · {{end}}{{with .Generated}}generated {{.}} · {{end}}sensitivity {{.Rpt.Sensitivity}} · schema <code>{{.Schema}}</code></p>
</header>
{{if .RunWide}}<section id="summary">
<h2>Summary</h2>
<p>{{.Overview}}{{if .Notes}} (see <a href="#notes">notes</a>){{end}}.</p>
<table>
<thead><tr><th></th><th>n</th><th>mean</th><th>p50</th><th>p90</th><th>p99</th><th>p99.9</th><th>p99.99</th><th>max</th></tr></thead>
<tbody>
{{range .Dists}}<tr><th>{{.Name}}</th>{{range .Cells}}<td>{{.}}</td>{{end}}</tr>
{{end}}</tbody>
</table>
{{if .Hists}}<div class="charts">
{{range .Hists}}<figure>{{template "svg" .}}<figcaption>{{.Title}}</figcaption></figure>
{{end}}</div>
{{end}}</section>
{{if .Groups}}<section id="groups">
<h2>Groups</h2>
<table>
<thead><tr><th>dimension</th><th class="l">key</th><th>n</th><th>errors</th><th>degraded</th><th>TTFT p50</th><th>TPOT p50</th><th>TPOT p99</th><th>ITL p99</th><th>ITL p99.9</th></tr></thead>
<tbody>
{{range .Groups}}<tr><td class="l">{{.Dimension}}</td><td class="l">{{unset .Key}}</td>{{range .Cells}}<td>{{.}}</td>{{end}}</tr>
{{end}}</tbody>
</table>
</section>
{{end}}{{if .Checks}}<section id="checks">
<h2>Checks</h2>
<table>
<thead><tr><th>check</th><th class="l">status</th><th class="l">detail</th></tr></thead>
<tbody>
{{range .Checks}}<tr{{if ne .Status "ok"}} class="warn"{{end}}><td class="l">{{.Name}}</td><td class="l{{if ne .Status "ok"}} status-warn{{end}}">{{.Status}}</td><td class="l">{{.Detail}}</td></tr>
{{end}}</tbody>
</table>
</section>
{{end}}{{end}}{{if .Requests}}<section id="requests">
<h2>{{.RequestsTitle}}</h2>
<p class="meta">By time lost against each request&#39;s own baseline.{{range .Legend}}<span class="swatch" style="background: {{.Color}}"></span>{{.Cause}}{{end}}</p>
{{range .Requests}}<article id="request-{{.N}}">
<h3>{{.N}}. <code>{{.R.TraceID}}</code></h3>
<p class="facts">{{with .R.Service}}{{.}} · {{end}}{{with .R.Model}}{{.}} · {{end}}{{with .R.Instance}}{{.}} · {{end}}{{fcount .R.Tokens}} tokens · TTFT {{fms .R.TTFTMs}} · TPOT {{fms .R.TPOTMs}}{{if .R.Degraded}} · lost {{.Lost}}{{end}}{{with .R.URL}} · <a href="{{.}}">open in Jaeger</a>{{end}}</p>
{{with .Chart}}<figure>{{template "svg" .}}</figure>
{{end}}<table>
<thead><tr><th class="l">tokens</th><th>ms/token</th><th class="l"></th></tr></thead>
<tbody>
{{range .Rows}}<tr><td class="l">{{.Tokens}}</td><td>{{.Pace}}</td><td class="l">{{if .Kind}}<span class="swatch" style="background: {{.Color}}"></span><strong>{{.Kind}} {{.Slowdown}}</strong>: {{.Cause}}{{end}}</td></tr>
{{end}}</tbody>
</table>
{{range .Sentences}}<p>{{.}}</p>
{{else}}<p>No degraded segment.</p>
{{end}}{{range .R.Warnings}}<p class="notes">Note: {{.}}</p>
{{end}}</article>
{{end}}</section>
{{end}}{{if .Notes}}<section id="notes">
<h2>Notes</h2>
<ol class="notes">
{{range .Notes}}<li>{{.}}</li>
{{end}}</ol>
</section>
{{end}}</main>
</body>
</html>
{{define "svg"}}<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {{n .W}} {{n .H}}" width="{{n .W}}" height="{{n .H}}" role="img" aria-label="{{.Title}}">
<title>{{.Title}}</title>
{{range .Grid}}{{template "line" .}}{{end}}{{range .Rects}}<rect x="{{n .X}}" y="{{n .Y}}" width="{{n .W}}" height="{{n .H}}" fill="{{.Fill}}"{{if .Opacity}} fill-opacity="{{n .Opacity}}"{{end}}>{{with .Title}}<title>{{.}}</title>{{end}}</rect>
{{end}}{{range .Lines}}{{template "line" .}}{{end}}{{range .Paths}}<path d="{{.D}}" fill="none" stroke="{{.Stroke}}" stroke-width="{{n .Width}}"/>
{{end}}{{range .Texts}}<text x="{{n .X}}" y="{{n .Y}}" text-anchor="{{.Anchor}}" fill="{{.Fill}}" font-size="{{n .Size}}">{{.Text}}</text>
{{end}}</svg>{{end}}
{{define "line"}}<line x1="{{n .X1}}" y1="{{n .Y1}}" x2="{{n .X2}}" y2="{{n .Y2}}" stroke="{{.Stroke}}" stroke-width="{{n .Width}}"{{if .Dash}} stroke-dasharray="4 3"{{end}}/>
{{end}}`
