package runconfig

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
)

// testdata/run/config.json was written by `splitbrain run` (with a fault plan): decoding and
// re-encoding it must give the same JSON, or old run directories would change meaning.
func TestRoundTripKeepsFormat(t *testing.T) {
	c, err := Read("testdata/run")
	if err != nil {
		t.Fatal(err)
	}
	if c.Flags.Store != "redis" || c.Check.Recipe != "redis-setnx" || len(c.Plan) == 0 || c.Images["redis"] == "" {
		t.Fatalf("fields not decoded: %+v", c)
	}
	orig, err := os.ReadFile("testdata/run/config.json")
	if err != nil {
		t.Fatal(err)
	}
	again, err := json.MarshalIndent(c, "", " ")
	if err != nil {
		t.Fatal(err)
	}
	var a, b any
	if err := json.Unmarshal(orig, &a); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(again, &b); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(a, b) {
		t.Fatalf("re-encoded config.json differs:\n%s", again)
	}
}

func TestReadErrors(t *testing.T) {
	dir := t.TempDir()
	if _, err := Read(dir); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("missing file: %v, want os.ErrNotExist", err)
	}
	if err := os.WriteFile(filepath.Join(dir, FileName), []byte(`{"seed": "x"}`), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Read(dir); err == nil || !strings.Contains(err.Error(), "not a splitbrain config.json") {
		t.Fatalf("bad file: %v", err)
	}
}
