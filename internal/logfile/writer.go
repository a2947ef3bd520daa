package logfile

import (
	"bytes"
	"io"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// flushInterval bounds how long an info or debug line waits in memory.
const flushInterval = 100 * time.Millisecond

// Writer batches the background gateway's audit lines (one per forwarded
// call) into few writes: a write system call per line was 5% of the gateway's
// CPU per call. Everything else in the log is written at once, so
// servers' stderr and startup lines are on disk when someone looks. A line
// at warn or above (a failed call) is written at once, after everything
// buffered before it; others wait at most flushInterval. Close writes the
// rest.
type Writer struct {
	mu   sync.Mutex
	w    io.Writer
	buf  bytes.Buffer
	stop chan struct{}
	done chan struct{}
}

// maxBuffer makes a busy gateway write before the interval is up.
const maxBuffer = 64 << 10

// NewWriter returns a Writer batching into w, and starts its flushing
// goroutine; Close stops it.
func NewWriter(w io.Writer) *Writer {
	l := &Writer{w: w, stop: make(chan struct{}), done: make(chan struct{})}
	go l.loop()
	return l
}

func (l *Writer) loop() {
	defer close(l.done)
	t := time.NewTicker(flushInterval)
	defer t.Stop()
	for {
		select {
		case <-t.C:
			l.mu.Lock()
			l.flushLocked()
			l.mu.Unlock()
		case <-l.stop:
			return
		}
	}
}

// Write buffers p (zerolog calls it with one whole line).
func (l *Writer) Write(p []byte) (int, error) {
	return l.WriteLevel(zerolog.InfoLevel, p)
}

// WriteLevel implements zerolog.LevelWriter.
func (l *Writer) WriteLevel(level zerolog.Level, p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	if level >= zerolog.WarnLevel || l.buf.Len() >= maxBuffer {
		l.flushLocked()
	}
	return len(p), nil
}

func (l *Writer) flushLocked() {
	if l.buf.Len() == 0 {
		return
	}
	_, _ = l.w.Write(l.buf.Bytes())
	l.buf.Reset()
	if l.buf.Cap() > 4*maxBuffer {
		l.buf = bytes.Buffer{}
	}
}

// Close writes what is buffered and stops the flushing goroutine.
func (l *Writer) Close() error {
	select {
	case <-l.stop:
	default:
		close(l.stop)
	}
	<-l.done
	l.mu.Lock()
	defer l.mu.Unlock()
	l.flushLocked()
	return nil
}
