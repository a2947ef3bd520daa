package endpoint

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"time"
)

// pipeListener is a net.Listener whose connections are made in memory by
// dial, for the fuzz targets: on this shared machine the system calls of a
// loopback TCP connection (connect, accept, socket options, reads and
// writes, close) cost a fuzz input more than the gateway's work on it.
// Each connection is two net.Pipes, one per direction, so that either side
// can end its sending half (CloseWrite) as over TCP, and the peer reads
// EOF; deadlines work as on a socket. Unlike a socket a pipe holds no
// bytes: a write waits for the peer to read them, so a client that writes
// a whole input before it reads the answer does so from a goroutine of its
// own (sendAll). Both ends report 127.0.0.1 addresses, so the gateway
// treats them as the loopback connections they stand for (the
// DNS-rebinding check of Host applies).
type pipeListener struct {
	addr  *net.TCPAddr // the server's end; nothing listens there
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
	port  atomic.Int32 // gives each client end a port of its own, for logs
}

func newPipeListener() *pipeListener {
	return &pipeListener{
		addr:  &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 1},
		conns: make(chan net.Conn),
		done:  make(chan struct{}),
	}
}

// dial makes a connection and hands its server end to Accept.
func (l *pipeListener) dial() (net.Conn, error) {
	client, server := l.pair()
	select {
	case l.conns <- server:
		return client, nil
	case <-l.done:
		client.Close()
		server.Close()
		return nil, net.ErrClosed
	}
}

// dialContext is dial for an http.Transport: every address is this
// listener's.
func (l *pipeListener) dialContext(context.Context, string, string) (net.Conn, error) {
	return l.dial()
}

// pair makes a connection without handing it to Accept: the client's end
// and the server's.
func (l *pipeListener) pair() (client, server *pipeConn) {
	up, upPeer := net.Pipe()     // client to server
	down, downPeer := net.Pipe() // server to client
	remote := &net.TCPAddr{IP: l.addr.IP, Port: 1024 + int(l.port.Add(1))%60000}
	client = &pipeConn{r: downPeer, w: up, local: remote, remote: l.addr}
	server = &pipeConn{r: upPeer, w: down, local: l.addr, remote: remote}
	return client, server
}

func (l *pipeListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

func (l *pipeListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

func (l *pipeListener) Addr() net.Addr { return l.addr }

// pipeConn is one end of a pipeListener connection: it reads r and writes
// w, the ends of two pipes.
type pipeConn struct {
	r, w          net.Conn
	local, remote net.Addr
	closed        atomic.Bool
}

func (c *pipeConn) Read(p []byte) (int, error)  { return c.r.Read(p) }
func (c *pipeConn) Write(p []byte) (int, error) { return c.w.Write(p) }

// CloseWrite ends the sending half: the peer reads EOF, and can still
// answer (net/http's graceful close uses it as on a TCP connection).
func (c *pipeConn) CloseWrite() error { return c.w.Close() }

func (c *pipeConn) Close() error {
	c.closed.Store(true)
	c.w.Close()
	return c.r.Close()
}

func (c *pipeConn) LocalAddr() net.Addr  { return c.local }
func (c *pipeConn) RemoteAddr() net.Addr { return c.remote }

func (c *pipeConn) SetDeadline(t time.Time) error {
	if err := c.SetReadDeadline(t); err != nil {
		return err
	}
	return c.SetWriteDeadline(t)
}

// SetReadDeadline and SetWriteDeadline fail only once this end is closed,
// as a socket's do: a pipe refuses a deadline once its peer has closed
// too, which here is only the other side ending its sending half (reads
// then return EOF) or the connection (writes then fail).
func (c *pipeConn) SetReadDeadline(t time.Time) error {
	if c.closed.Load() {
		return net.ErrClosed
	}
	_ = c.r.SetReadDeadline(t)
	return nil
}

func (c *pipeConn) SetWriteDeadline(t time.Time) error {
	if c.closed.Load() {
		return net.ErrClosed
	}
	_ = c.w.SetWriteDeadline(t)
	return nil
}

// sendAll writes b to c and ends c's sending half, from a goroutine, so
// that the caller can read the answer meanwhile (a pipe holds nothing: a
// server that answers before it has read all of b would otherwise wait
// for a reader that waits for it). The returned channel yields the
// write's error once the goroutine is done.
func sendAll(c *pipeConn, b []byte) <-chan error {
	done := make(chan error, 1)
	go func() {
		var err error
		if len(b) > 0 { // a pipe passes an empty write on as a read of nothing
			_, err = c.Write(b)
		}
		c.CloseWrite()
		done <- err
	}()
	return done
}
