package ssestream

// Names of the object keys the scanner interprets; nOther is any other key.
// Their meaning depends on the context (see keyFor).
const (
	nOther uint8 = iota
	nID
	nModel
	nChoices
	nUsage
	nError
	nDelta
	nMessage
	nText
	nFinishReason
	nContent
	nReasoningContent
	nReasoning
	nRefusal
	nToolCalls
	nPromptTokens
	nCompletionTokens
)

// nameOf returns the name of the raw key k (slow path of the key matcher).
func nameOf(k []byte) uint8 {
	switch string(k) {
	case "id":
		return nID
	case "model":
		return nModel
	case "choices":
		return nChoices
	case "usage":
		return nUsage
	case "error":
		return nError
	case "delta":
		return nDelta
	case "message":
		return nMessage
	case "text":
		return nText
	case "finish_reason":
		return nFinishReason
	case "content":
		return nContent
	case "reasoning_content":
		return nReasoningContent
	case "reasoning":
		return nReasoning
	case "refusal":
		return nRefusal
	case "tool_calls":
		return nToolCalls
	case "prompt_tokens":
		return nPromptTokens
	case "completion_tokens":
		return nCompletionTokens
	}
	return nOther
}

// Little-endian 8-byte words of common keys followed by their closing quote
// (kwX0 holds bytes 0-7, kwX1 bytes 8-15, ...), for the fast key matcher in
// scanTop. TestKeyWords recomputes them from the spelling.
const (
	kwID0                = 0x0000000000226469 // id"
	kwModel0             = 0x0000226c65646f6d // model"
	kwChoices0           = 0x22736563696f6863 // choices"
	kwUsage0             = 0x0000226567617375 // usage"
	kwError0             = 0x000022726f727265 // error"
	kwDelta0             = 0x00002261746c6564 // delta"
	kwMessage0           = 0x226567617373656d // message"
	kwText0              = 0x0000002274786574 // text"
	kwFinishReason0      = 0x725f6873696e6966 // finish_r
	kwFinishReason1      = 0x0000226e6f736165 // eason"
	kwContent0           = 0x22746e65746e6f63 // content"
	kwReasoning0         = 0x6e696e6f73616572 // reasonin (also reasoning_content)
	kwReasoning1         = 0x0000000000002267 // g"
	kwReasoningContent1  = 0x6e65746e6f635f67 // g_conten
	kwReasoningContent2  = 0x0000000000002274 // t"
	kwRefusal0           = 0x226c617375666572 // refusal"
	kwToolCalls0         = 0x6c61635f6c6f6f74 // tool_cal
	kwToolCalls1         = 0x000000000022736c // ls"
	kwPromptTokens0      = 0x745f74706d6f7270 // prompt_t
	kwPromptTokens1      = 0x000022736e656b6f // okens"
	kwCompletionTokens0  = 0x6974656c706d6f63 // completi
	kwCompletionTokens1  = 0x6e656b6f745f6e6f // on_token
	kwCompletionTokens2  = 0x0000000000002273 // s"
	kwObject0            = 0x00227463656a626f // object"
	kwCreated0           = 0x2264657461657263 // created"
	kwIndex0             = 0x0000227865646e69 // index"
	kwLogprobs0          = 0x73626f7270676f6c // logprobs
	kwLogprobs1          = 0x0000000000000022 // "
	kwRole0              = 0x00000022656c6f72 // role"
	kwStopReason0        = 0x6165725f706f7473 // stop_rea
	kwStopReason1        = 0x00000000226e6f73 // son"
	kwTotalTokens0       = 0x6f745f6c61746f74 // total_to
	kwTotalTokens1       = 0x00000022736e656b // kens"
	kwSystemFingerprint0 = 0x665f6d6574737973 // system_f
	kwSystemFingerprint1 = 0x6972707265676e69 // ingerpri
	kwSystemFingerprint2 = 0x000000000022746e // nt"
)

// lowN masks the low N bytes of a word.
const (
	low1 = 1<<(8*1) - 1
	low2 = 1<<(8*2) - 1
	low3 = 1<<(8*3) - 1
	low4 = 1<<(8*4) - 1
	low5 = 1<<(8*5) - 1
	low6 = 1<<(8*6) - 1
	low7 = 1<<(8*7) - 1
)
