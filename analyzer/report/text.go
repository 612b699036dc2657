package report

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"strings"
	"time"
	"unicode/utf8"
)

// ANSI colours of the text format.
const (
	ansiBold   = "\x1b[1m"
	ansiRed    = "\x1b[31m"
	ansiYellow = "\x1b[33m"
	ansiReset  = "\x1b[0m"
)

const barWidth = 20

// printText writes the report for a terminal: the header, the summary
// table, the groups table, the checks, the worst requests with their
// token timelines, and footnotes for skipped inputs and warnings.
func printText(w io.Writer, rpt *Report, opts Options) error {
	var b bytes.Buffer
	paint := func(color, s string) string {
		if !opts.Color {
			return s
		}
		return color + s + ansiReset
	}
	var notes []string
	note := func(s string) string {
		notes = append(notes, s)
		return fmt.Sprintf("[%d]", len(notes))
	}

	// Header and summary.
	head := "tokentrace report"
	if rpt.Source != "" {
		head += " · " + plain(rpt.Source)
	}
	if !rpt.Generated.IsZero() {
		head += " · " + rpt.Generated.Format(time.RFC3339)
	}
	head += fmt.Sprintf(" · sensitivity %g", rpt.Sensitivity)
	fmt.Fprintln(&b, paint(ansiBold, head))
	if !opts.RequestsOnly {
		textRunWide(&b, rpt, paint, note)
	}

	// Worst requests.
	if ws := worst(rpt, opts); len(ws) > 0 {
		if !opts.RequestsOnly {
			fmt.Fprintln(&b)
			fmt.Fprintln(&b, paint(ansiBold, "worst requests (by lost time)"))
		}
		for i, r := range ws {
			fmt.Fprintln(&b)
			textRequest(&b, i+1, r, paint)
		}
	}

	// Footnotes.
	if len(notes) > 0 {
		fmt.Fprintln(&b)
		for i, n := range notes {
			fmt.Fprintf(&b, "[%d] %s\n", i+1, n)
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// textRunWide writes the run-wide sections: the summary line and table,
// the groups and the checks.
func textRunWide(b *bytes.Buffer, rpt *Report, paint func(string, string) string, note func(string) string) {
	s := &rpt.Summary
	line := fmt.Sprintf("requests %s · tokens %s · degraded %s", FormatCount(s.Requests), FormatCount(s.Tokens), FormatCount(s.DegradedRequests))
	if s.Requests > 0 {
		line += " (" + FormatPercent(float64(s.DegradedRequests)/float64(s.Requests)) + ")"
	}
	line += " · segments " + FormatCount(s.Segments)
	if len(s.Causes) > 0 {
		line += ": " + causesLine(s.Causes, plain)
	}
	if len(rpt.Skipped) > 0 {
		total, refs := 0, ""
		for _, sk := range rpt.Skipped {
			ex := ""
			if sk.Example != "" {
				ex = " (e.g. " + plain(sk.Example) + ")"
			}
			total += sk.Count
			refs += note(fmt.Sprintf("skipped %s: %s%s", FormatCount(sk.Count), plain(sk.Reason), ex))
		}
		line += " · skipped " + FormatCount(total) + " " + refs
	}
	if n := len(rpt.Warnings); n > 0 {
		refs := ""
		for _, w := range rpt.Warnings {
			refs += note("warning: " + plain(w))
		}
		line += fmt.Sprintf(" · %d warning%s %s", n, plural(n), refs)
	}
	fmt.Fprintln(b, line)
	fmt.Fprintln(b)
	rows := [][]string{{"", "n", "mean", "p50", "p90", "p99", "p99.9", "p99.99", "max"}}
	for _, d := range []struct {
		name string
		d    Dist
	}{{"TTFT", s.TTFT}, {"TPOT", s.TPOT}, {"ITL", s.ITL}} {
		rows = append(rows, append([]string{d.name}, distCells(d.d)...))
	}
	writeTable(b, rows, "lrrrrrrrr", nil)

	// Groups.
	if len(rpt.Groups) > 0 {
		fmt.Fprintln(b)
		fmt.Fprintln(b, paint(ansiBold, "groups"))
		rows := [][]string{{"dimension", "key", "n", "err", "degr", "TTFT p50", "TPOT p50", "TPOT p99", "ITL p99", "ITL p99.9"}}
		for _, g := range rpt.Groups {
			rows = append(rows, []string{plain(g.Dimension), plainKey(g.Key),
				FormatCount(g.Requests), FormatCount(g.Errors), FormatCount(g.Degraded), FormatMs(g.TTFT.P50),
				FormatMs(g.TPOT.P50), FormatMs(g.TPOT.P99), FormatMs(g.ITL.P99), FormatMs(g.ITL.P999)})
		}
		writeTable(b, rows, "llrrrrrrrr", nil)
	}

	// Checks: warn lines marked with "!" (and yellow).
	if len(rpt.Checks) > 0 {
		fmt.Fprintln(b)
		fmt.Fprintln(b, paint(ansiBold, "checks"))
		var rows [][]string
		for _, c := range rpt.Checks {
			mark := " "
			if c.Status != "ok" {
				mark = "!"
			}
			rows = append(rows, []string{mark + " " + plain(c.Status), plain(c.Name), plain(c.Detail)})
		}
		writeTable(b, rows, "lll", func(i int, l string) string {
			if rpt.Checks[i].Status != "ok" {
				return paint(ansiYellow, l)
			}
			return l
		})
	}

}

// textRequest writes one request: a header line, its Jaeger URL and its
// token timeline.
func textRequest(b *bytes.Buffer, n int, r *Request, paint func(string, string) string) {
	head := fmt.Sprintf("#%d %s", n, plain(r.TraceID))
	for _, f := range []string{r.Model, r.Instance} {
		if f != "" {
			head += " · " + plain(f)
		}
	}
	head += fmt.Sprintf(" · %s tokens · TTFT %s · TPOT %s", FormatCount(r.Tokens), FormatMs(r.TTFTMs), FormatMs(r.TPOTMs))
	if lost := r.LostMs(); lost > 0 {
		head += " · lost " + humanMs(lost)
	}
	if r.Outcome != "" && r.Outcome != "complete" {
		head += " · " + plain(r.Outcome)
	}
	fmt.Fprintln(b, paint(ansiBold, head))
	if r.URL != "" {
		fmt.Fprintln(b, "   "+plain(r.URL))
	}
	rows := timeline(r)
	var maxMs float64
	labelW := 0
	paceW := 0
	for _, row := range rows {
		maxMs = max(maxMs, row.Ms)
		labelW = max(labelW, len(tokenRange(row.From, row.To, "-"))+2)
		paceW = max(paceW, utf8.RuneCountInString(pace(row)))
	}
	for _, row := range rows {
		bar := 1
		if maxMs > 0 && row.Ms > 0 {
			bar = max(1, int(math.Ceil(row.Ms/maxMs*barWidth)))
		}
		l := fmt.Sprintf("   %-*s  %-*s  %*s ms/token", labelW, "["+tokenRange(row.From, row.To, "-")+"]",
			barWidth, strings.Repeat("▇", bar), paceW, pace(row))
		if s := row.Seg; s != nil {
			kind := "degraded"
			if s.Kind == "stall" {
				kind = "stall"
			}
			l = paint(ansiRed, l+fmt.Sprintf("  ← %s %s: %s", kind, times(s.Slowdown), causeLine(s, plain)))
		}
		fmt.Fprintln(b, l)
	}
	if !r.Degraded() {
		fmt.Fprintln(b, "   no degraded segment")
	}
	for _, w := range r.Warnings {
		fmt.Fprintln(b, "   note: "+plain(w))
	}
}

// writeTable writes rows as columns two spaces apart, aligned left ('l')
// or right ('r') by align, without trailing blanks; style, when not nil,
// may wrap each finished line (colour).
func writeTable(b *bytes.Buffer, rows [][]string, align string, style func(i int, line string) string) {
	width := make([]int, len(align))
	for _, r := range rows {
		for i, c := range r {
			width[i] = max(width[i], utf8.RuneCountInString(c))
		}
	}
	for i, r := range rows {
		var l strings.Builder
		for j, c := range r {
			pad := strings.Repeat(" ", width[j]-utf8.RuneCountInString(c))
			if j > 0 {
				l.WriteString("  ")
			}
			if align[j] == 'r' {
				l.WriteString(pad + c)
			} else {
				l.WriteString(c + pad)
			}
		}
		line := strings.TrimRight(l.String(), " ")
		if style != nil {
			line = style(i, line)
		}
		b.WriteString(line + "\n")
	}
}

// pace is a row's ms/token: "85", "4.2", "≈22" when not measured.
func pace(row paceRow) string {
	var s string
	switch {
	case !isFinite(row.Ms):
		s = "-"
	case row.Ms >= 9.95:
		s = FormatCount(int(math.Round(row.Ms)))
	default:
		s = fmt.Sprintf("%.1f", row.Ms)
	}
	if row.Approx {
		s = "≈" + s
	}
	return s
}

// plainKey shows a group key; the empty key means the label was not set.
func plainKey(k string) string {
	if k == "" {
		return "(unset)"
	}
	return plain(k)
}
