package history

import (
	"bytes"
	"testing"
)

// FuzzRead: the reader never panics, and whatever it accepts satisfies the invariants
// checkers rely on (valid events, strictly increasing seq).
func FuzzRead(f *testing.F) {
	f.Add([]byte(`{"v":1,"seq":1,"t":10,"src":"harness","kind":"run-start"}` + "\n"))
	f.Add([]byte(`{"v":1,"seq":1,"t":20,"src":"candidate","kind":"elected","node":"c1","token":7}` + "\n" +
		`{"v":1,"seq":2,"t":30,"src":"candidate","kind":"write","node":"c1","token":7,"write_id":"c1-1","call_t":25,"result":"accepted"}` + "\n"))
	f.Add([]byte(`{"v":1,"seq":2,"t":1,"src":"harness","kind":"run-end"}` + "\n" + `{"v":1,"seq":1,"t":1,"src":"harness","kind":"run-end"}`))
	f.Add([]byte(`{"v":1,"seq":1,"t":40,"src":"nemesis","kind":"fault-start","fault_id":1,"fault":"pause","targets":["c1"]}` + "\n{\"v\":1,"))
	f.Add([]byte("\n\n  \n{}\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		evs, info, err := Read(bytes.NewReader(b), "fuzz")
		if err != nil {
			if len(err.Error()) == 0 {
				t.Fatal("empty error message")
			}
			return
		}
		_ = info
		var last int64
		for i := range evs {
			if verr := evs[i].Validate(); verr != nil {
				t.Fatalf("accepted an invalid event: %v", verr)
			}
			if evs[i].Seq <= last {
				t.Fatalf("accepted seq %d after %d", evs[i].Seq, last)
			}
			last = evs[i].Seq
		}
	})
}
