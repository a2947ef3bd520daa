package gateway

import (
	"fmt"
	"time"
)

// Summary is what "ready" reports.
type Summary struct {
	Listen  string        `json:"listen"` // "" without an HTTP endpoint
	Servers int           `json:"servers"`
	Tools   int           `json:"tools"`
	Elapsed time.Duration `json:"elapsed"`
}

func (s Summary) String() string {
	return fmt.Sprintf("mcp-gateway ready on %s (%s, %s) in %s", s.Listen,
		plural(s.Servers, "server"), plural(s.Tools, "tool"), s.Elapsed.Round(time.Millisecond))
}

func plural(n int, what string) string {
	if n == 1 {
		return fmt.Sprintf("1 %s", what)
	}
	return fmt.Sprintf("%d %ss", n, what)
}

// Progress is one server's step while the gateway starts, for a
// person watching a slow start (npx downloading, dozens of servers).
type Progress struct {
	Server  string        `json:"server"`
	Ready   bool          `json:"ready,omitempty"`
	Failed  bool          `json:"failed,omitempty"`
	Elapsed time.Duration `json:"elapsed,omitempty"`
	Tools   int           `json:"tools,omitempty"`
}

func (e Progress) String() string {
	switch {
	case e.Failed:
		return fmt.Sprintf("%s: failed after %s", e.Server, elapsed(e.Elapsed))
	case e.Ready:
		return fmt.Sprintf("%s: ready in %s (%s)", e.Server, elapsed(e.Elapsed), plural(e.Tools, "tool"))
	default:
		return e.Server + ": starting"
	}
}

// elapsed shows milliseconds under a second ("300ms") and a tenth of a
// second above, always with its decimal ("2.1s", "2.0s"): time.Duration's
// own String would print a round 2s as "2s", and a column of times reads
// better when they all look alike.
func elapsed(d time.Duration) string {
	if d < time.Second {
		return fmt.Sprintf("%dms", d.Round(time.Millisecond).Milliseconds())
	}
	return fmt.Sprintf("%.1fs", d.Round(100*time.Millisecond).Seconds())
}
