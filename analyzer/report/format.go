package report

import (
	"cmp"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
	"strings"
	"unicode"
)

// DefaultMaxRequests is how many of the worst requests are shown in detail.
const DefaultMaxRequests = 10

// Options tune the rendering; the zero value is valid.
type Options struct {
	// Color adds ANSI colours to the text format (warnings, degraded rows).
	Color bool
	// MaxRequests is how many of the worst requests the text, md and html
	// formats show in detail: 0 means DefaultMaxRequests, a negative value
	// all of them. JSON always holds every request.
	MaxRequests int
	// JaegerUI is the base URL of a Jaeger UI (e.g. http://localhost:16686);
	// a request without a URL gets JaegerUI/trace/<trace id>.
	JaegerUI string
	// RequestsOnly leaves out the run-wide sections (summary, groups,
	// checks) and shows every request of the report in depth, degraded or
	// not (tokentrace trace). Not for JSON.
	RequestsOnly bool
	// StatsOnly leaves out the requests (tokentrace stats). Not for JSON.
	StatsOnly bool
}

// Formats returns the formats Write knows.
func Formats() []string { return []string{"text", "json", "md", "html"} }

// Write renders rpt in a format: "text" (a terminal), "json" (the
// tokentrace.report/v1 contract, docs/report.md), "md" (Markdown for
// write-ups) or "html" (one self-contained page). rpt is not modified.
func Write(w io.Writer, rpt *Report, format string, opts Options) error {
	if rpt == nil {
		return errors.New("report: nil report")
	}
	rpt = prepare(rpt, opts)
	switch format {
	case "text":
		return printText(w, rpt, opts)
	case "json":
		return printJSON(w, rpt)
	case "md":
		return printMarkdown(w, rpt, opts)
	case "html":
		return printHTML(w, rpt, opts)
	}
	return fmt.Errorf("report: unknown format %q (want one of %s)", format, strings.Join(Formats(), ", "))
}

// prepare returns a copy of rpt with the schema set, the Jaeger URLs
// filled and nil lists made empty, so that every format shows the same
// data and rpt stays untouched.
func prepare(rpt *Report, opts Options) *Report {
	out := *rpt
	if out.Schema == "" {
		out.Schema = Schema
	}
	out.Requests = slices.Clone(rpt.Requests)
	if out.Requests == nil {
		out.Requests = []Request{}
	}
	base := strings.TrimRight(opts.JaegerUI, "/")
	for i := range out.Requests {
		r := &out.Requests[i]
		if r.URL == "" && base != "" && r.TraceID != "" {
			r.URL = base + "/trace/" + r.TraceID
		}
		r.Segments = slices.Clone(r.Segments)
		if r.Segments == nil {
			r.Segments = []Segment{}
		}
		for j := range r.Segments {
			if r.Segments[j].Evidence == nil {
				r.Segments[j].Evidence = []Evidence{}
			}
		}
	}
	return &out
}

// LostMs is the time the request lost in its segments.
func (r *Request) LostMs() float64 {
	var s float64
	for i := range r.Segments {
		s += r.Segments[i].LostMs
	}
	return s
}

// worst returns the requests to show in depth, worst first: those with a
// segment and those the caller filled GapsMs for (it asked for depth), or
// every one with RequestsOnly; ordered by lost time, then TPOT, then trace
// id. None with StatsOnly.
func worst(rpt *Report, opts Options) []*Request {
	if opts.StatsOnly {
		return nil
	}
	var out []*Request
	for i := range rpt.Requests {
		r := &rpt.Requests[i]
		if r.Degraded() || len(r.GapsMs) > 0 || opts.RequestsOnly {
			out = append(out, r)
		}
	}
	slices.SortStableFunc(out, func(a, b *Request) int {
		return cmp.Or(cmp.Compare(b.LostMs(), a.LostMs()), cmp.Compare(b.TPOTMs, a.TPOTMs), cmp.Compare(a.TraceID, b.TraceID))
	})
	n := opts.MaxRequests
	if n == 0 {
		n = DefaultMaxRequests
	}
	if n > 0 && len(out) > n {
		out = out[:n]
	}
	return out
}

// paceRow is one row of a request's token timeline: a segment, or a clean
// stretch between segments at its median pace.
type paceRow struct {
	From, To int     // token indices, inclusive
	Ms       float64 // ms per token
	// Approx: the clean pace was not measured (no per-gap data in the
	// report); Ms is the neighbouring segment's baseline or the TPOT.
	Approx bool
	Seg    *Segment // nil for a clean stretch
}

// timeline splits a request's tokens 1..last (token 0's gap is the TTFT)
// into segments and the clean stretches between them.
func timeline(r *Request) []paceRow {
	last := r.Tokens - 1
	for _, t := range r.GapTokens {
		last = max(last, t)
	}
	segs := make([]*Segment, 0, len(r.Segments))
	for i := range r.Segments {
		segs = append(segs, &r.Segments[i])
		last = max(last, r.Segments[i].EndToken)
	}
	if last < 1 {
		return nil
	}
	slices.SortStableFunc(segs, func(a, b *Segment) int { return cmp.Compare(a.StartToken, b.StartToken) })
	var rows []paceRow
	next := 1
	clean := func(from, to int, prev, following *Segment) {
		if from > to {
			return
		}
		ms, ok := medianGap(r, from, to)
		row := paceRow{From: from, To: to, Ms: ms}
		if !ok {
			row.Approx = true
			switch {
			case prev != nil && prev.BaselineMs > 0:
				row.Ms = prev.BaselineMs
			case following != nil && following.BaselineMs > 0:
				row.Ms = following.BaselineMs
			default:
				row.Ms = r.TPOTMs
			}
		}
		rows = append(rows, row)
	}
	var prev *Segment
	for _, s := range segs {
		from, to := max(s.StartToken, next), s.EndToken
		if from > to {
			continue // overlaps the previous segment
		}
		clean(next, from-1, prev, s)
		rows = append(rows, paceRow{From: from, To: to, Ms: s.MedianMs, Seg: s})
		next, prev = to+1, s
	}
	clean(next, last, prev, nil)
	return rows
}

// medianGap is the median of the request's gaps ending at tokens in
// [from, to].
func medianGap(r *Request, from, to int) (float64, bool) {
	var v []float64
	for i, g := range r.GapsMs {
		t := i + 1 // without GapTokens: one token per chunk
		if len(r.GapTokens) == len(r.GapsMs) {
			t = r.GapTokens[i]
		}
		if t >= from && t <= to && isFinite(g) {
			v = append(v, g)
		}
	}
	if len(v) == 0 {
		return 0, false
	}
	slices.Sort(v)
	if n := len(v); n%2 == 0 {
		return (v[n/2-1] + v[n/2]) / 2, true
	}
	return v[len(v)/2], true
}

// tokenRange is "51-100", or "51" for one token.
func tokenRange(from, to int, dash string) string {
	if from == to {
		return strconv.Itoa(from)
	}
	return strconv.Itoa(from) + dash + strconv.Itoa(to)
}

// mainEvidence is the evidence with the largest overlap (the first one on
// a tie), or nil.
func mainEvidence(s *Segment) *Evidence {
	var best *Evidence
	for i := range s.Evidence {
		if e := &s.Evidence[i]; best == nil || e.OverlapMs > best.OverlapMs {
			best = e
		}
	}
	return best
}

// causeLine is the terse cause of a segment for a table or the text
// timeline: the segment's Detail (the correlator's own words, e.g.
// "prefill of 4f2a9c1e… (3,100 prompt tokens)") or, without one, a phrase
// built from the cause and the main evidence; then the overlap and the
// confidence. esc escapes each value taken from the traces.
func causeLine(s *Segment, esc func(string) string) string {
	ev := mainEvidence(s)
	var b strings.Builder
	switch {
	case (s.Cause == CauseUnknown || s.Cause == "") && s.Detail != "":
		b.WriteString("no cause found: " + esc(s.Detail))
	case s.Detail != "":
		b.WriteString(esc(s.Detail))
	default:
		b.WriteString(causePhrase(s, ev, esc))
	}
	if ev != nil && ev.OverlapMs > 0 {
		b.WriteString(", overlap " + humanMs(ev.OverlapMs))
	}
	if s.Cause != CauseUnknown && s.Cause != "" {
		fmt.Fprintf(&b, ", confidence %.2f", s.Confidence)
	}
	return b.String()
}

// causePhrase names a cause from its evidence: "prefill of 4f2a9c1e…
// (3,100 prompt tokens)", "batch: 9be1d0a4… decoding alongside", ...
func causePhrase(s *Segment, ev *Evidence, esc func(string) string) string {
	other := "another request"
	if ev != nil && ev.TraceID != "" {
		other = esc(ShortID(ev.TraceID))
	}
	if ev != nil && ev.PromptTokens > 0 {
		other += fmt.Sprintf(" (%s prompt tokens)", FormatCount(ev.PromptTokens))
	}
	switch s.Cause {
	case CausePrefill:
		return "prefill of " + other
	case CauseBatch:
		return "batch: " + other + " decoding alongside"
	case CauseKVSwap:
		return "KV-cache preemption/swap"
	case CauseGC:
		return "GC pause"
	case CauseUnknown, "":
		return "no cause found"
	}
	return esc(s.Cause)
}

// sentence is a segment told for an incident report: "Tokens 51–100 came
// at 85 ms/token, 3.9× the request's 22 ms baseline, while request
// 4f2a9c1e… (3,100 prompt tokens) was being prefilled on the same
// instance gpu-0:8000 (overlap 1.2 s, confidence 0.85)." esc escapes each
// value taken from the traces.
func sentence(r *Request, s *Segment, esc func(string) string) string {
	var b strings.Builder
	if s.StartToken == s.EndToken {
		fmt.Fprintf(&b, "Token %d came after %s %s gap", s.StartToken, article(humanMs(s.MedianMs)), humanMs(s.MedianMs))
	} else {
		fmt.Fprintf(&b, "Tokens %s came at %s/token", tokenRange(s.StartToken, s.EndToken, "–"), humanMs(s.MedianMs))
	}
	if s.BaselineMs > 0 {
		fmt.Fprintf(&b, ", %s the request's %s baseline", strings.TrimPrefix(times(s.Slowdown), "×")+"×", humanMs(s.BaselineMs))
	}
	inst := "the same instance"
	if r.Instance != "" {
		inst += " " + esc(r.Instance)
	}
	ev := mainEvidence(s)
	who, named := "another request", false
	if ev != nil && ev.TraceID != "" {
		who, named = "request "+esc(ShortID(ev.TraceID)), true
	}
	if ev != nil && ev.PromptTokens > 0 {
		who += fmt.Sprintf(" (%s prompt tokens)", FormatCount(ev.PromptTokens))
	}
	var extra []string
	switch {
	case named && (s.Cause == CausePrefill || s.Cause == CauseBatch):
		// The segment's detail may name another request than the main
		// evidence; the evidence's own detail has its size when the
		// prompt_tokens field is not filled.
		if ev.PromptTokens == 0 && ev.Detail != "" {
			extra = append(extra, esc(ev.Detail))
		}
	case s.Detail != "":
		extra = append(extra, esc(s.Detail))
	}
	if ev != nil && ev.OverlapMs > 0 {
		extra = append(extra, "overlap "+humanMs(ev.OverlapMs))
	}
	if s.Cause != CauseUnknown && s.Cause != "" {
		extra = append(extra, fmt.Sprintf("confidence %.2f", s.Confidence))
	}
	switch s.Cause {
	case CausePrefill:
		fmt.Fprintf(&b, ", while %s was being prefilled on %s", who, inst)
	case CauseBatch:
		fmt.Fprintf(&b, ", while %s was decoding in the same batch on %s", who, inst)
	case CauseKVSwap:
		fmt.Fprintf(&b, ", while the engine on %s preempted or swapped KV-cache blocks", inst)
	case CauseGC:
		fmt.Fprintf(&b, ", during a GC pause on %s", inst)
	case CauseUnknown, "":
		fmt.Fprintf(&b, "; no cause was found (no engine event or overlapping request on %s explains it)", inst)
	default:
		fmt.Fprintf(&b, ", cause %s on %s", esc(s.Cause), inst)
	}
	if len(extra) > 0 {
		b.WriteString(" (" + strings.Join(extra, ", ") + ")")
	}
	b.WriteString(".")
	if s.LostMs > 0 {
		fmt.Fprintf(&b, " That cost %s.", humanMs(s.LostMs))
	}
	return b.String()
}

// article is "an" before a number read with a vowel sound (8…, 11…, 18…),
// else "a".
func article(num string) string {
	lead := num
	if i := strings.IndexAny(num, "., "); i >= 0 {
		lead = num[:i]
	}
	if strings.HasPrefix(num, "8") || lead == "11" || lead == "18" {
		return "an"
	}
	return "a"
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// causesLine is "prefill 30, batch 10, gc 8": segments by cause, most
// first. esc escapes each cause name.
func causesLine(c map[string]int, esc func(string) string) string {
	keys := make([]string, 0, len(c))
	for k := range c {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b string) int { return cmp.Or(cmp.Compare(c[b], c[a]), cmp.Compare(a, b)) })
	parts := make([]string, len(keys))
	for i, k := range keys {
		parts[i] = esc(k) + " " + FormatCount(c[k])
	}
	return strings.Join(parts, ", ")
}

// ShortID shortens a trace id for display: its first 8 characters and "…".
func ShortID(id string) string {
	if r := []rune(id); len(r) > 8 {
		return string(r[:8]) + "…"
	}
	return id
}

// FormatMs formats milliseconds tersely with three significant digits and
// a unit, like benchstat: "850µs", "15.2ms", "152ms", "1.52s", "152s".
// Non-finite values print as "-".
func FormatMs(ms float64) string {
	switch {
	case !isFinite(ms):
		return "-"
	case ms < 0:
		return "-" + FormatMs(-ms)
	case ms == 0:
		return "0"
	}
	type unit struct {
		scale float64
		name  string
	}
	for _, u := range []unit{{1e-6, "ns"}, {1e-3, "µs"}, {1, "ms"}} {
		if v := round3(ms / u.scale); v < 1000 {
			return sig3(v) + u.name
		}
	}
	return sig3(round3(ms/1000)) + "s"
}

// round3 rounds to three significant digits.
func round3(v float64) float64 {
	if v == 0 {
		return 0
	}
	p := math.Pow10(2 - int(math.Floor(math.Log10(math.Abs(v)))))
	return math.Round(v*p) / p
}

func sig3(v float64) string {
	switch {
	case v < 10:
		return strconv.FormatFloat(v, 'f', 2, 64)
	case v < 100:
		return strconv.FormatFloat(v, 'f', 1, 64)
	}
	return strconv.FormatFloat(v, 'f', 0, 64)
}

// humanMs is a duration for prose: "4.2 ms", "85 ms", "1.2 s".
func humanMs(ms float64) string {
	switch {
	case !isFinite(ms):
		return "-"
	case ms >= 100_000:
		return FormatCount(int(math.Round(ms/1000))) + " s"
	case ms >= 999.5:
		return strconv.FormatFloat(ms/1000, 'f', 1, 64) + " s"
	case ms >= 9.95:
		return strconv.FormatFloat(ms, 'f', 0, 64) + " ms"
	case ms >= 1:
		return strconv.FormatFloat(ms, 'f', 1, 64) + " ms"
	}
	return strconv.FormatFloat(ms, 'f', 2, 64) + " ms"
}

// times is a slowdown factor: "×3.9", "×40".
func times(f float64) string {
	if !isFinite(f) {
		return "×?"
	}
	if f >= 9.95 {
		return "×" + strconv.FormatFloat(f, 'f', 0, 64)
	}
	return "×" + strconv.FormatFloat(f, 'f', 1, 64)
}

// FormatCount formats an integer with thousands separators: "12,345".
func FormatCount(n int) string {
	s := strconv.Itoa(n)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// FormatPercent formats a share (0.031) as "3.1 %".
func FormatPercent(f float64) string {
	v := f * 100
	switch {
	case !isFinite(v):
		return "-"
	case v == 0:
		return "0 %"
	case math.Abs(v) < 0.1:
		return strconv.FormatFloat(v, 'f', 2, 64) + " %"
	case math.Abs(v) < 9.95:
		return strconv.FormatFloat(v, 'f', 1, 64) + " %"
	}
	return strconv.FormatFloat(v, 'f', 0, 64) + " %"
}

func isFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// plain makes a string from the traces safe for a terminal: control
// characters (ANSI escapes, newlines) become "?".
func plain(s string) string {
	if strings.IndexFunc(s, unicode.IsControl) < 0 {
		return s
	}
	return strings.Map(func(r rune) rune {
		if unicode.IsControl(r) {
			return '?'
		}
		return r
	}, s)
}

func ident(s string) string { return s }
