package harness

import (
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"sync"
	"time"

	"github.com/splitbrain-chaos/splitbrain/history"
	"github.com/splitbrain-chaos/splitbrain/internal/progress"
)

// journal is the recorder stage: the run directory, history.jsonl (written through the
// Recorder, which also keeps the live state), the harness's own log and progress output, and
// the phase clock. Every other stage reports through it; it is opened first and closed last.
type journal struct {
	dir     string
	started time.Time
	w       *history.Writer
	rec     *Recorder
	state   *LiveState
	out     io.Writer // progress and summary; io.Discard when quiet
	quiet   bool      // no progress output was asked for (Config.Progress nil)
	prog    *progress.Progress
	// harnessLog keeps the run's own log lines (logs/harness.log), also when the progress
	// output is quiet, as in `splitbrain matrix` without -v.
	harnessLog *log.Logger
	logFile    *os.File

	mu        sync.Mutex
	phaseNow  string    // the lifecycle phase in progress
	phaseAt   time.Time // when it began
	lifeStart time.Time // warmup start: progress counts elapsed/total from here
}

// openJournal creates the run directory with its history and harness log.
func openJournal(cfg Config, started time.Time) (*journal, error) {
	j := &journal{started: started, state: NewLiveState(), out: cfg.Progress, quiet: cfg.Progress == nil}
	if j.out == nil {
		j.out = io.Discard
	}
	j.prog = progress.NewProgress(j.out, progress.ProgressMode(cfg.ProgressMode))
	j.prog.Period = cfg.ProgressPeriod
	var err error
	if j.dir, err = CreateRunDir(cfg.StoreRoot, cfg.TestName, started); err != nil {
		return nil, err
	}
	if j.w, err = history.Create(filepath.Join(j.dir, HistoryFile)); err != nil {
		return nil, err
	}
	if j.logFile, err = os.Create(filepath.Join(j.dir, LogsDir, HarnessLog)); err != nil {
		j.w.Close()
		return nil, err
	}
	j.harnessLog = log.New(j.logFile, "", log.Ltime|log.Lmicroseconds)
	j.rec = NewRecorder(j.w, j.state)
	return j, nil
}

// newJournalOn records into w without a run directory of its own (unit tests).
func newJournalOn(w *history.Writer) *journal {
	j := &journal{w: w, state: NewLiveState(), out: io.Discard, quiet: true}
	j.prog = progress.NewProgress(j.out, progress.ProgressAuto)
	j.rec = NewRecorder(w, j.state)
	return j
}

func (j *journal) logDir() string { return filepath.Join(j.dir, LogsDir) }

// record appends a harness-side event, timestamped now unless it carries its own time.
func (j *journal) record(e history.Event) (history.Event, error) {
	if e.T == 0 {
		e.T = history.Now()
	}
	return j.rec.Record(e)
}

// harnessError records a failure of the harness's own work in the history, where the
// checkers see it: the verdict depends on the run directory alone. phase "" = the phase
// in progress.
func (j *journal) harnessError(phase, msg string) {
	if phase == "" {
		j.mu.Lock()
		phase = j.phaseNow
		j.mu.Unlock()
	}
	j.record(history.Event{Source: history.SourceHarness, Kind: history.KindHarnessError, Phase: phase, Reason: msg})
}

// phase records that the lifecycle entered phase name.
func (j *journal) phase(name string) {
	j.mu.Lock()
	j.phaseNow, j.phaseAt = name, time.Now()
	if name == history.PhaseWarmup {
		j.lifeStart = j.phaseAt
	}
	j.mu.Unlock()
	j.record(history.Event{Source: history.SourceHarness, Kind: history.KindPhase, Phase: name})
}

// phaseStarted is when the phase in progress began.
func (j *journal) phaseStarted() time.Time {
	j.mu.Lock()
	defer j.mu.Unlock()
	return j.phaseAt
}

// sinceStart is how far into the run (warmup start) a CLOCK_MONOTONIC time lies.
func (j *journal) sinceStart(t int64) time.Duration {
	j.mu.Lock()
	start := j.lifeStart
	j.mu.Unlock()
	if start.IsZero() {
		return 0
	}
	d := time.Duration(t-history.Now()) + time.Since(start)
	return d.Round(10 * time.Millisecond)
}

func (j *journal) logf(format string, args ...any) {
	msg := fmt.Sprintf(format, args...)
	if j.harnessLog != nil {
		j.harnessLog.Print(msg)
	}
	j.prog.Event("log", "splitbrain: "+msg, nil)
}

// logGap records that node's output may be missing from the history, and says so.
func (j *journal) logGap(node, why string) {
	j.harnessError("", fmt.Sprintf("output of %s may be missing from the history: %s", node, why))
	j.logf("WARNING: output of %s may be missing: %s", node, why)
}

// loud says a failure on the progress output, and on stderr when there is none.
func (j *journal) loud(format string, args ...any) {
	fmt.Fprintf(j.out, format, args...)
	if j.quiet {
		fmt.Fprintf(os.Stderr, format, args...)
	}
}

// close records run-end and closes the history; later output is dropped.
func (j *journal) close(reason string) {
	j.record(history.Event{Source: history.SourceHarness, Kind: history.KindRunEnd, Reason: reason})
	j.rec.Close()
	if err := j.w.Close(); err != nil {
		fmt.Fprintf(os.Stderr, "splitbrain: history %s: %v\n", filepath.Join(j.dir, HistoryFile), err)
	}
}

// closeLog closes logs/harness.log once the run has nothing more to say.
func (j *journal) closeLog() {
	if j.logFile != nil {
		j.logFile.Close()
	}
}
