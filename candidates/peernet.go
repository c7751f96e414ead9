package candidates

// The peer network of the textbook elections (bully, ring): one JSON message per TCP
// connection, acknowledged by the receiver, so a send either reached a live peer or failed
// (refused, reset, or no answer within the send timeout: a dropped link looks like a dead
// peer, which is what these algorithms' failure detectors assume).

import (
	"bufio"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"sync"
	"time"
)

// peerMsg is every message of bully and ring.
type peerMsg struct {
	Kind   string `json:"k"`
	From   string `json:"f"`
	Best   string `json:"b,omitempty"` // ring: the best candidate the election message has seen
	Leader string `json:"l,omitempty"` // the leader a coordinator/heartbeat/elected message announces
	Epoch  int64  `json:"e"`           // the sender's epoch (max seen); a leader's is its token
	Hops   int    `json:"h,omitempty"` // ring: hops travelled, to drop a message that circles
}

// peerNet delivers messages between candidates.
type peerNet interface {
	// Send delivers m to peer id and returns once the peer acknowledged it, or an error.
	Send(id string, m peerMsg) error
	Inbox() <-chan peerMsg
	Close() error
}

// tcpNet is peerNet over TCP on the run network.
type tcpNet struct {
	addrs   map[string]string // node id -> host:port
	timeout time.Duration
	ln      net.Listener
	inbox   chan peerMsg
	done    chan struct{}
	wg      sync.WaitGroup
}

func listenPeers(port int, addrs map[string]string, timeout time.Duration) (*tcpNet, error) {
	ln, err := net.Listen("tcp", fmt.Sprintf(":%d", port))
	if err != nil {
		return nil, fmt.Errorf("listen for peers: %w", err)
	}
	t := &tcpNet{addrs: addrs, timeout: timeout, ln: ln, inbox: make(chan peerMsg, 256), done: make(chan struct{})}
	t.wg.Add(1)
	go t.accept()
	return t, nil
}

func (t *tcpNet) accept() {
	defer t.wg.Done()
	for {
		c, err := t.ln.Accept()
		if err != nil {
			return
		}
		go t.serve(c)
	}
}

func (t *tcpNet) serve(c net.Conn) {
	defer c.Close()
	c.SetDeadline(time.Now().Add(t.timeout))
	line, err := bufio.NewReader(c).ReadBytes('\n')
	if err != nil {
		return
	}
	var m peerMsg
	if json.Unmarshal(line, &m) != nil {
		return
	}
	select {
	case t.inbox <- m:
		c.Write([]byte("ok\n"))
	case <-t.done:
	}
}

func (t *tcpNet) Send(id string, m peerMsg) error {
	addr, ok := t.addrs[id]
	if !ok {
		return fmt.Errorf("unknown peer %s", id)
	}
	c, err := net.DialTimeout("tcp", addr, t.timeout)
	if err != nil {
		return err
	}
	defer c.Close()
	c.SetDeadline(time.Now().Add(t.timeout))
	b, _ := json.Marshal(m)
	if _, err := c.Write(append(b, '\n')); err != nil {
		return err
	}
	ack, err := bufio.NewReader(c).ReadString('\n')
	if err != nil {
		return err
	}
	if ack != "ok\n" {
		return errors.New("peer did not acknowledge")
	}
	return nil
}

func (t *tcpNet) Inbox() <-chan peerMsg { return t.inbox }

func (t *tcpNet) Close() error {
	close(t.done)
	err := t.ln.Close()
	t.wg.Wait()
	return err
}
