package main

import (
	"bytes"
	"io"
	"sync"
	"time"

	"github.com/rs/zerolog"
)

// logFlushInterval bounds how long an info or debug line waits in memory.
const logFlushInterval = 100 * time.Millisecond

// logWriter batches the background gateway's audit lines (one per forwarded
// call) into few writes: a write system call per line was 5% of the gateway's
// CPU per call (issue 6). Everything else in the log is written at once, so
// servers' stderr and startup lines are on disk when someone looks. A line
// at warn or above (a failed call) is written at once, after everything
// buffered before it; others wait at most logFlushInterval. Close writes the
// rest.
type logWriter struct {
	mu   sync.Mutex
	w    io.Writer
	buf  bytes.Buffer
	stop chan struct{}
	done chan struct{}
}

// maxLogBuffer makes a busy gateway write before the interval is up.
const maxLogBuffer = 64 << 10

func newLogWriter(w io.Writer) *logWriter {
	l := &logWriter{w: w, stop: make(chan struct{}), done: make(chan struct{})}
	go l.loop()
	return l
}

func (l *logWriter) loop() {
	defer close(l.done)
	t := time.NewTicker(logFlushInterval)
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
func (l *logWriter) Write(p []byte) (int, error) {
	return l.WriteLevel(zerolog.InfoLevel, p)
}

// WriteLevel implements zerolog.LevelWriter.
func (l *logWriter) WriteLevel(level zerolog.Level, p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf.Write(p)
	if level >= zerolog.WarnLevel || l.buf.Len() >= maxLogBuffer {
		l.flushLocked()
	}
	return len(p), nil
}

func (l *logWriter) flushLocked() {
	if l.buf.Len() == 0 {
		return
	}
	_, _ = l.w.Write(l.buf.Bytes())
	l.buf.Reset()
	if l.buf.Cap() > 4*maxLogBuffer {
		l.buf = bytes.Buffer{}
	}
}

// Close writes what is buffered and stops the flushing goroutine.
func (l *logWriter) Close() error {
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
