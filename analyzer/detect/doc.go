// Package detect finds the degradation segments of one streamed response:
// the stretches of its token gaps that came out slower than the request's
// own pace.
//
// The input is the request's gaps after the first token, in milliseconds
// (gap i is the time from chunk i to chunk i+1, already divided by the
// number of tokens in a multi-token chunk). The output is a list of
// segments in order, each a run (at least MinRun gaps at a slower pace) or
// a stall (one long gap, or a few consecutive ones: an event), with its
// baseline, median, slowdown and lost time, and the request's baseline
// pace. Detect is the one-call form; a Detector reuses its buffers and
// does not allocate once warmed up.
//
// # Method
//
// 1. Log transform. The analysis runs on y = log(max(gap, f)), with f a
// tenth of the request's median gap. A slowdown multiplies the step time,
// so in log space it is a shift of the mean whatever the pace, and the
// jitter of a real engine (log-normal, 2.5–15 % on the recorded runs)
// has the same spread at 7 ms and at 50 ms. The floor f stops a gap of a
// few microseconds (two tokens read from the socket together) from
// dominating a squared-error cost; it never touches a compute pace.
//
// 2. Robust scale. σ = 1.4826·MAD(Δy)/√2, the median absolute deviation
// of the first differences of y: a level shift moves one difference and
// a spike two, so neither inflates σ (a 1 s stall in a 12 ms stream would
// multiply a plain standard deviation many times over), and a slow drift
// barely moves the differences at all. Independent noise gives
// Var(Δy) = 2σ², hence the √2; the real jitter is partly anti-correlated
// (a late token makes the next gap short), which makes this estimate a
// little larger than σ — on the safe side. σ is floored at 0.01 (1 %) so
// that constant or coarsely quantised gaps do not make every rounding step
// a change point.
//
// 3. Change points: binary segmentation with the Gaussian change-in-mean
// cost of known variance, C(a,b) = Σ(y−ȳ)²/σ² over [a,b). An interval is
// split at the point of largest cost reduction n₁n₂/(n₁+n₂)·(ȳ₁−ȳ₂)²/σ²
// when that reduction exceeds the penalty
//
//	β = c · ln n / Sensitivity,  c = PenaltyFactor = 3,
//
// and both halves are searched again. 3·ln n is the MBIC penalty of a
// change in mean on a unit-variance scale; binary segmentation with it
// was the best untuned method of the TCPDBench evaluation (van den Burg &
// Williams 2020). Binary segmentation rather than PELT because of the
// common case: a healthy request has few or no change points, and there
// PELT's pruning removes almost nothing and it becomes quadratic, while
// binary segmentation costs one O(n) scan per level of splitting; and
// because its split points do not depend on β: a higher Sensitivity
// returns a superset of the change points. Segments may be one gap long,
// so a stall is isolated rather than smeared into its neighbours.
//
// 4. Plateaus. Consecutive segments whose medians lie within a factor
// MinSlowdown of each other form one plateau: a change smaller than the
// effect size cannot be the edge of a degradation, and merging keeps a
// steep but steady ramp (a chunked prefill's gaps grow along its run)
// one unit. A stretch of fewer than MinRun gaps between two plateaus of
// one level, each at least MinRun gaps long, is an outlier of that level
// and joins it. Plateaus of at least MinRun gaps are "long" and make the
// level structure; shorter ones are outliers, judged by the stall rule.
//
// 5. Effect size against the local neighbourhood. A block of consecutive
// long plateaus is degraded when all three hold:
//
//   - Step-like edges. It starts with a step up and ends with a step down
//     of at least MinSlowdown, measured locally: the edgeWindow (10) gaps
//     just inside against the 10 raw gaps just outside. This is what keeps
//     a drift out: a pace that grows smoothly with context length (7 → 20
//     ms over 400 tokens on the recorded controls) has no such step, even
//     when a coarse segmentation cuts it into a staircase or into one big
//     jump; the windows look at the data around the boundary, not at the
//     segments' means.
//   - Level. Every plateau in it is at least MinSlowdown × the reference:
//     the geometric mean of the paces just before and just after the block
//     (log-linear interpolation of the baseline across it, so a baseline
//     that drifted up meanwhile is neither ignored nor held against the
//     block), or the one existing side at an end of the request.
//   - Minority. It covers less than half of the request: the request's own
//     pace is what most of its tokens did. Without this, a stream that
//     started alone on the engine (5 ms gaps for its first few tokens,
//     then 13 ms when the others joined) or finished alone would see its
//     whole life as one degradation.
//
// The degraded plateaus are the union of the degraded blocks. Each maximal
// stretch of them is reported as one run, or as several where two
// adjacent levels differ by MinSlowdown or more (a chunked prefill at
// 10–25× followed by a batch slow-down at 2–4× comes out as two runs). A
// short outlier inside such a stretch belongs to it, and one next to it
// joins it when it is itself slow. A reported run has at least MinRun
// gaps of which at least MinRun are MinSlowdown × its baseline or more,
// and its median is too.
//
// Levels on short stretches are read conservatively, from the side each
// claim needs: a stretch claimed slow has the largest level that at least
// MinRun of its gaps reach (two 2× outliers among three gaps are not a 2×
// run), a stretch it is compared with the smallest level that at least
// MinRun of its gaps stay under (one tiny gap among three is not a fast
// baseline). On 2·MinRun gaps or more both are the median.
//
// The request's baseline (returned by Detect) is the median gap of its
// undegraded long plateaus. It is not the median of the lowest-level
// plateaus: on a drifting request or one that began alone, the lowest
// level is a few early gaps at a third of the typical pace, and measuring
// against it flags the rest of the request. Each segment carries its own,
// local, BaselineMs.
//
// 6. Stalls. A gap is a stall when it is at least StallFactor × the
// request's baseline, at least StallFactor × its local pace, and at least
// StallMinMs. The local pace is the higher of the paces of the 10 raw gaps
// on either side (the larger so that a gap beside a slow run is judged
// against the run), and, inside a run, the run's own level: a stall inside
// a run is an event on top of the run's pace and is carved out of it
// (run, stall, run; a run fragment shorter than MinRun left by the carving
// goes with the stall). Consecutive stall gaps, or stalls bridged by fewer
// than MinRun slow gaps, are one stall: a prompt larger than the engine's
// batch gives two or three long gaps in a row, one event. The request
// baseline in the rule keeps a gap that is large only against an unusually
// fast stretch (a stream's first tokens before the others joined) from
// counting as an event of the request.
//
// 7. Short requests. With fewer than MinGaps (8) gaps there is no room
// for a run with a baseline on either side: each gap is only compared
// with the request's lower median for the stall rule. An empty input
// returns nothing and a baseline of 0.
//
// 8. The first gaps. The first gap is not treated specially: when another
// request's prompt is prefilled just after this one's first token, the
// first gap is exactly that stall, and it must be reported. The first
// gaps are often also very short (tokens that were already queued come
// out together); the log floor and the fast-level rule keep those from
// making a baseline that everything after looks slow against.
//
// # Defaults
//
//   - Sensitivity 1: the MBIC penalty 3·ln n. Raising it lowers the penalty
//     and finds shorter or noisier steps; it never changes the effect-size
//     rules, so it cannot turn a 1.3× wobble into a degradation.
//   - MinSlowdown 1.6: the usual effect size for a latency degradation is
//     1.5–2× the baseline median; the causes this package exists for are
//     well above it (a batch slow-down is 2–4×, a chunked prefill 10–25×),
//     and log 1.6 = 0.47 is more than 3σ of the noisiest recorded stream
//     (σ = 0.145) and 10–15σ of typical ones (σ ≈ 0.03–0.05), so three
//     gaps in a row at that level do not come from jitter. It is lower than the 1.8× of the
//     ground truth's labelling rule because that rule measures against the
//     pace before the event and this one against the interpolated pace,
//     which is higher when the baseline drifts up.
//   - MinRun 3: the smallest number of gaps whose median is robust to one
//     outlier; a chunked prefill of a prompt of two or three chunks is 2–3
//     gaps. Shorter stretches are still caught when they are stalls.
//   - StallFactor 4: GC pauses and unchunked prefills make gaps of 5–100×
//     the pace, while a late token from delivery or scheduling is mostly
//     1.5–3× (occasionally 4× a stretch that is unusually fast, which the
//     request-baseline condition handles); log 4 = 1.39 is almost 10σ even
//     for the noisiest recorded stream.
//   - StallMinMs 20: a floor in absolute time that only applies to fast
//     streams (a baseline under StallMinMs/StallFactor = 5 ms): there a
//     4× gap is 5–20 ms, the size of scheduling latency on a loaded host
//     (the CFS scheduler's target latency is 6–24 ms depending on the core
//     count; Go preempts a running goroutine after 10 ms) and of network
//     jitter, below what anyone can perceive or attribute. For ordinary
//     paces (10–50 ms per token) the relative rule decides.
//   - edgeWindow 10 (not configurable): the gaps on each side of a
//     boundary that decide whether it is a step — short enough that a
//     drift of 7 → 20 ms over 400 tokens moves under 3 % within it, long
//     enough that the median ignores up to four outliers.
//   - MinGaps 8 (not configurable): with fewer gaps a run of MinRun gaps
//     cannot be the minority of the request and still have MinRun gaps of
//     baseline to measure its step against.
//
// # Cost
//
// O(n·d) time for a split tree of depth d — O(n log n) when the splits
// are balanced, as on real requests — plus O(n) for the medians
// (quickselect) and O(n) memory held by the Detector; no allocation per
// call once warmed up. On the benchmark input (drift, jitter, outliers, a
// prefill run, a batch run and a stall) that is about 10–20 million gaps
// per second on one core. The worst case of binary segmentation is a
// level that changes every few gaps across the whole request, which it
// peels one change at a time, O(n·k) for k change points: 5,000 gaps
// alternating between two levels every 3 gaps take some 10–35 ms.
//
// # Limits
//
// A degradation that covers half of a request or more is reported as its
// pace, not as a degradation; a run at the very start or end of a request
// is compared with one side only. A slow trend is not reported at all.
// The change points are nested across sensitivities, but the segments
// are decided by thresholds on levels measured from them: for an effect
// within a few percent of MinSlowdown or StallFactor, a finer
// segmentation can tip the decision either way, so a higher Sensitivity
// can, rarely, report one segment fewer.
package detect
