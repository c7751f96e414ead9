package reports

import (
	"fmt"
	"math"
	"sort"
	"strings"
	"time"

	"github.com/splitbrain-chaos/splitbrain/checkers"
	"github.com/splitbrain-chaos/splitbrain/internal/faultkinds"
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

// tokenColor gives each token its own hue (golden-angle steps keep neighbours apart).
func tokenColor(token int64) string {
	h := math.Mod(float64(token)*137.508, 360)
	return fmt.Sprintf("hsl(%.0f,62%%,58%%)", h)
}

// faultClass is the CSS class of a fault kind's band (faultStyles); unknown kinds share one.
func faultClass(kind string) string {
	if _, known := faultkinds.Info(kind); known {
		return "f-" + kind
	}
	return "f-other"
}

// timelineView is what a timeline shows: the whole run, or a zoomed window on a few nodes.
type timelineView struct {
	t0, t1   int64
	width    float64
	only     map[string]bool // lanes to show (nil: all); the availability lane always shows
	idPrefix string          // keeps element ids unique when a page holds several timelines
	origin   int64           // what the axis labels count from (the run start)
}

// fullView is the whole run, at a width that grows with its length.
func fullView(r *checkers.Results) timelineView {
	t0, t1 := r.Run.StartT, r.Run.EndT
	if t1 <= t0 {
		t1 = t0 + int64(time.Second)
	}
	dur := float64(t1-t0) / 1e9
	return timelineView{t0: t0, t1: t1, width: math.Min(maxWidth, math.Max(minWidth, dur*pxPerSec)), origin: t0}
}

func (v timelineView) scale() scale { return scale{v.t0, v.t1, v.width / float64(v.t1-v.t0)} }

// shows reports whether [a, b] overlaps the view's window.
func (v timelineView) shows(a, b int64) bool { return b >= v.t0 && a <= v.t1 }

func (v timelineView) id(id string) string {
	if id == "" {
		return ""
	}
	return v.idPrefix + id
}

// buildTimeline lays out the whole run: lanes (candidates, store nodes, other targets, the
// availability lane), then fault windows, tenures, split-brain windows, writes, process
// marks, unavailability and phases.
func buildTimeline(r *checkers.Results, cfg *runConfig, h *rawHistory) *timeline {
	return layoutTimeline(r, cfg, h, fullView(r))
}

func layoutTimeline(r *checkers.Results, cfg *runConfig, h *rawHistory, v timelineView) *timeline {
	sc := v.scale()
	tl := &timeline{Width: v.width}
	lanes := tl.addLanes(laneNames(r, cfg, h), v)
	tl.addFaults(r, sc, lanes, v)
	tl.addTenures(r, sc, lanes, v)
	tl.addOverlaps(r, sc, v)
	tl.addWrites(h, sc, lanes, v)
	tl.addProcessMarks(h, sc, lanes, v)
	tl.addAvailability(r, sc, v)
	for _, p := range r.Run.Phases {
		if v.shows(p.T, p.T) {
			tl.Phases = append(tl.Phases, vline{X: sc.x(p.T), Label: p.Phase, Class: "phase", Title: fmt.Sprintf("phase %s starts at %s", p.Phase, rel(p.T, v.origin))})
		}
	}
	stagger(tl.Phases, 23, 10)
	tl.Major, tl.Minor = axisTicks(sc, v.width, v.origin)
	return tl
}

// laneGroups are the lane names by role, in drawing order.
type laneGroups struct{ cands, stores, others []string }

// laneNames: the run's candidates (and any node that led), the store nodes, then other
// fault targets.
func laneNames(r *checkers.Results, cfg *runConfig, h *rawHistory) laneGroups {
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
	return laneGroups{cands, stores, others}
}

// laneIndex maps a lane label to its index in tl.Lanes; availability is the last lane.
type laneIndex struct {
	byName       map[string]int
	availability int
}

func (tl *timeline) addLanes(g laneGroups, v timelineView) laneIndex {
	idx := laneIndex{byName: map[string]int{}}
	y := axisH
	add := func(id, label, role string) {
		if v.only != nil && role != "availability" && !v.only[label] {
			return
		}
		idx.byName[label] = len(tl.Lanes)
		tl.Lanes = append(tl.Lanes, lane{ID: v.id(id), Label: label, Role: role, Y: y})
		y += laneH
	}
	tl.CandTop = y
	for _, c := range g.cands {
		add("lane-"+safeID(c), c, "candidate")
	}
	tl.CandBottom = y
	for _, s := range g.stores {
		add("lane-store-"+safeID(s), s, "store")
	}
	for _, o := range g.others {
		add("lane-other-"+safeID(o), o, "other")
	}
	idx.availability = len(tl.Lanes)
	add("lane-availability", "availability", "availability")
	tl.Height = y + 4
	return idx
}

// addFaults shades each fault window across all lanes and bands each target's lane.
func (tl *timeline) addFaults(r *checkers.Results, sc scale, lanes laneIndex, v timelineView) {
	t0 := v.origin
	for _, f := range r.Faults {
		end := f.EndT
		if end <= f.StartT {
			end = f.StartT + 1
		}
		if !v.shows(f.StartT, end) {
			continue
		}
		title := fmt.Sprintf("fault #%d %s on %s: %s → %s (%s)", f.ID, f.Kind, strings.Join(f.Targets, ", "),
			rel(f.StartT, t0), rel(end, t0), fmtDur(end-f.StartT))
		if f.Spec != "" {
			title += "\nspec: " + f.Spec
		}
		if f.Trigger != "" {
			title += "\n" + triggerText(f, t0)
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
		tl.Shades = append(tl.Shades, rect{ID: v.id(fmt.Sprintf("fault-%d", f.ID)), X: x, Y: axisH, W: w, H: tl.Height - 4 - axisH, Class: "shade " + class, Title: title})
		for _, tg := range f.Targets {
			if i, ok := lanes.byName[tg]; ok {
				l := &tl.Lanes[i]
				l.Bands = append(l.Bands, rect{X: x, Y: l.Y + 1, W: w, H: laneH - 2, Class: "band " + class, Title: title})
			}
		}
	}
}

// addTenures draws tenures coloured by token; sub-pixel neighbours merge so 10,000 tenures
// stay drawable.
func (tl *timeline) addTenures(r *checkers.Results, sc scale, lanes laneIndex, v timelineView) {
	t0 := v.origin
	for _, ten := range r.Tenures.Tenures {
		i, ok := lanes.byName[ten.Node]
		if !ok || !v.shows(ten.StartT, ten.EndT) {
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
		l.Tenures = append(l.Tenures, rect{ID: v.id(fmt.Sprintf("tenure-%d", ten.ID)), X: x, Y: l.Y + 7, W: w, H: laneH - 14,
			Class: "tenure", Fill: tokenColor(ten.Token), Title: title})
	}
}

// addOverlaps draws the split-brain windows across the candidate lanes.
func (tl *timeline) addOverlaps(r *checkers.Results, sc scale, v timelineView) {
	t0 := v.origin
	for i, o := range r.Tenures.Overlaps {
		if !v.shows(o.StartT, o.EndT) {
			continue
		}
		var who []string
		for _, m := range o.Members {
			who = append(who, fmt.Sprintf("%s (token %d)", m.Node, m.Token))
		}
		title := fmt.Sprintf("SPLIT BRAIN: %d leaders at once, %s → %s (%s)\n%s", o.MaxCount, rel(o.StartT, t0), rel(o.EndT, t0),
			fmtDur(o.Duration), strings.Join(who, ", "))
		tl.Overlaps = append(tl.Overlaps, rect{ID: v.id(fmt.Sprintf("overlap-%d", i+1)), X: sc.x(o.StartT), Y: tl.CandTop,
			W: math.Max(2, sc.w(o.StartT, o.EndT)), H: tl.CandBottom - tl.CandTop, Class: "overlap", Title: title})
	}
}

// addWrites draws each write as a tick, or, above MaxTicks in the view, bins of binPx
// pixels per lane and outcome.
func (tl *timeline) addWrites(h *rawHistory, sc scale, lanes laneIndex, v timelineView) {
	t0 := v.origin
	visible := h.ticks
	if v.only != nil {
		// A zoomed view: its window and lanes only (history order is not strictly time
		// order, so a linear pass rather than a search).
		visible = nil
		for _, tk := range h.ticks {
			if tk.t >= v.t0 && tk.t <= v.t1 && v.only[tk.node] {
				visible = append(visible, tk)
			}
		}
	}
	tl.TicksTotal = len(visible)
	if len(visible) <= MaxTicks {
		for _, tk := range visible {
			i, ok := lanes.byName[tk.node]
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
		return
	}
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
	for _, tk := range visible {
		i, ok := lanes.byName[tk.node]
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

// addProcessMarks draws process starts/exits and signals on candidate lanes (capped).
func (tl *timeline) addProcessMarks(h *rawHistory, sc scale, lanes laneIndex, v timelineView) {
	drawn := 0
	for _, m := range h.marks {
		if drawn >= maxMarks {
			break
		}
		li, ok := lanes.byName[m.node]
		if !ok || !v.shows(m.t, m.t) {
			continue
		}
		drawn++
		l := &tl.Lanes[li]
		l.Points = append(l.Points, rect{X: sc.x(m.t), Y: l.Y + 2, W: 0, H: laneH - 4, Class: "pt p-" + m.kind,
			Title: fmt.Sprintf("%s: %s at %s", m.node, m.label, rel(m.t, v.origin))})
	}
}

// addAvailability draws the windows without an accepted write on the availability lane.
func (tl *timeline) addAvailability(r *checkers.Results, sc scale, v timelineView) {
	al := &tl.Lanes[len(tl.Lanes)-1]
	t0 := v.origin
	for i, u := range r.Latency.Unavailability {
		if i >= maxTableRows*10 {
			break
		}
		if !v.shows(u.StartT, u.EndT) {
			continue
		}
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
		al.Bands = append(al.Bands, rect{ID: v.id(fmt.Sprintf("unavail-%d", i+1)), X: sc.x(u.StartT), Y: al.Y + 5, W: sc.w(u.StartT, u.EndT),
			H: laneH - 10, Class: class, Title: title})
	}
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
func axisTicks(sc scale, width float64, origin int64) (major, minor []axisTick) {
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
	// Ticks sit on multiples of the step counted from origin (the run start), so a zoomed
	// window is labelled in run time.
	off := float64(sc.t0 - origin)
	for k := int(math.Ceil(off / fine)); ; k++ {
		t := float64(k)*fine - off
		if t > span {
			break
		}
		tk := axisTick{X: round1(t * sc.px), Label: fmtAxis(int64(t + off))}
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
