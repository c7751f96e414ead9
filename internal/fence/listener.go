package fence

import (
	"context"
	"net"
	"net/netip"
	"sync"
	"time"
)

// limits bound what one source can hold of the device: another run's candidate opened
// 20,000 idle connections and took the harness to its descriptor limit.
type limits struct {
	conns, perSource int           // open connections in all and from one address
	readHeader, read time.Duration // to read a request's header, and the whole request
	write            time.Duration // to write an answer, counted from when it is ready
	idle             time.Duration // a keep-alive connection with no request
	lookup           time.Duration // to tell whether a new connection's source is a candidate
}

var defaultLimits = limits{conns: 256, perSource: 32, readHeader: 5 * time.Second, read: 10 * time.Second,
	write: 10 * time.Second, idle: 30 * time.Second, lookup: 2 * time.Second}

// gateListener hands the server only connections the device may serve: from a candidate of
// the run (others are closed at accept, before a byte is read), and no more than the limits
// allow (more are closed at once, so a flood costs no descriptors beyond the limits).
type gateListener struct {
	net.Listener
	d *Device

	mu    sync.Mutex
	total int
	bySrc map[netip.Addr]int
}

func (l *gateListener) Accept() (net.Conn, error) {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		src := netip.Addr{}
		if ta, ok := c.RemoteAddr().(*net.TCPAddr); ok {
			src = ta.AddrPort().Addr().Unmap()
		}
		if !l.candidate(src) {
			_ = c.Close()
			l.d.out.addConn(src.String())
			continue
		}
		l.mu.Lock()
		if l.total >= l.d.limits.conns || l.bySrc[src] >= l.d.limits.perSource {
			l.mu.Unlock()
			_ = c.Close()
			l.d.out.addOver()
			continue
		}
		l.total++
		l.bySrc[src]++
		l.mu.Unlock()
		return &gatedConn{Conn: c, l: l, src: src}, nil
	}
}

func (l *gateListener) candidate(src netip.Addr) bool {
	if !src.IsValid() {
		return false
	}
	ctx, cancel := context.WithTimeout(l.d.ctx, l.d.limits.lookup)
	defer cancel()
	_, ok := l.d.power.Requester(ctx, src)
	return ok
}

func (l *gateListener) release(src netip.Addr) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.total--
	if l.bySrc[src]--; l.bySrc[src] <= 0 {
		delete(l.bySrc, src)
	}
}

// gatedConn gives its place back when the server closes it.
type gatedConn struct {
	net.Conn
	l    *gateListener
	src  netip.Addr
	once sync.Once
}

func (c *gatedConn) Close() error {
	err := c.Conn.Close()
	c.once.Do(func() { c.l.release(c.src) })
	return err
}
