package reports

import (
	"fmt"
	"math"
	"strings"

	"github.com/splitbrain-chaos/splitbrain/checkers"
)

// latencyChart is a strip plot: one row per fault kind, a dot per failover (filled: fault →
// next election; hollow: fault → new leader's first accepted write), the recipe's expected
// failover bound as a dashed line.
type latencyChart struct {
	Width, Height  float64
	PlotX, PlotW   float64
	Rows           []chartRow
	Dots           []chartDot
	Ticks          []axisTick
	BoundX         float64
	BoundLabel     string
	HasBound       bool
	Empty          bool
	AxisY, RowsTop float64
}

type chartRow struct {
	Y     float64
	Label string
}

type chartDot struct {
	ID     string
	X, Y   float64
	Hollow bool
	Over   bool
	Title  string
}

const (
	chartRowH  = 34.0
	chartLeft  = 110.0
	chartRight = 30.0
	chartW     = 900.0
)

func buildLatencyChart(r *checkers.Results) *latencyChart {
	c := &latencyChart{Width: chartW, PlotX: chartLeft, PlotW: chartW - chartLeft - chartRight, RowsTop: 24}
	kinds := []string{}
	seen := map[string]bool{}
	var maxNs int64
	for _, s := range r.Latency.Samples {
		if s.ElectionNs < 0 && s.FirstWriteNs < 0 {
			continue
		}
		if !seen[s.Kind] {
			seen[s.Kind] = true
			kinds = append(kinds, s.Kind)
		}
		maxNs = max(maxNs, s.ElectionNs, s.FirstWriteNs)
	}
	bound := r.Latency.BoundNs
	if bound <= 0 {
		bound = r.BoundNs
	}
	maxNs = max(maxNs, bound)
	if len(kinds) == 0 {
		c.Empty = true
	}
	if maxNs <= 0 {
		maxNs = 1e9
	}
	span := float64(maxNs) * 1.08
	x := func(ns int64) float64 { return round1(c.PlotX + float64(ns)/span*c.PlotW) }
	rowOf := map[string]int{}
	for i, k := range kinds {
		rowOf[k] = i
		c.Rows = append(c.Rows, chartRow{Y: c.RowsTop + float64(i)*chartRowH + chartRowH/2, Label: k})
	}
	c.AxisY = c.RowsTop + float64(max(len(kinds), 1))*chartRowH
	c.Height = c.AxisY + 34
	if bound > 0 {
		c.HasBound = true
		c.BoundX = x(bound)
		c.BoundLabel = "expected bound " + fmtDur(bound)
	}
	for i, s := range r.Latency.Samples {
		row, ok := rowOf[s.Kind]
		if !ok {
			continue
		}
		// Deterministic jitter spreads equal values within the row.
		jit := (float64((i*7919)%11) - 5) * 2.2
		yy := c.RowsTop + float64(row)*chartRowH + chartRowH/2 + jit
		who := ""
		if s.FaultID > 0 {
			who = fmt.Sprintf("fault #%d ", s.FaultID)
		}
		who += s.Kind
		if len(s.Targets) > 0 {
			who += " on " + strings.Join(s.Targets, ", ")
		}
		if s.ElectionNs >= 0 {
			c.Dots = append(c.Dots, chartDot{ID: fmt.Sprintf("lat-%d", i+1), X: x(s.ElectionNs), Y: round1(yy), Over: bound > 0 && s.ElectionNs > bound,
				Title: fmt.Sprintf("%s: next election after %s (%s, token %d); outcome %s", who, fmtDur(s.ElectionNs), s.NewLeader, s.NewToken, s.Outcome)})
		}
		if s.FirstWriteNs >= 0 {
			c.Dots = append(c.Dots, chartDot{X: x(s.FirstWriteNs), Y: round1(yy), Hollow: true, Over: bound > 0 && s.FirstWriteNs > bound,
				Title: fmt.Sprintf("%s: new leader's first accepted write after %s", who, fmtDur(s.FirstWriteNs))})
		}
	}
	step := niceStep(span / 6)
	for t := 0.0; t <= span; t += step {
		c.Ticks = append(c.Ticks, axisTick{X: x(int64(t)), Label: fmtAxis(int64(t))})
	}
	return c
}

// niceStep rounds a raw step (ns) up to 1, 2 or 5 × 10^k.
func niceStep(raw float64) float64 {
	if raw <= 0 {
		return 1e9
	}
	p := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= raw {
			return m * p
		}
	}
	return 10 * p
}
