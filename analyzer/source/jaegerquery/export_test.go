package jaegerquery

// FindTracesCalls returns how many FindTraces calls c made (retries
// included).
func FindTracesCalls(c *Client) int64 { return c.finds.Load() }
