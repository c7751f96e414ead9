package harness

import (
	"github.com/splitbrain-chaos/splitbrain/internal/platform"
	"github.com/splitbrain-chaos/splitbrain/nemesis"
)

type faketimeSetup struct {
	env   map[string]string
	files []platform.File
}

// faketimeFor puts libfaketime in front of the store servers when the schedule skews a
// store node's clock and the store supports it; otherwise the servers run untouched (a
// preloaded library is not free, and the JVM is sensitive to it).
func faketimeFor(storeKind string, sched nemesis.Schedule) faketimeSetup {
	if ok, _ := nemesis.ClockSupported(storeKind); !ok || !sched.Needs().StoreClock {
		return faketimeSetup{}
	}
	return faketimeSetup{
		env:   nemesis.FaketimeEnv(storeKind),
		files: []platform.File{{Path: nemesis.FaketimeFile, Content: []byte(nemesis.FaketimeInitial), Mode: 0o644}},
	}
}
