package endpoint

import (
	"errors"
	"net"
	"sync"
	"time"
)

// handBack gives c to net/http, which reads prefix first. headerBy, when
// set, is the deadline the lane started for the head of the request being
// handed back: net/http keeps it rather than start its own afresh, so a
// request's head gets --read-header-timeout from its first byte whichever
// reader saw that byte.
func (l *lane) handBack(c net.Conn, prefix []byte, headerBy time.Time) {
	if pc, ok := c.(*prefixConn); ok { // never wrap twice
		prefix = append(prefix, pc.pending...)
		c = pc.Conn
	}
	l.handedBack.Add(1)
	select {
	case l.back <- &prefixConn{Conn: c, pending: prefix, headerBy: headerBy}:
	case <-l.stopped:
		_ = c.Close()
	}
}

// listener returns ln with the handed-back connections among its accepted
// ones: net/http serves them from their first unanswered request on.
func (l *lane) listener(ln net.Listener) net.Listener {
	ll := &laneListener{Listener: ln, back: l.back, accepted: make(chan accepted), done: make(chan struct{})}
	go ll.pump()
	return ll
}

type laneListener struct {
	net.Listener
	back      <-chan net.Conn
	accepted  chan accepted
	done      chan struct{}
	closeOnce sync.Once
}

type accepted struct {
	c   net.Conn
	err error
}

// pump moves the real listener's connections to Accept, so that Accept can
// also wait for handed-back ones.
func (ll *laneListener) pump() {
	for {
		c, err := ll.Listener.Accept()
		select {
		case ll.accepted <- accepted{c, err}:
		case <-ll.done:
			if c != nil {
				_ = c.Close()
			}
			return
		}
		if errors.Is(err, net.ErrClosed) {
			return
		}
	}
}

func (ll *laneListener) Accept() (net.Conn, error) {
	select {
	case c := <-ll.back:
		return c, nil
	case a := <-ll.accepted:
		return a.c, a.err
	case <-ll.done:
		return nil, net.ErrClosed
	}
}

func (ll *laneListener) Close() error {
	ll.closeOnce.Do(func() { close(ll.done) })
	return ll.Listener.Close()
}

// prefixConn is a connection whose first bytes were read already: Read
// returns pending first.
type prefixConn struct {
	net.Conn
	pending []byte
	// headerBy, when set, caps the read deadlines net/http sets until it
	// has read the head of the first request (its first clearing of the
	// deadline, net/http's sign that a head is in: see conn.readRequest).
	headerBy time.Time
}

func (c *prefixConn) SetReadDeadline(t time.Time) error {
	if !c.headerBy.IsZero() {
		if t.IsZero() {
			c.headerBy = time.Time{}
		} else if t.After(c.headerBy) {
			t = c.headerBy
		}
	}
	return c.Conn.SetReadDeadline(t)
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if len(c.pending) > 0 {
		n := copy(p, c.pending)
		c.pending = c.pending[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// CloseWrite keeps net/http's graceful close of a TCP connection.
func (c *prefixConn) CloseWrite() error {
	if cw, ok := c.Conn.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return nil
}

// handBack returns the connection to net/http; the reader has ended, so
// what it buffered is the connection's to read next.
func (lc *laneConn) handBack(raw []byte, headerBy time.Time) {
	if n := lc.br.Buffered(); n > 0 {
		b, _ := lc.br.Peek(n)
		raw = append(raw, b...)
	}
	lc.cancel()
	lc.l.log.Debug().Str("remote", lc.remote).Msg("connection handed back to net/http")
	lc.l.handBack(lc.c, raw, headerBy)
}
