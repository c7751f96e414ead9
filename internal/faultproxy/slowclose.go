package faultproxy

import (
	"time"

	"github.com/Shopify/toxiproxy/v2/toxics"
)

// SlowCloseType is the toxic type the slow-close fault uses instead of Toxiproxy's own
// slow_close: that one swallows a close it is still holding when it is removed, so the
// connection would stay half-closed after the fault healed. This one passes such a close on
// at removal (Cleanup), so a heal never leaves a close behind.
const SlowCloseType = "splitbrain_slow_close"

// slowClose holds each connection's close (EOF) in its stream for Delay ms; data before it
// passes unchanged.
type slowClose struct {
	Delay int64 `json:"delay"`
}

// slowCloseState is per connection and stream: whether a close is being held, and until
// when. Pipe is also interrupted and re-run when another toxic joins the chain, so a held
// close must survive a restart of Pipe.
type slowCloseState struct {
	pending bool
	until   time.Time
}

func (t *slowClose) NewState() any { return new(slowCloseState) }

func (t *slowClose) Pipe(stub *toxics.ToxicStub) {
	st, ok := stub.State.(*slowCloseState)
	if !ok {
		st = new(slowCloseState)
	}
	for !st.pending {
		select {
		case <-stub.Interrupt:
			return
		case c := <-stub.Input:
			if c != nil {
				stub.Output <- c
				continue
			}
			st.pending, st.until = true, time.Now().Add(time.Duration(t.Delay)*time.Millisecond)
		}
	}
	select {
	case <-time.After(time.Until(st.until)):
		stub.Close()
	case <-stub.Interrupt:
	}
}

// Cleanup runs when the toxic is removed, after Pipe returned: a held close goes on now.
func (t *slowClose) Cleanup(stub *toxics.ToxicStub) {
	if st, ok := stub.State.(*slowCloseState); ok && st.pending {
		stub.Close()
	}
}

func init() { toxics.Register(SlowCloseType, new(slowClose)) }
