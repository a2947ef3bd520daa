package endpoint

import (
	"context"
	"testing"
	"time"
)

// TestOpenListensWait: shutdown waits for the listen streams still
// writing their results (openListens) and no longer: wait returns at once
// when none is open, whether none ever was or all have ended, and holds
// while one is open. The bound only ends a test that would otherwise hang.
func TestOpenListensWait(t *testing.T) {
	returnsAtOnce := func(o *openListens, what string) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
		defer cancel()
		o.wait(ctx)
		if ctx.Err() != nil {
			t.Fatalf("%s: wait held until its context ended", what)
		}
	}
	var o openListens
	returnsAtOnce(&o, "none ever open")
	end1, end2 := o.begin(), o.begin()
	end1()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	o.wait(ctx)
	if ctx.Err() == nil {
		t.Fatal("wait returned while a listen was open")
	}
	cancel()
	end2()
	returnsAtOnce(&o, "all ended")
	end3 := o.begin() // a new round after the count went back to 0
	end3()
	returnsAtOnce(&o, "all ended again")
}
