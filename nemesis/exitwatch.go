package nemesis

import (
	"errors"
	"os"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// exitWatch tells when every process of a set has exited, from the kernel: a pidfd polls
// readable once its process has exited, and the runtime's poller waits on it, so nothing
// is polled. A pause whose processes are all gone (the node was killed or fenced while
// stopped) has nothing left to hold, and its fault ends then instead of at for=.
type exitWatch struct {
	gone  chan struct{} // closed when every watched process has exited
	files []*os.File
	once  sync.Once
}

// watchExits starts watching procs. It returns nil when the kernel cannot watch one of
// them (no pidfd_open, or a process not visible under procRoot, as in the fake /proc of
// tests): the fault then holds for its whole for=, as before.
func watchExits(procs []proc) *exitWatch {
	if procRoot != "/proc" {
		return nil // a fake /proc's PIDs are not the kernel's
	}
	w := &exitWatch{gone: make(chan struct{})}
	for _, p := range procs {
		fd, err := unix.PidfdOpen(p.PID, unix.PIDFD_NONBLOCK)
		if errors.Is(err, unix.ESRCH) {
			continue // exited already
		}
		if err != nil {
			w.stop()
			return nil
		}
		f := os.NewFile(uintptr(fd), "pidfd")
		if !p.same() { // the PID was reused after the process we stopped exited
			f.Close()
			continue
		}
		w.files = append(w.files, f)
	}
	var left sync.WaitGroup
	var exits atomic.Int32
	for _, f := range w.files {
		rc, err := f.SyscallConn()
		if err != nil {
			w.stop()
			return nil
		}
		left.Add(1)
		go func() {
			exited := false
			err := rc.Read(func(fd uintptr) bool {
				n, _ := unix.Poll([]unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}, 0)
				exited = n > 0
				return exited
			})
			if err == nil && exited {
				exits.Add(1)
			}
			left.Done()
		}()
	}
	go func() {
		left.Wait()
		if int(exits.Load()) == len(w.files) { // else stop closed a pidfd first
			close(w.gone)
		}
	}()
	return w
}

// done is closed when every watched process has exited; nil (never ready) for no watch.
func (w *exitWatch) done() <-chan struct{} {
	if w == nil {
		return nil
	}
	return w.gone
}

// stop ends the watch and closes its pidfds.
func (w *exitWatch) stop() {
	if w == nil {
		return
	}
	w.once.Do(func() {
		for _, f := range w.files {
			f.Close()
		}
	})
}
