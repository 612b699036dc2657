package report

import (
	"bytes"
	"fmt"
	"io"
	"net/url"
	"strings"
	"time"
)

// printMarkdown writes the report for a write-up: the text format's
// sections as tables, and per worst request its timeline and a paragraph
// per segment that can be pasted into an incident report. Every value
// taken from the traces is escaped (no raw HTML, no broken tables).
func printMarkdown(w io.Writer, rpt *Report, opts Options) error {
	var b bytes.Buffer
	var notes []string
	note := func(s string) string {
		notes = append(notes, s)
		return fmt.Sprintf("[^%d]", len(notes))
	}

	b.WriteString("# tokentrace report\n\n")
	var meta []string
	if rpt.Source != "" {
		meta = append(meta, "Source: "+mdEscape(rpt.Source))
	}
	if !rpt.Generated.IsZero() {
		meta = append(meta, "generated "+rpt.Generated.Format(time.RFC3339))
	}
	meta = append(meta, fmt.Sprintf("sensitivity %g", rpt.Sensitivity), "schema "+mdEscape(rpt.Schema))
	b.WriteString(strings.Join(meta, " · ") + "\n\n")

	if !opts.RequestsOnly {
		mdRunWide(&b, rpt, note)
	}

	if ws := worst(rpt, opts); len(ws) > 0 {
		if opts.RequestsOnly {
			b.WriteString("## Requests\n")
		} else {
			b.WriteString("\n## Worst requests\n")
		}
		for i, r := range ws {
			mdRequest(&b, i+1, r)
		}
	}

	if len(notes) > 0 {
		b.WriteString("\n")
		for i, n := range notes {
			fmt.Fprintf(&b, "[^%d]: %s\n", i+1, n)
		}
	}
	_, err := w.Write(b.Bytes())
	return err
}

// mdRunWide writes the run-wide sections: summary, groups and checks.
func mdRunWide(b *bytes.Buffer, rpt *Report, note func(string) string) {
	s := &rpt.Summary
	b.WriteString("## Summary\n\n")
	line := fmt.Sprintf("%s requests, %s tokens; %s degraded", FormatCount(s.Requests), FormatCount(s.Tokens), FormatCount(s.DegradedRequests))
	if s.Requests > 0 {
		line += " (" + FormatPercent(float64(s.DegradedRequests)/float64(s.Requests)) + ")"
	}
	line += fmt.Sprintf(", %s segments", FormatCount(s.Segments))
	if len(s.Causes) > 0 {
		line += " (" + causesLine(s.Causes, mdEscape) + ")"
	}
	for _, sk := range rpt.Skipped {
		ex := ""
		if sk.Example != "" {
			ex = " (e.g. " + mdEscape(sk.Example) + ")"
		}
		line += note(fmt.Sprintf("Skipped %s: %s%s.", FormatCount(sk.Count), mdEscape(sk.Reason), ex))
	}
	if n := len(rpt.Warnings); n > 0 {
		line += fmt.Sprintf("; %d warning%s", n, plural(n))
		for _, w := range rpt.Warnings {
			line += note(mdEscape(w))
		}
	}
	b.WriteString(line + ".\n\n")
	b.WriteString("| | n | mean | p50 | p90 | p99 | p99.9 | p99.99 | max |\n|---|--:|--:|--:|--:|--:|--:|--:|--:|\n")
	for _, d := range []struct {
		name string
		d    Dist
	}{{"TTFT", s.TTFT}, {"TPOT", s.TPOT}, {"ITL", s.ITL}} {
		fmt.Fprintf(b, "| %s | %s |\n", d.name, strings.Join(distCells(d.d), " | "))
	}

	if len(rpt.Groups) > 0 {
		b.WriteString("\n## Groups\n\n")
		b.WriteString("| dimension | key | n | errors | degraded | TTFT p50 | TPOT p50 | TPOT p99 | ITL p99 | ITL p99.9 |\n")
		b.WriteString("|---|---|--:|--:|--:|--:|--:|--:|--:|--:|\n")
		for _, g := range rpt.Groups {
			key := "*(unset)*"
			if g.Key != "" {
				key = mdEscape(g.Key)
			}
			fmt.Fprintf(b, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s |\n", mdEscape(g.Dimension), key,
				FormatCount(g.Requests), FormatCount(g.Errors), FormatCount(g.Degraded), FormatMs(g.TTFT.P50),
				FormatMs(g.TPOT.P50), FormatMs(g.TPOT.P99), FormatMs(g.ITL.P99), FormatMs(g.ITL.P999))
		}
	}

	if len(rpt.Checks) > 0 {
		b.WriteString("\n## Checks\n\n| check | status | detail |\n|---|---|---|\n")
		for _, c := range rpt.Checks {
			status := mdEscape(c.Status)
			if c.Status != "ok" {
				status = "⚠️ **" + status + "**"
			}
			fmt.Fprintf(b, "| %s | %s | %s |\n", mdEscape(c.Name), status, mdEscape(c.Detail))
		}
	}
}

func mdRequest(b *bytes.Buffer, n int, r *Request) {
	id := mdEscape(r.TraceID)
	if id == "" {
		id = "*(no trace id)*"
	}
	fmt.Fprintf(b, "\n### %d. %s\n\n", n, id)
	var facts []string
	for _, f := range []string{r.Service, r.Model, r.Instance} {
		if f != "" {
			facts = append(facts, mdEscape(f))
		}
	}
	facts = append(facts, FormatCount(r.Tokens)+" tokens", "TTFT "+FormatMs(r.TTFTMs), "TPOT "+FormatMs(r.TPOTMs))
	if lost := r.LostMs(); lost > 0 {
		facts = append(facts, "lost "+humanMs(lost))
	}
	if r.Outcome != "" && r.Outcome != "complete" {
		facts = append(facts, mdEscape(r.Outcome))
	}
	if u := mdURL(r.URL); u != "" {
		facts = append(facts, "[Jaeger]("+u+")")
	}
	b.WriteString(strings.Join(facts, " · ") + "\n\n")

	b.WriteString("| tokens | ms/token | |\n|---|--:|---|\n")
	for _, row := range timeline(r) {
		what := ""
		if s := row.Seg; s != nil {
			what = fmt.Sprintf("**%s** %s: %s", segKind(s), times(s.Slowdown), causeLine(s, mdEscape))
		}
		fmt.Fprintf(b, "| %s | %s | %s |\n", tokenRange(row.From, row.To, "–"), pace(row), what)
	}
	for i := range r.Segments {
		b.WriteString("\n" + sentence(r, &r.Segments[i], mdEscape) + "\n")
	}
	if !r.Degraded() {
		b.WriteString("\nNo degraded segment.\n")
	}
	for _, w := range r.Warnings {
		b.WriteString("\n> Note: " + mdEscape(w) + "\n")
	}
}

func segKind(s *Segment) string {
	if s.Kind == "stall" {
		return "stall"
	}
	return "degraded"
}

// mdEscape makes a value from the traces inert in Markdown: line breaks
// become spaces and the characters that could make markup inside a line
// (table cells, emphasis, links, code, raw HTML, entities) are
// backslash-escaped. Values never start a line, so "#", "-" and "+" stay.
func mdEscape(s string) string {
	var b strings.Builder
	for _, r := range s {
		switch {
		case r == '\n' || r == '\r' || r == '\t':
			b.WriteByte(' ')
		case r < 0x20 || r == 0x7f:
			b.WriteRune('\uFFFD')
		case strings.ContainsRune("\\`*_[]<>|~&", r):
			b.WriteByte('\\')
			b.WriteRune(r)
		default:
			b.WriteRune(r)
		}
	}
	return b.String()
}

// mdURL returns an http(s) URL made safe for a Markdown link target, or "".
func mdURL(s string) string {
	u, err := url.Parse(s)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return ""
	}
	out := u.String()
	return strings.NewReplacer("(", "%28", ")", "%29", "<", "%3C", ">", "%3E", " ", "%20", "\"", "%22").Replace(out)
}
