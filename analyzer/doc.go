// Package analyzer turns tokentrace spans into a root-cause report.
//
// The pipeline follows the stages of the design: a source yields spans
// (files, Jaeger, in-memory), each becomes a model.Request with its token
// timeline; detect finds the request's degradation segments against its
// own baseline; stats accumulates TTFT, TPOT and ITL; and, once every
// request has been read, correlate names the cause of each segment using
// the request's engine events and the other requests of the same engine
// instance. The report package renders the result.
//
// Requests are streamed: token times are dropped once a request has been
// analysed, and only its windows, its large gaps and its segments are
// kept for the cross-trace pass, so memory grows with the number of
// requests, not tokens.
package analyzer
