package history

import "golang.org/x/sys/unix"

// Now returns the host's CLOCK_MONOTONIC in ns: the one clock every event is stamped with.
// Go's time.Now hides its monotonic reading, so read the kernel clock directly.
func Now() int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		panic("CLOCK_MONOTONIC unavailable: " + err.Error())
	}
	return ts.Nano()
}
