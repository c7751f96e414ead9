package fence

import (
	"bufio"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"math/big"
	"net"
	"sync"
	"time"
)

// fence_docker (fence-agents 4.12.1) always speaks TLS: its ssl option defaults on and
// cannot be turned off (ClusterLabs/fence-agents#581); without client certificates it runs
// with ssl_insecure (no verification of the server). So the device answers TLS and plain
// HTTP on one port, told apart by a connection's first byte (a TLS handshake record starts
// with 0x16, an HTTP request with a method's letter). The certificate is self-signed, made
// per device: it authenticates nothing. The access rules (source address of a run
// candidate) are what keeps others out, on either protocol.

// selfSigned makes the device's certificate.
func selfSigned() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "splitbrain fence device"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(7 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// sniffListener hands the server each gated connection as plain or TLS, after reading its
// first byte in a goroutine of its own (a silent client holds no Accept), within readHeader.
type sniffListener struct {
	net.Listener
	cfg        *tls.Config
	readHeader time.Duration
	conns      chan net.Conn
	done       chan struct{}
	once       sync.Once
	errMu      sync.Mutex
	err        error
	errc       chan struct{}
}

func newSniffListener(inner net.Listener, cfg *tls.Config, readHeader time.Duration) *sniffListener {
	l := &sniffListener{Listener: inner, cfg: cfg, readHeader: readHeader,
		conns: make(chan net.Conn), done: make(chan struct{}), errc: make(chan struct{})}
	go l.loop()
	return l
}

func (l *sniffListener) loop() {
	for {
		c, err := l.Listener.Accept()
		if err != nil {
			l.errMu.Lock()
			l.err = err
			l.errMu.Unlock()
			close(l.errc)
			return
		}
		go l.sniff(c)
	}
}

func (l *sniffListener) sniff(c net.Conn) {
	_ = c.SetReadDeadline(time.Now().Add(l.readHeader))
	br := bufio.NewReader(c)
	first, err := br.Peek(1)
	_ = c.SetReadDeadline(time.Time{})
	if err != nil {
		_ = c.Close()
		return
	}
	var out net.Conn = &peekedConn{Conn: c, r: br}
	if first[0] == 0x16 && l.cfg != nil {
		out = tls.Server(out, l.cfg)
	}
	select {
	case l.conns <- out:
	case <-l.done:
		_ = out.Close()
	}
}

func (l *sniffListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.errc:
		l.errMu.Lock()
		defer l.errMu.Unlock()
		return nil, l.err
	}
}

func (l *sniffListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return l.Listener.Close()
}

// peekedConn reads what the sniff buffered first.
type peekedConn struct {
	net.Conn
	r *bufio.Reader
}

func (c *peekedConn) Read(p []byte) (int, error) { return c.r.Read(p) }
