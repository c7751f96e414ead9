package checkers

import (
	"encoding/json"
	"slices"
	"testing"
)

// TestSectionsAreTheCheckers: the checkers are exactly the section fields of Results, in
// field order, and an empty section reads as JSON without nulls (lists are [] even when the
// checker never ran).
func TestSectionsAreTheCheckers(t *testing.T) {
	want := []string{"tenures", "resource", "tokens", "porcupine", "latency", "contract", "fences", "validity"}
	if got := Names(); !slices.Equal(got, want) {
		t.Fatalf("Names() = %v, want %v (report order)", got, want)
	}
	b, err := json.Marshal(emptyResults(Params{}))
	if err != nil {
		t.Fatal(err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(b, &top); err != nil {
		t.Fatal(err)
	}
	for _, name := range Names() {
		var sec map[string]json.RawMessage
		if err := json.Unmarshal(top[name], &sec); err != nil {
			t.Fatalf("section %s: %v (%s)", name, err, top[name])
		}
		for k, v := range sec {
			if string(v) == "null" {
				t.Errorf("empty section %s has %s: null; its reset must make every list non-nil", name, k)
			}
		}
	}
}
