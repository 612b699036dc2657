package stats

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/tokentrace/tokentrace/analyzer/report"
)

// Names of the checks, in the order Checks returns them.
const (
	CheckErrorRate         = "error_rate"
	CheckInstanceImbalance = "instance_imbalance"
	CheckSawtooth          = "sawtooth_itl"
)

// Status of a check.
const (
	StatusOK   = "ok"
	StatusWarn = "warn"
)

// Checks runs the distortion checks, each "ok" or "warn" with a one-line
// detail:
//
//   - error_rate: more than MaxErrorRate of the requests failed or were cut
//     short (span error, or outcome truncated, client_disconnect or
//     upstream_error). Such streams add few or no TPOT samples, so the
//     detail says whether P99 TPOT still looks normal (≤ TPOTAlertMs) —
//     the case where a TPOT alert stays silent while requests fail.
//   - instance_imbalance: the mean TPOT of two instances (each with ≥
//     MinInstanceRequests samples) differs by more than MaxInstanceSpread;
//     names the slowest and the fastest.
//   - sawtooth_itl: an instance's stalls come at regular intervals (a GC
//     every ~1.5 s, a periodic flush). Stalls (gaps ≥ StallFactor × the
//     request's median gap and ≥ MinStallMs) of all its requests are
//     pooled by the time they ended, those within StallMergeMs merged into
//     one event; the intervals between consecutive events, counted only
//     while some request of the instance was decoding, are periodic when
//     there are ≥ MinStalls−1 of them and their coefficient of variation
//     is below MaxPeriodCV. Reports the period.
func (c *Collector) Checks() []report.Check {
	return []report.Check{c.errorCheck(), c.imbalanceCheck(), c.sawtoothCheck()}
}

func (c *Collector) errorCheck() report.Check {
	ch := report.Check{Name: CheckErrorRate, Status: StatusOK}
	n := len(c.recs)
	if n == 0 {
		ch.Detail = "no requests"
		return ch
	}
	failed := 0
	kinds := make([]string, 0, len(c.errors))
	for k, v := range c.errors {
		failed += v
		kinds = append(kinds, k)
	}
	rate := float64(failed) / float64(n)
	ch.Detail = fmt.Sprintf("%s of %s requests failed or were cut short", report.FormatPercent(rate), report.FormatCount(n))
	if failed > 0 {
		slices.SortFunc(kinds, func(a, b string) int { return cmp.Or(cmp.Compare(c.errors[b], c.errors[a]), cmp.Compare(a, b)) })
		parts := make([]string, len(kinds))
		for i, k := range kinds {
			parts[i] = fmt.Sprintf("%s %s", report.FormatCount(c.errors[k]), k)
		}
		ch.Detail += " (" + strings.Join(parts, ", ") + ")"
	}
	if rate <= c.cfg.MaxErrorRate {
		ch.Detail += fmt.Sprintf(", within %s", report.FormatPercent(c.cfg.MaxErrorRate))
		return ch
	}
	ch.Status = StatusWarn
	var tpot []float64
	for i := range c.recs {
		if c.recs[i].flags&hasTPOT != 0 {
			tpot = append(tpot, c.recs[i].tpot)
		}
	}
	slices.Sort(tpot)
	switch {
	case len(tpot) == 0:
		ch.Detail += "; no request has a TPOT"
	case quantile(tpot, 0.99) <= c.cfg.TPOTAlertMs:
		ch.Detail += fmt.Sprintf(" while P99 TPOT %s looks normal (≤ %s): failed streams add few or no TPOT samples",
			report.FormatMs(quantile(tpot, 0.99)), report.FormatMs(c.cfg.TPOTAlertMs))
	default:
		ch.Detail += fmt.Sprintf("; P99 TPOT %s is above %s too",
			report.FormatMs(quantile(tpot, 0.99)), report.FormatMs(c.cfg.TPOTAlertMs))
	}
	return ch
}

func (c *Collector) imbalanceCheck() report.Check {
	ch := report.Check{Name: CheckInstanceImbalance, Status: StatusOK}
	type inst struct {
		name string
		sum  float64
		n    int
	}
	byID := map[uint32]*inst{}
	for i := range c.recs {
		r := &c.recs[i]
		id := r.labels[labInstance]
		if id == 0 || r.flags&hasTPOT == 0 {
			continue
		}
		in := byID[id]
		if in == nil {
			in = &inst{name: c.label[id]}
			byID[id] = in
		}
		in.sum += r.tpot
		in.n++
	}
	var ok []*inst
	for _, in := range byID {
		if in.n >= c.cfg.MinInstanceRequests && in.sum > 0 {
			ok = append(ok, in)
		}
	}
	if len(ok) < 2 {
		ch.Detail = fmt.Sprintf("%d of %d instances have ≥ %d TPOT samples: nothing to compare",
			len(ok), len(byID), c.cfg.MinInstanceRequests)
		return ch
	}
	mean := func(in *inst) float64 { return in.sum / float64(in.n) }
	slices.SortFunc(ok, func(a, b *inst) int { return cmp.Or(cmp.Compare(mean(a), mean(b)), cmp.Compare(a.name, b.name)) })
	lo, hi := ok[0], ok[len(ok)-1]
	spread := mean(hi)/mean(lo) - 1
	if spread > c.cfg.MaxInstanceSpread {
		ch.Status = StatusWarn
		ch.Detail = fmt.Sprintf("%s mean TPOT %s is %s above %s (%s); %d instances compared",
			hi.name, report.FormatMs(mean(hi)), report.FormatPercent(spread), lo.name, report.FormatMs(mean(lo)), len(ok))
		return ch
	}
	ch.Detail = fmt.Sprintf("mean TPOT within %s across %d instances (%s %s to %s %s)",
		report.FormatPercent(spread), len(ok), lo.name, report.FormatMs(mean(lo)), hi.name, report.FormatMs(mean(hi)))
	return ch
}

// period is the regularity of one instance's stalls.
type period struct {
	instance  string
	events    int     // merged stall events
	intervals int     // intervals counted
	meanMs    float64 // mean interval
	cv        float64
	stallMs   float64 // median stall
}

func (c *Collector) sawtoothCheck() report.Check {
	ch := report.Check{Name: CheckSawtooth, Status: StatusOK}
	names := make([]string, 0, len(c.inst))
	for name := range c.inst {
		names = append(names, name)
	}
	slices.Sort(names)
	var warn []string
	var best *period
	for _, name := range names {
		p, ok := c.period(name, c.inst[name])
		if !ok {
			continue
		}
		if p.cv < c.cfg.MaxPeriodCV {
			warn = append(warn, fmt.Sprintf("%s stalls every %s (CV %.2f over %d stalls, median stall %s)",
				p.instance, report.FormatMs(p.meanMs), p.cv, p.events, report.FormatMs(p.stallMs)))
		}
		if best == nil || p.cv < best.cv {
			best = &p
		}
	}
	switch {
	case len(warn) > 0:
		ch.Status = StatusWarn
		ch.Detail = "periodic ITL stalls: " + strings.Join(warn, "; ")
	case best != nil:
		ch.Detail = fmt.Sprintf("no periodic stalls (most regular: %s, CV %.2f over %d stalls)", best.instance, best.cv, best.events)
	default:
		ch.Detail = fmt.Sprintf("no instance has %d stall events in a row to test", c.cfg.MinStalls)
	}
	return ch
}

// period measures the regularity of an instance's stalls; ok is false
// when there are too few intervals.
func (c *Collector) period(name string, d *instanceData) (period, bool) {
	p := period{instance: name}
	if len(d.stalls) < c.cfg.MinStalls {
		return p, false
	}
	stalls := slices.Clone(d.stalls)
	slices.SortFunc(stalls, func(a, b stall) int { return cmp.Compare(a.end, b.end) })
	merge := int64(c.cfg.StallMergeMs * 1e6)
	type event struct {
		at int64
		ms float32
	}
	var events []event
	for _, s := range stalls {
		if n := len(events); n > 0 && s.end-events[n-1].at <= merge {
			events[n-1].ms = max(events[n-1].ms, s.ms)
			continue
		}
		events = append(events, event{s.end, s.ms})
	}
	// Coverage: the union of the decoding windows; a stall could only be
	// seen while some request was decoding.
	wins := slices.Clone(d.windows)
	slices.SortFunc(wins, func(a, b window) int { return cmp.Compare(a.from, b.from) })
	var cover []window
	for _, w := range wins {
		if n := len(cover); n > 0 && w.from <= cover[n-1].to {
			cover[n-1].to = max(cover[n-1].to, w.to)
			continue
		}
		cover = append(cover, w)
	}
	in := func(t int64) int {
		i, _ := slices.BinarySearchFunc(cover, t, func(w window, t int64) int { return cmp.Compare(w.from, t) })
		if i < len(cover) && cover[i].from == t {
			return i
		}
		if i > 0 && t <= cover[i-1].to {
			return i - 1
		}
		return -1
	}
	var iv []float64
	for i := 1; i < len(events); i++ {
		if a := in(events[i-1].at); a >= 0 && a == in(events[i].at) {
			iv = append(iv, float64(events[i].at-events[i-1].at)/1e6)
		}
	}
	p.events = len(events)
	p.intervals = len(iv)
	if len(iv) < c.cfg.MinStalls-1 {
		return p, false
	}
	var sum, sq float64
	for _, v := range iv {
		sum += v
	}
	p.meanMs = sum / float64(len(iv))
	for _, v := range iv {
		sq += (v - p.meanMs) * (v - p.meanMs)
	}
	p.cv = math.Sqrt(sq/float64(len(iv))) / p.meanMs
	sizes := make([]float64, len(events))
	for i, e := range events {
		sizes[i] = float64(e.ms)
	}
	slices.Sort(sizes)
	p.stallMs = quantile(sizes, 0.5)
	return p, true
}
