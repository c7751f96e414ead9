package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"testing"
	"time"
)

// A reader that goes away (`splitbrain matrix | head`) interrupts the command as Ctrl-C
// does, so its runs heal and tear down: here a command that prints until its context ends
// writes into a real pipe whose read end is closed.
func TestClosedOutputInterrupts(t *testing.T) {
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	defer w.Close()
	r.Close()
	var cause error
	register(command{name: "test-print-until-done", run: func(ctx context.Context, _ []string, stdout, _ io.Writer) (int, error) {
		deadline := time.After(30 * time.Second)
		for i := 0; ; i++ {
			fmt.Fprintf(stdout, "line %d\n", i)
			select {
			case <-ctx.Done():
				cause = context.Cause(ctx)
				return exitUnknown, nil
			case <-deadline:
				return exitValid, nil
			default:
			}
		}
	}})
	defer delete(commands, "test-print-until-done")
	if code := runMain([]string{"test-print-until-done"}, w, io.Discard); code != exitUnknown {
		t.Fatalf("exit %d: the command was not interrupted by its closed output within 30 s", code)
	}
	if !errors.Is(cause, errOutputClosed) {
		t.Errorf("interrupt cause %v, want %v", cause, errOutputClosed)
	}
}
