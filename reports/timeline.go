package reports

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/splitbrain-chaos/splitbrain/checkers"
	"github.com/splitbrain-chaos/splitbrain/nemesis"
)

// Caps that keep report.html a reasonable size whatever the run's length.
const (
	// MaxTicks is the most write ticks drawn one by one; above it writes are aggregated
	// into bins of binPx pixels per lane and outcome (each bin says how many it holds).
	MaxTicks = 4000
	binPx    = 3.0
	// maxTableRows caps every table; the rest is counted in a "not shown" row.
	maxTableRows = 200
	// maxMarks caps process/signal markers drawn on candidate lanes.
	maxMarks = 2000

	laneH     = 30.0
	axisH     = 46.0
	minWidth  = 1000.0
	maxWidth  = 3600.0
	pxPerSec  = 24.0
	labelW    = 150.0
	minRectPx = 1.0
)

// timeline is the view model of the timeline SVG; every coordinate is in pixels at zoom 1.
type timeline struct {
	Width, Height float64
	Lanes         []lane
	Shades        []rect // fault windows across all lanes
	Overlaps      []rect // split-brain windows across candidate lanes
	Unavail       []rect // unavailability windows on the availability lane
	Phases        []vline
	Marks         []vline // reason anchors
	Major, Minor  []axisTick
	TicksBinned   bool
	TicksDrawn    int
	TicksTotal    int
	TenuresMerged int // tenures drawn merged with a neighbour because they were below a pixel
	CandTop       float64
	CandBottom    float64
}

type lane struct {
	ID, Label, Role string
	Y               float64
	Bands           []rect
	Tenures         []rect
	Ticks           []rect
	Points          []rect
}

type rect struct {
	ID         string
	X, Y, W, H float64
	Class      string
	Fill       string
	Title      string
}

type vline struct {
	ID     string
	X      float64
	LabelY float64
	Label  string
	Class  string
	Title  string
}

type axisTick struct {
	X     float64
	Label string
}

// scale maps history time to pixels.
type scale struct {
	t0, t1 int64
	px     float64 // pixels per ns
}

func (s scale) x(t int64) float64 {
	if t < s.t0 {
		t = s.t0
	}
	if t > s.t1 {
		t = s.t1
	}
	return round1(float64(t-s.t0) * s.px)
}

func (s scale) w(a, b int64) float64 {
	w := s.x(b) - s.x(a)
	if w < minRectPx {
		w = minRectPx
	}
	return round1(w)
}

func round1(f float64) float64 { return math.Round(f*10) / 10 }

// rel formats t relative to the run start, for titles and tables.
func rel(t, t0 int64) string {
	return "+" + fmtDur(t-t0)
}

// fmtDur renders a duration compactly: 1.234s, 45.6ms, 820µs.
func fmtDur(ns int64) string {
	if ns < 0 {
		return "—"
	}
	d := time.Duration(ns)
	switch {
	case d >= time.Minute:
		return d.Round(100 * time.Millisecond).String()
	case d >= time.Second:
		return fmt.Sprintf("%.3fs", d.Seconds())
	case d >= time.Millisecond:
		return fmt.Sprintf("%.1fms", float64(d)/float64(time.Millisecond))
	case d >= time.Microsecond:
		return fmt.Sprintf("%dµs", d/time.Microsecond)
	}
	return fmt.Sprintf("%dns", d)
}

// tokenColor gives each token its own hue (golden-angle steps keep neighbours apart).
func tokenColor(token int64) string {
	h := math.Mod(float64(token)*137.508, 360)
	return fmt.Sprintf("hsl(%.0f,62%%,58%%)", h)
}

// faultClass is the CSS class of a fault kind's band (faultStyles); unknown kinds share one.
func faultClass(kind string) string {
	if _, known := nemesis.Info(kind); known {
		return "f-" + kind
	}
	return "f-other"
}

// buildTimeline lays out lanes: candidates first, then store nodes, then other targets, then
// the availability lane.
func buildTimeline(r *checkers.Results, cfg *runConfig, h *rawHistory) *timeline {
	t0, t1 := r.Run.StartT, r.Run.EndT
	if t1 <= t0 {
		t1 = t0 + int64(time.Second)
	}
	dur := float64(t1-t0) / 1e9
	width := math.Min(maxWidth, math.Max(minWidth, dur*pxPerSec))
	sc := scale{t0, t1, width / float64(t1-t0)}
	tl := &timeline{Width: width}

	// Lanes.
	cands := append([]string(nil), r.Run.Candidates...)
	if len(cands) == 0 {
		cands = append(cands, r.Params.Nodes...)
	}
	isCand := map[string]bool{}
	for _, c := range cands {
		isCand[c] = true
	}
	for n := range h.nodes {
		if !isCand[n] && looksLikeCandidate(n, r) {
			cands = append(cands, n)
			isCand[n] = true
		}
	}
	sortNatural(cands)
	stores := append([]string(nil), cfg.StoreNodes...)
	isStore := map[string]bool{}
	for _, s := range stores {
		isStore[s] = true
	}
	var others []string
	seenOther := map[string]bool{}
	for _, f := range r.Faults {
		for _, tg := range f.Targets {
			if !isCand[tg] && !isStore[tg] && !seenOther[tg] {
				seenOther[tg] = true
				others = append(others, tg)
			}
		}
	}
	sortNatural(others)

	laneIdx := map[string]int{}
	y := axisH
	addLane := func(id, label, role string) {
		laneIdx[label] = len(tl.Lanes)
		tl.Lanes = append(tl.Lanes, lane{ID: id, Label: label, Role: role, Y: y})
		y += laneH
	}
	tl.CandTop = y
	for _, c := range cands {
		addLane("lane-"+safeID(c), c, "candidate")
	}
	tl.CandBottom = y
	for _, s := range stores {
		addLane("lane-store-"+safeID(s), s, "store")
	}
	for _, o := range others {
		addLane("lane-other-"+safeID(o), o, "other")
	}
	availIdx := len(tl.Lanes)
	addLane("lane-availability", "availability", "availability")
	tl.Height = y + 4

	// Fault windows: shaded across all lanes, and a band on each target's lane.
	for _, f := range r.Faults {
		end := f.EndT
		if end <= f.StartT {
			end = f.StartT + 1
		}
		title := fmt.Sprintf("fault #%d %s on %s: %s → %s (%s)", f.ID, f.Kind, strings.Join(f.Targets, ", "),
			rel(f.StartT, t0), rel(end, t0), fmtDur(end-f.StartT))
		if f.Spec != "" {
			title += "\nspec: " + f.Spec
		}
		if f.Open {
			title += "\nnever healed in the history (no fault-end)"
		}
		class := faultClass(f.Kind)
		if f.Error != "" {
			title += "\nFAILED TO APPLY: " + f.Error
			class += " failed"
		}
		if f.HealErr != "" {
			title += "\nHEAL ERROR: " + f.HealErr
		}
		x, w := sc.x(f.StartT), sc.w(f.StartT, end)
		tl.Shades = append(tl.Shades, rect{ID: fmt.Sprintf("fault-%d", f.ID), X: x, Y: axisH, W: w, H: y - axisH, Class: "shade " + class, Title: title})
		for _, tg := range f.Targets {
			if i, ok := laneIdx[tg]; ok {
				l := &tl.Lanes[i]
				l.Bands = append(l.Bands, rect{X: x, Y: l.Y + 1, W: w, H: laneH - 2, Class: "band " + class, Title: title})
			}
		}
	}

	// Tenures, coloured by token; sub-pixel neighbours merge so 10,000 tenures stay drawable.
	for _, ten := range r.Tenures.Tenures {
		i, ok := laneIdx[ten.Node]
		if !ok {
			continue
		}
		l := &tl.Lanes[i]
		x, w := sc.x(ten.StartT), sc.w(ten.StartT, ten.EndT)
		if n := len(l.Tenures); n > 0 && w <= minRectPx {
			prev := &l.Tenures[n-1]
			if x-(prev.X+prev.W) < minRectPx && prev.W < 4*minRectPx {
				prev.W = round1(math.Max(prev.W, x+w-prev.X))
				prev.Title = mergedTitle(prev.Title)
				tl.TenuresMerged++
				continue
			}
		}
		end := ten.EndReason
		if ten.Open {
			end = "still leading at run end"
		}
		title := fmt.Sprintf("%s leader, token %d\n%s → %s (%s)\nended: %s\nwrites accepted %d, rejected %d",
			ten.Node, ten.Token, rel(ten.StartT, t0), rel(ten.EndT, t0), fmtDur(ten.EndT-ten.StartT), end, ten.Accepted, ten.Rejected)
		l.Tenures = append(l.Tenures, rect{ID: fmt.Sprintf("tenure-%d", ten.ID), X: x, Y: l.Y + 7, W: w, H: laneH - 14,
			Class: "tenure", Fill: tokenColor(ten.Token), Title: title})
	}

	// Split-brain windows.
	for i, o := range r.Tenures.Overlaps {
		var who []string
		for _, m := range o.Members {
			who = append(who, fmt.Sprintf("%s (token %d)", m.Node, m.Token))
		}
		title := fmt.Sprintf("SPLIT BRAIN: %d leaders at once, %s → %s (%s)\n%s", o.MaxCount, rel(o.StartT, t0), rel(o.EndT, t0),
			fmtDur(o.Duration), strings.Join(who, ", "))
		tl.Overlaps = append(tl.Overlaps, rect{ID: fmt.Sprintf("overlap-%d", i+1), X: sc.x(o.StartT), Y: tl.CandTop,
			W: math.Max(2, sc.w(o.StartT, o.EndT)), H: tl.CandBottom - tl.CandTop, Class: "overlap", Title: title})
	}

	// Writes.
	tl.TicksTotal = len(h.ticks)
	if len(h.ticks) <= MaxTicks {
		for _, tk := range h.ticks {
			i, ok := laneIdx[tk.node]
			if !ok {
				continue
			}
			l := &tl.Lanes[i]
			yy, hh := tickY(l.Y, tk.kind)
			// W 0: drawn as a line with a non-scaling stroke, so it stays thin when zoomed.
			l.Ticks = append(l.Ticks, rect{X: sc.x(tk.t), Y: yy, W: 0, H: hh, Class: "tick t-" + tickClass(tk.kind),
				Title: fmt.Sprintf("write %s at %s, %s token %d", tickNames[tk.kind], rel(tk.t, t0), tk.node, tk.token)})
			tl.TicksDrawn++
		}
	} else {
		tl.TicksBinned = true
		type key struct {
			lane, bin int
			kind      tickKind
		}
		type agg struct {
			n            int
			first, last  int64
			minTk, maxTk int64
		}
		bins := map[key]*agg{}
		var order []key
		for _, tk := range h.ticks {
			i, ok := laneIdx[tk.node]
			if !ok {
				continue
			}
			k := key{i, int(sc.x(tk.t) / binPx), tk.kind}
			a := bins[k]
			if a == nil {
				a = &agg{first: tk.t, minTk: tk.token, maxTk: tk.token}
				bins[k] = a
				order = append(order, k)
			}
			a.n++
			a.last = tk.t
			a.minTk = min(a.minTk, tk.token)
			a.maxTk = max(a.maxTk, tk.token)
		}
		for _, k := range order {
			a := bins[k]
			l := &tl.Lanes[k.lane]
			yy, hh := tickY(l.Y, k.kind)
			toks := fmt.Sprintf("token %d", a.minTk)
			if a.maxTk != a.minTk {
				toks = fmt.Sprintf("tokens %d–%d", a.minTk, a.maxTk)
			}
			l.Ticks = append(l.Ticks, rect{X: float64(k.bin) * binPx, Y: yy, W: binPx - 0.5, H: hh, Class: "tick t-" + tickClass(k.kind),
				Title: fmt.Sprintf("%d writes %s, %s → %s, %s %s", a.n, tickNames[k.kind], rel(a.first, t0), rel(a.last, t0), l.Label, toks)})
			tl.TicksDrawn++
		}
	}

	// Process and signal marks.
	for i, m := range h.marks {
		if i >= maxMarks {
			break
		}
		li, ok := laneIdx[m.node]
		if !ok {
			continue
		}
		l := &tl.Lanes[li]
		l.Points = append(l.Points, rect{X: sc.x(m.t), Y: l.Y + 2, W: 0, H: laneH - 4, Class: "pt p-" + m.kind,
			Title: fmt.Sprintf("%s: %s at %s", m.node, m.label, rel(m.t, t0))})
	}

	// Availability lane.
	al := &tl.Lanes[availIdx]
	for i, u := range r.Latency.Unavailability {
		title := fmt.Sprintf("no accepted write for %s (%s → %s; threshold %s)", fmtDur(u.DurationNs), rel(u.StartT, t0), rel(u.EndT, t0),
			fmtDur(r.Latency.ThresholdNs))
		if u.ExceedsBound {
			title += "\nlonger than the expected failover bound"
		}
		if u.Open {
			title += "\nstill unavailable at the end of observation"
		}
		class := "unavail"
		if u.ExceedsBound {
			class += " over"
		}
		if i < maxTableRows*10 {
			al.Bands = append(al.Bands, rect{ID: fmt.Sprintf("unavail-%d", i+1), X: sc.x(u.StartT), Y: al.Y + 5, W: sc.w(u.StartT, u.EndT),
				H: laneH - 10, Class: class, Title: title})
		}
	}

	for _, p := range r.Run.Phases {
		tl.Phases = append(tl.Phases, vline{X: sc.x(p.T), Label: p.Phase, Class: "phase", Title: fmt.Sprintf("phase %s starts at %s", p.Phase, rel(p.T, t0))})
	}
	stagger(tl.Phases, 23, 10)
	tl.Major, tl.Minor = axisTicks(sc, width)
	return tl
}

// stagger moves labels that would collide with the previous one to another row.
func stagger(ls []vline, y0, step float64) {
	const minGap = 48.0
	lastX := []float64{-1e9, -1e9, -1e9}
	for i := range ls {
		row := 0
		for row < len(lastX)-1 && ls[i].X-lastX[row] < minGap {
			row++
		}
		lastX[row] = ls[i].X
		ls[i].LabelY = y0 + float64(row)*step
	}
}

// addMarks puts an anchor line in the timeline for every reason with a time.
func (tl *timeline) addMarks(reasons []reasonView, sc scale) {
	for _, r := range reasons {
		if r.T == 0 {
			continue
		}
		tl.Marks = append(tl.Marks, vline{ID: r.MarkID, X: sc.x(r.T), Label: r.Num, Class: "mark sev-" + r.Severity, Title: r.Message})
	}
	sort.SliceStable(tl.Marks, func(i, j int) bool { return tl.Marks[i].X < tl.Marks[j].X })
	stagger(tl.Marks, tl.Height-24, 10)
}

func tickY(laneY float64, k tickKind) (float64, float64) {
	switch k {
	case tickRejected, tickUnknown:
		return laneY + laneH - 8, 6
	case tickStale:
		return laneY + 2, laneH - 4
	}
	return laneY + 2, 6
}

func tickClass(k tickKind) string {
	return [...]string{"acc", "rej", "stale", "unk"}[k]
}

func mergedTitle(t string) string {
	if strings.HasPrefix(t, "merged: ") {
		var n int
		fmt.Sscanf(t, "merged: %d", &n)
		return fmt.Sprintf("merged: %d tenures shorter than a pixel (zoom in or see the tenure table)", n+1)
	}
	return "merged: 2 tenures shorter than a pixel (zoom in or see the tenure table)"
}

// axisTicks picks a "nice" step giving ~110 px between labels at zoom 1 and a step five
// times finer that the page shows once zoomed in.
func axisTicks(sc scale, width float64) (major, minor []axisTick) {
	span := float64(sc.t1 - sc.t0)
	target := span * 110 / width
	steps := []float64{1e6, 2e6, 5e6, 1e7, 2e7, 5e7, 1e8, 2e8, 5e8, 1e9, 2e9, 5e9, 1e10, 2e10, 3e10, 6e10, 1.2e11, 3e11, 6e11, 1.2e12, 3.6e12}
	step := steps[len(steps)-1]
	for _, s := range steps {
		if s >= target {
			step = s
			break
		}
	}
	fine := step / 5
	for k := 0; ; k++ {
		t := float64(k) * fine
		if t > span {
			break
		}
		tk := axisTick{X: round1(t * sc.px), Label: fmtAxis(int64(t))}
		if k%5 == 0 {
			major = append(major, tk)
		} else {
			minor = append(minor, tk)
		}
	}
	return major, minor
}

func fmtAxis(ns int64) string {
	d := time.Duration(ns)
	if d == 0 {
		return "0"
	}
	if d%time.Second == 0 {
		return fmt.Sprintf("%ds", d/time.Second)
	}
	if d >= time.Second {
		return fmt.Sprintf("%.1fs", d.Seconds())
	}
	return fmt.Sprintf("%dms", d/time.Millisecond)
}

// looksLikeCandidate: a node that led, wrote, or is in the params is a candidate lane.
func looksLikeCandidate(n string, r *checkers.Results) bool {
	for _, t := range r.Tenures.Tenures {
		if t.Node == n {
			return true
		}
	}
	return false
}

// safeID keeps element ids predictable for tests and anchors whatever a node is called.
func safeID(s string) string {
	var b strings.Builder
	for _, c := range s {
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9', c == '-', c == '_':
			b.WriteRune(c)
		default:
			fmt.Fprintf(&b, "_%x", c)
		}
	}
	return b.String()
}

// sortNatural sorts c2 before c10.
func sortNatural(s []string) {
	sort.SliceStable(s, func(i, j int) bool { return naturalLess(s[i], s[j]) })
}

func naturalLess(a, b string) bool {
	pa, na := splitNum(a)
	pb, nb := splitNum(b)
	if pa != pb || na < 0 || nb < 0 {
		if pa == pb {
			return a < b
		}
		return pa < pb
	}
	return na < nb
}

func splitNum(s string) (string, int) {
	i := len(s)
	for i > 0 && s[i-1] >= '0' && s[i-1] <= '9' {
		i--
	}
	if i == len(s) || len(s)-i > 9 {
		return s, -1
	}
	n := 0
	for _, c := range s[i:] {
		n = n*10 + int(c-'0')
	}
	return s[:i], n
}
