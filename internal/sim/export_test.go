package sim

import (
	"strconv"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

func itoa(i int) string { return strconv.Itoa(i) }

// freeBlocksSnapshot reads the free-block count; call only when idle.
func (e *Engine) freeBlocksSnapshot() int { return e.freeBlocks }

func testutilCounter(t *testing.T, e *Engine, name string) float64 {
	t.Helper()
	mfs, err := e.metrics.reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() == name {
			var sum float64
			for _, m := range mf.GetMetric() {
				sum += counterValue(m)
			}
			return sum
		}
	}
	return -1
}

func counterValue(m *dto.Metric) float64 {
	if c := m.GetCounter(); c != nil {
		return c.GetValue()
	}
	if g := m.GetGauge(); g != nil {
		return g.GetValue()
	}
	return 0
}
