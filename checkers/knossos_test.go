package checkers

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
	"testing"

	"github.com/splitbrain-chaos/splitbrain/history"
)

// The knossos etcd mutex history (jepsen-io/knossos data/mutex/bad/etcd.edn, EPL-1.0) converted
// to our history format; docs/checkers.md describes the conversion. Regenerate with
//
//	go test ./checkers -run TestKnossosMutexFixture -update-knossos
var updateKnossos = flag.Bool("update-knossos", false, "regenerate the knossos fixture from "+knossosSource)

const (
	knossosSource  = "testdata/knossos-mutex-bad-etcd.edn"
	knossosFixture = "testdata/knossos-mutex-bad-etcd.jsonl"
)

var ednField = regexp.MustCompile(`:(type|f|process|time|error) (\[[^\]]*\]|"[^"]*"|:?[\w-]+)`)

// convertKnossosMutex turns a Jepsen lock history (one EDN op map per line) into events:
// process p is candidate c<p+1>; invoke acquire → campaigning; ok acquire → elected with a
// synthetic token (the order of ok acquires, since Jepsen's lock had none); a holder's
// release that succeeds → stepped-down at its invoke time (belief ends when the client starts
// releasing); a holder's release that fails (:not-held, lease not found, timeout: the lease had
// expired) → stepped-down at the failure, when the client learns it; failed acquires, pending
// acquires and releases by non-holders have no effect and are dropped; nemesis :start/:stop
// pairs → fault-start/fault-end of kind "nemesis". The lines keep their file order as seq.
func convertKnossosMutex(path string) ([]history.Event, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var out []history.Event
	add := func(e history.Event) {
		e.V, e.Seq, e.Source = history.Version, int64(len(out)+1), history.SourceOf(e.Kind)
		out = append(out, e)
	}
	holding := map[string]bool{}
	releaseAt := map[string]int64{}
	var token int64
	faultID, inFault := 0, false
	var first, last int64
	sc := bufio.NewScanner(f)
	lineNo := 0
	for sc.Scan() {
		lineNo++
		m := map[string]string{}
		for _, g := range ednField.FindAllStringSubmatch(sc.Text(), -1) {
			m[g[1]] = g[2]
		}
		if len(m) == 0 {
			continue
		}
		t, err := strconv.ParseInt(m["time"], 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%s line %d: no :time: %q", path, lineNo, sc.Text())
		}
		if first == 0 {
			first = t
			add(history.Event{T: t - 1, Kind: history.KindRunStart, Spec: "converted from knossos data/mutex/bad/etcd.edn"})
		}
		if t > last {
			last = t
		}
		if m["process"] == ":nemesis" {
			switch {
			case m["f"] == ":start" && !inFault:
				faultID++
				inFault = true
				add(history.Event{T: t, Kind: history.KindFaultStart, FaultID: faultID, Fault: "nemesis",
					Spec: "jepsen :nemesis :start (the fault kind is not recorded in the history)"})
			case m["f"] == ":stop" && inFault:
				inFault = false
				add(history.Event{T: t, Kind: history.KindFaultEnd, FaultID: faultID})
			}
			continue
		}
		p, err := strconv.Atoi(m["process"])
		if err != nil {
			return nil, fmt.Errorf("%s line %d: bad :process %q", path, lineNo, m["process"])
		}
		node := fmt.Sprintf("c%d", p+1)
		switch m["type"] + " " + m["f"] {
		case ":invoke :acquire":
			if !holding[node] {
				add(history.Event{T: t, Kind: history.KindCampaigning, Node: node})
			}
		case ":ok :acquire":
			token++
			holding[node] = true
			add(history.Event{T: t, Kind: history.KindElected, Node: node, Token: token})
		case ":invoke :release":
			if holding[node] {
				releaseAt[node] = t
			}
		case ":ok :release":
			if holding[node] {
				holding[node] = false
				add(history.Event{T: releaseAt[node], Kind: history.KindSteppedDown, Node: node, Reason: "release"})
			}
		case ":fail :release":
			// The holder learns only now that the lock was no longer its own (its lease had
			// expired): it believed it led until this response.
			if holding[node] {
				holding[node] = false
				add(history.Event{T: t, Kind: history.KindSteppedDown, Node: node, Reason: "release failed: " + m["error"]})
			}
		}
	}
	if err := sc.Err(); err != nil {
		return nil, err
	}
	add(history.Event{T: last + 1, Kind: history.KindRunEnd})
	return out, nil
}

func TestKnossosMutexFixture(t *testing.T) {
	// The converter runs every time: a change to it must show up as a fixture diff.
	converted, err := convertKnossosMutex(knossosSource)
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for _, e := range converted {
		line, _ := json.Marshal(e)
		b.Write(line)
		b.WriteByte('\n')
	}
	if *updateKnossos {
		if err := os.WriteFile(knossosFixture, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if stored, err := os.ReadFile(knossosFixture); err != nil {
		t.Fatal(err)
	} else if string(stored) != b.String() {
		t.Fatalf("converting %s no longer gives %s; if the change is intended, run with -update-knossos and review the diff",
			knossosSource, knossosFixture)
	}
	evs, _, err := history.ReadFile(knossosFixture)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Check(t.Context(), evs, Params{})
	if err != nil {
		t.Fatal(err)
	}
	strict := model(r, ModelElectionStrict)
	if strict.Result != PorcIllegal {
		t.Fatalf("strict mutex on the knossos etcd lock history: %s, want illegal (%+v)", strict.Result, strict)
	}
	if r.Tenures.OverlapCount == 0 {
		t.Fatal("two processes held the lock at once, yet no overlap was found")
	}
	// Jepsen's tokens are synthetic (grant order), so the lease form must hold.
	if lease := model(r, ModelElectionLease); lease.Result != PorcOK {
		t.Fatalf("lease model: %+v", lease)
	}
	t.Logf("%d events, %d tenures, %d overlaps (max %s); strict: %s", len(evs), r.Tenures.Elections,
		r.Tenures.OverlapCount, fmtD(r.Tenures.OverlapMaxNs), strict.Meaning)
}
