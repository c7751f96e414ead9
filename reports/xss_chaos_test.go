//go:build chaos

package reports

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/splitbrain-chaos/splitbrain/checkers"
	"github.com/splitbrain-chaos/splitbrain/history"
)

// xssPayload sets a marker on <body> when it runs as HTML.
const xssPayload = `<img src=x onerror="document.body.setAttribute('data-xss','fired')">`

// hostileHistory is a short fenced run whose decisions, and one candidate, carry the payload
// as node name: what an old resource accepted from any candidate (issue 14 item 4).
func hostileHistory() []history.Event {
	const ms = int64(1e6)
	t0 := int64(1000) * ms
	var evs []history.Event
	add := func(e history.Event) {
		e.V, e.Seq = history.Version, int64(len(evs)+1)
		e.T = t0 + e.T*ms
		if e.Source == "" {
			e.Source = history.SourceHarness
		}
		evs = append(evs, e)
	}
	phase := func(t int64, p string) { add(history.Event{T: t, Kind: history.KindPhase, Phase: p}) }
	add(history.Event{T: 1, Kind: history.KindRunStart})
	phase(2, history.PhaseSetup)
	phase(3, history.PhaseWarmup)
	tenure := func(start, end int64, node string, token int64) {
		add(history.Event{T: start - 2, Source: history.SourceCandidate, Kind: history.KindCampaigning, Node: node})
		add(history.Event{T: start, Source: history.SourceCandidate, Kind: history.KindElected, Node: node, Token: token})
		for t := start + 10; t < end; t += 50 {
			id := fmt.Sprintf("%s-%d", node[:1], t)
			add(history.Event{T: t + 2, Source: history.SourceResource, Kind: history.KindDecision, Node: xssPayload, Token: token,
				WriteID: id, Result: history.ResultAccepted, Mode: "fenced"})
			add(history.Event{T: t + 4, Source: history.SourceCandidate, Kind: history.KindWrite, Node: node, Token: token,
				WriteID: id, CallT: t0 + t*ms, Result: history.ResultAccepted})
		}
		add(history.Event{T: end, Source: history.SourceCandidate, Kind: history.KindSteppedDown, Node: node, Reason: "lease-lost"})
	}
	tenure(10, 400, "c1", 1)
	phase(450, history.PhaseFaults)
	add(history.Event{T: 500, Source: history.SourceNemesis, Kind: history.KindFaultStart, FaultID: 1, Fault: "pause", Targets: []string{"c1"}})
	tenure(520, 900, xssPayload, 2)
	add(history.Event{T: 950, Source: history.SourceNemesis, Kind: history.KindFaultEnd, FaultID: 1, Fault: "pause", Targets: []string{"c1"}})
	phase(960, history.PhaseHeal)
	phase(970, history.PhaseRecovery)
	tenure(1000, 1400, "c1", 3)
	phase(1500, history.PhaseTeardown)
	add(history.Event{T: 1600, Kind: history.KindRunEnd})
	return evs
}

// hoverScript moves the mouse over every operation of a Porcupine page once it is drawn,
// then records how many it hovered and what the tooltip last showed.
const hoverScript = `<script>
window.addEventListener('load', () => setTimeout(() => {
  const targets = document.querySelectorAll('rect.target-rect');
  const tooltip = document.querySelector('.tooltip');
  let injected = 0, shown = 0;
  for (const el of targets) {
    const r = el.getBoundingClientRect();
    const at = {bubbles: true, clientX: r.x + 1, clientY: r.y + 1};
    el.dispatchEvent(new MouseEvent('mouseover', at));
    el.dispatchEvent(new MouseEvent('mousemove', at));
    if (tooltip && tooltip.textContent !== '') shown++;
    // Markup the page itself puts in a tooltip is <strong> and <br>; anything else came
    // from the data.
    if (tooltip) injected += [...tooltip.querySelectorAll('*')].filter(e => e.tagName !== 'STRONG' && e.tagName !== 'BR').length;
    el.dispatchEvent(new MouseEvent('mouseout', at));
  }
  document.body.setAttribute('data-hovered', String(targets.length));
  document.body.setAttribute('data-shown', String(shown));
  document.body.setAttribute('data-injected', String(injected));
}, 500));
</script>`

// TestPorcupineVisualizationEscapesHostileNames renders the hostile history's Porcupine
// pages and hovers every operation in headless Chromium: the payload must never run.
func TestPorcupineVisualizationEscapesHostileNames(t *testing.T) {
	bin := chromium(t)
	dir := artifactDir(t)
	res, err := checkers.Check(context.Background(), hostileHistory(), checkers.Params{OutputDir: dir})
	if err != nil {
		t.Fatal(err)
	}
	pages := 0
	for _, m := range res.Porcupine.Models {
		if m.Visualization == "" {
			continue
		}
		pages++
		src := filepath.Join(dir, m.Visualization)
		b, err := os.ReadFile(src)
		if err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(string(b), "onerror") {
			t.Fatalf("%s does not carry the payload at all: the test proves nothing", m.Visualization)
		}
		hover := strings.TrimSuffix(src, ".html") + "-hover.html"
		page := strings.Replace(string(b), "</body>", hoverScript+"</body>", 1)
		if err := os.WriteFile(hover, []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
		dom := browse(t, bin, "file://"+hover, strings.TrimSuffix(hover, ".html")+".png")
		if strings.Contains(dom, `data-xss="fired"`) {
			t.Errorf("%s: the node name ran as HTML on hover", m.Visualization)
		}
		if inj := regexp.MustCompile(`data-injected="(\d+)"`).FindStringSubmatch(dom); inj == nil || inj[1] != "0" {
			t.Errorf("%s: elements from the data in the tooltip: %v", m.Visualization, inj)
		}
		if shown := regexp.MustCompile(`data-shown="(\d+)"`).FindStringSubmatch(dom); shown == nil || shown[1] == "0" {
			t.Errorf("%s: no tooltip was shown: the hover proves nothing (%v)", m.Visualization, shown)
		}
		hovered := regexp.MustCompile(`data-hovered="(\d+)"`).FindStringSubmatch(dom)
		if hovered == nil {
			t.Fatalf("%s: the hover script did not run", m.Visualization)
		}
		if n, _ := strconv.Atoi(hovered[1]); n == 0 {
			t.Errorf("%s: no operation to hover", m.Visualization)
		} else {
			t.Logf("%s: hovered %d operations", m.Visualization, n)
		}
	}
	if pages == 0 {
		t.Fatal("no Porcupine visualization written")
	}
}
