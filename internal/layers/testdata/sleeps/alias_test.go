package sample

import (
	"testing"
	tm "time"
)

func TestAliased(t *testing.T) {
	tm.Sleep(tm.Second) // want: the time package under another name
}
