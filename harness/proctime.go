package harness

import (
	"bytes"
	"fmt"
	"os"
	"strconv"

	"golang.org/x/sys/unix"
)

// userHZ is the unit of /proc/<pid>/stat's starttime (USER_HZ, 100 on every Linux ABI).
const userHZ = 100

// processStartMono returns when host process pid started, on CLOCK_MONOTONIC (ns), from
// /proc/<pid>/stat (10 ms granularity, rounded down, so it never lies after the process's
// first output). It fails where the engine's processes are not visible (Docker Desktop).
func processStartMono(pid int) (int64, error) {
	if pid <= 0 {
		return 0, fmt.Errorf("no pid")
	}
	b, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return 0, err
	}
	return parseStartTime(b)
}

// parseStartTime reads field 22 (starttime, ticks since boot) of a /proc/<pid>/stat line and
// converts it to CLOCK_MONOTONIC ns. The command name (field 2) may hold spaces and ')', so
// fields are counted after the last ')'.
func parseStartTime(stat []byte) (int64, error) {
	i := bytes.LastIndexByte(stat, ')')
	if i < 0 {
		return 0, fmt.Errorf("malformed /proc stat")
	}
	fields := bytes.Fields(stat[i+1:])
	const startField = 22 - 3 // fields after "pid (comm)" start at field 3
	if len(fields) <= startField {
		return 0, fmt.Errorf("malformed /proc stat: %d fields", len(fields)+2)
	}
	ticks, err := strconv.ParseInt(string(fields[startField]), 10, 64)
	if err != nil {
		return 0, fmt.Errorf("malformed /proc stat starttime: %v", err)
	}
	startBoot := ticks * (1e9 / userHZ)
	var boot, mono unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_BOOTTIME, &boot); err != nil {
		return 0, err
	}
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &mono); err != nil {
		return 0, err
	}
	// BOOTTIME also counts suspended time; the difference converts between the two.
	t := startBoot - (boot.Nano() - mono.Nano())
	if t <= 0 {
		return 0, fmt.Errorf("start time before the monotonic epoch")
	}
	return t, nil
}
