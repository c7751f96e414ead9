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

// FromWall converts a wall-clock time (ns since the Unix epoch, as the Docker engine stamps
// its events) to CLOCK_MONOTONIC ns, using the offset between the two clocks right now.
// The error is how far the offset moved between the two instants (NTP slewing: at most
// 500 ppm, i.e. 0.5 µs per ms of age) plus the microsecond between the two clock reads;
// a step of the wall clock in between (settimeofday) shifts the result by the step.
func FromWall(wallNs int64) int64 {
	var mono, real unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono); err != nil {
		panic("CLOCK_MONOTONIC unavailable: " + err.Error())
	}
	if err := unix.ClockGettime(unix.CLOCK_REALTIME, &real); err != nil {
		panic("CLOCK_REALTIME unavailable: " + err.Error())
	}
	return wallNs - (real.Nano() - mono.Nano())
}
