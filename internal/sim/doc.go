// Package sim is a simulated continuous-batching LLM engine that produces,
// in real time, the slow-downs tokentrace must explain.
//
// The scheduler works at iteration level, like Orca, vLLM and SGLang: each
// step runs one decode for every running request plus some prompt
// (prefill) tokens, and lasts as long as a model profile says (a fixed
// cost, a cost per decoding sequence, per prefill token and per token of
// context in the batch, with seeded noise). The effects are switchable and
// sized by Config:
//
//   - prefill insertion, unchunked (a new prompt's whole prefill in one
//     step: one long gap for every running request) or chunked with a token
//     budget (a run of moderately slow steps, like vLLM V1 / Sarathi-Serve);
//   - KV-cache pressure: a block budget; when a decode needs a block and
//     none is free, the most recently admitted request is preempted by
//     recompute (it waits and re-prefills prompt+output) or by swap;
//   - stop-the-world GC pauses (Python GC stalls in vLLM/SGLang);
//   - warm-up: the first requests run slower (cold start).
//
// The engine knows the truth: it reports every prefill, preemption and GC
// pause to an instrument.Tracker when it runs in-process with the gateway,
// exposes vLLM-compatible Prometheus metrics, and writes a ground-truth
// JSONL record per request with each injected slow-down's cause and token
// range. Decisions are deterministic for a seed and an arrival order;
// TimeScale runs the same schedule faster for tests.
package sim
