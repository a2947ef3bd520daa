package aggregate

import (
	"testing"
	"time"
)

// TestKeyedLocks: a key's holder excludes that key only, and a lock nobody
// holds or waits for is dropped, so a server's many URIs leave nothing.
func TestKeyedLocks(t *testing.T) {
	var k keyedLocks
	unlockA := k.lock("a")
	unlockB := k.lock("b") // another key: not held up by a
	got := make(chan struct{})
	go func() {
		unlock := k.lock("a")
		close(got)
		unlock()
	}()
	select {
	case <-got:
		t.Fatal("a second holder of a while a is held")
	case <-time.After(50 * time.Millisecond):
	}
	unlockA()
	<-got
	unlockB()
	k.mu.Lock()
	defer k.mu.Unlock()
	if len(k.of) != 0 {
		t.Errorf("locks left after every unlock: %v", k.of)
	}
}
