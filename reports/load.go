// Package reports renders what a run left in its directory for people and CI: report.html
// (one self-contained page: verdict, run facts, timeline, election latency, checker
// sections), junit.xml, the store-wide index.html with its leaderboard of recipes, a
// read-only HTTP server for the store, and the live progress printer of `splitbrain run`.
// docs/reports.md describes the files.
package reports

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"github.com/splitbrain-chaos/splitbrain/checkers"
	"github.com/splitbrain-chaos/splitbrain/history"
	"github.com/splitbrain-chaos/splitbrain/reports/runconfig"

	"github.com/splitbrain-chaos/splitbrain/history/runfile"
)

// Names of the files in a run directory (the harness writes the inputs, reports the outputs).
const (
	HistoryFile = runfile.HistoryFile
	ConfigFile  = runconfig.FileName
	ResultsFile = checkers.ResultsFile
	ReportFile  = "report.html"
	JUnitFile   = "junit.xml"
	IndexFile   = "index.html"
	LogsDir     = "logs"
)

// runConfig is config.json, as reports/runconfig defines it for both writer and readers.
type runConfig = runconfig.Config

// readConfig reads config.json; a missing file is not an error (a run that crashed early, or
// a hand-made run directory) and gives an empty config.
func readConfig(dir string) (*runConfig, error) {
	rc, err := runconfig.Read(dir)
	if errors.Is(err, os.ErrNotExist) {
		return &runConfig{}, nil
	}
	return rc, err
}

// readResults reads results.json, saying how to produce it when it is missing.
func readResults(dir string) (*checkers.Results, error) {
	path := filepath.Join(dir, ResultsFile)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		return nil, fmt.Errorf("%s has no %s: run 'splitbrain check %s' first to check the history", dir, ResultsFile, dir)
	}
	return checkers.ReadResults(path)
}

// tick is one write decision at the resource (or, without a resource log, a write as the
// candidate saw it).
type tick struct {
	t     int64
	node  string
	token int64
	kind  tickKind
}

type tickKind uint8

const (
	tickAccepted tickKind = iota
	tickRejected
	tickStale   // accepted although stale: the bug fencing exists to prevent
	tickUnknown // candidate-side write with no answer
	nTickKinds
)

var tickNames = [nTickKinds]string{"accepted", "rejected", "stale accepted", "unknown"}

// mark is a point event on a candidate lane: process start/exit, signal.
type mark struct {
	t     int64
	node  string
	label string
	kind  string // exit | start | signal
}

// rawHistory is what the report needs from history.jsonl beyond results.json.
type rawHistory struct {
	ticks    []tick
	marks    []mark
	nodes    map[string]bool // every node named by a candidate or harness event
	badLines int             // lines that did not decode (a cut-off tail, typically)
	missing  bool
}

// histLine is the part of a history event the report draws.
type histLine struct {
	T      int64          `json:"t"`
	Kind   history.Kind   `json:"kind"`
	Source history.Source `json:"src"`
	Node   string         `json:"node"`
	Token  int64          `json:"token"`
	Result string         `json:"result"`
	Stale  bool           `json:"stale"`
	Signal string         `json:"signal"`
	Exit   *int           `json:"exit"`
}

// wanted are the kinds the report reads; other lines are skipped without decoding.
var wanted = [][]byte{[]byte(`"kind":"decision"`), []byte(`"kind":"write"`), []byte(`"kind":"process-exit"`),
	[]byte(`"kind":"process-start"`), []byte(`"kind":"signal"`)}

// readHistory scans history.jsonl once, keeping only write outcomes and process marks. It
// does not validate (the checkers did when they wrote results.json) and decodes only the
// lines it draws into a small struct, so a million-event history costs about a second.
func readHistory(dir string) (*rawHistory, error) {
	h := &rawHistory{nodes: map[string]bool{}}
	f, err := runfile.Open(filepath.Join(dir, HistoryFile), runfile.MaxHistory)
	if errors.Is(err, os.ErrNotExist) {
		h.missing = true
		return h, nil
	}
	if err != nil {
		return nil, err
	}
	defer f.Close()
	var writes []tick
	sawDecision := false
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 256<<10), 2<<20)
	for sc.Scan() {
		line := sc.Bytes()
		keep := false
		for _, w := range wanted {
			if bytes.Contains(line, w) {
				keep = true
				break
			}
		}
		if !keep {
			continue
		}
		var e histLine
		if !fastDecode(line, &e) {
			if err := json.Unmarshal(line, &e); err != nil {
				h.badLines++
				continue
			}
		}
		switch e.Kind {
		case history.KindDecision:
			sawDecision = true
			k := tickAccepted
			if e.Result != history.ResultAccepted {
				k = tickRejected
			} else if e.Stale {
				k = tickStale
			}
			h.ticks = append(h.ticks, tick{e.T, e.Node, e.Token, k})
		case history.KindWrite:
			if sawDecision {
				break
			}
			k := tickAccepted
			switch e.Result {
			case history.ResultRejected:
				k = tickRejected
			case history.ResultUnknown:
				k = tickUnknown
			}
			writes = append(writes, tick{e.T, e.Node, e.Token, k})
		case history.KindProcessExit:
			label := "process exited"
			if e.Exit != nil {
				label = fmt.Sprintf("process exited (code %d)", *e.Exit)
			}
			h.marks = append(h.marks, mark{e.T, e.Node, label, "exit"})
		case history.KindProcessStart:
			h.marks = append(h.marks, mark{e.T, e.Node, "process started", "start"})
		case history.KindSignal:
			h.marks = append(h.marks, mark{e.T, e.Node, "harness sent " + e.Signal, "signal"})
		}
		if e.Node != "" && (e.Source == history.SourceCandidate || e.Source == history.SourceHarness) {
			h.nodes[e.Node] = true
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", filepath.Join(dir, HistoryFile), err)
	}
	if !sawDecision {
		h.ticks = writes // no resource log: show what the candidates saw
	}
	sort.SliceStable(h.ticks, func(i, j int) bool { return h.ticks[i].t < h.ticks[j].t })
	return h, nil
}

// fastDecode reads a decision or write line without encoding/json (5x faster on the
// million-event history). It gives up, and the caller decodes properly, on anything it does
// not expect: another kind, a string with escapes, a missing field.
func fastDecode(line []byte, e *histLine) bool {
	var ok bool
	switch {
	case bytes.Contains(line, []byte(`"kind":"decision"`)):
		e.Kind = history.KindDecision
	case bytes.Contains(line, []byte(`"kind":"write"`)):
		e.Kind = history.KindWrite
	default:
		return false
	}
	if e.T, ok = intField(line, `"t":`); !ok {
		return false
	}
	if e.Node, ok = strField(line, `"node":"`); !ok {
		return false
	}
	if e.Result, ok = strField(line, `"result":"`); !ok {
		return false
	}
	e.Token, _ = intField(line, `"token":`)
	e.Stale = bytes.Contains(line, []byte(`"stale":true`))
	if e.Kind == history.KindDecision {
		e.Source = history.SourceResource
	} else {
		e.Source = history.SourceCandidate
	}
	return true
}

func intField(line []byte, key string) (int64, bool) {
	i := bytes.Index(line, []byte(key))
	if i < 0 {
		return 0, false
	}
	j := i + len(key)
	var n int64
	start := j
	for j < len(line) && line[j] >= '0' && line[j] <= '9' && j-start < 19 {
		n = n*10 + int64(line[j]-'0')
		j++
	}
	if j == start || j >= len(line) || (line[j] != ',' && line[j] != '}') {
		return 0, false
	}
	return n, true
}

func strField(line []byte, key string) (string, bool) {
	i := bytes.Index(line, []byte(key))
	if i < 0 {
		return "", false
	}
	rest := line[i+len(key):]
	j := bytes.IndexByte(rest, '"')
	if j < 0 || bytes.IndexByte(rest[:j], '\\') >= 0 {
		return "", false
	}
	return string(rest[:j]), true
}

// listLogs returns the node log files under logs/, sorted.
func listLogs(dir string) []string {
	ents, err := os.ReadDir(filepath.Join(dir, LogsDir))
	if err != nil {
		return nil
	}
	var out []string
	for _, e := range ents {
		if e.Type().IsRegular() {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out
}
