package supervisor

import (
	"math/rand/v2"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// RestartPolicy says how a lost upstream (a stdio child that exited, a remote
// whose session is gone) is started again. Server and Remote share it, so
// both kinds fail and recover alike. The zero value works.
type RestartPolicy struct {
	// Backoff between attempts: it starts at MinBackoff (zero: 100ms) and
	// doubles per fast failure up to MaxBackoff (zero: 30s). A call that
	// arrives meanwhile ends the wait (except when failed). An instance
	// that answered a call is not a fast failure, however soon it ended.
	MinBackoff, MaxBackoff time.Duration
	// FailAfter fast failures in a row mark the server failed. Zero means 5.
	FailAfter int
	// StableAfter is how long an upstream must stay up for its failures to
	// be forgotten. Zero means 10s.
	StableAfter time.Duration
}

func (p *RestartPolicy) defaults() {
	if p.MinBackoff == 0 {
		p.MinBackoff = 100 * time.Millisecond
	}
	if p.MaxBackoff == 0 {
		p.MaxBackoff = 30 * time.Second
	}
	if p.FailAfter == 0 {
		p.FailAfter = 5
	}
	if p.StableAfter == 0 {
		p.StableAfter = 10 * time.Second
	}
}

// delay returns the wait before the next attempt: exponential in the number
// of fast failures, with jitter so that upstreams failing for a shared reason
// do not retry in lockstep.
func (p *RestartPolicy) delay(failures int) time.Duration {
	d := p.MinBackoff << min(failures-1, 20)
	if d > p.MaxBackoff || d <= 0 {
		d = p.MaxBackoff
	}
	return d/2 + rand.N(d/2+1)
}

// clientDefaults fills the connection settings both kinds of upstream share.
func clientDefaults(connectTimeout *time.Duration, newClient *func(string) *mcp.Client, redact *func(string) string) {
	if *connectTimeout == 0 {
		*connectTimeout = 30 * time.Second
	}
	if *newClient == nil {
		*newClient = func(string) *mcp.Client {
			return mcp.NewClient(&mcp.Implementation{Name: "mcp-gateway", Version: "1"}, nil)
		}
	}
	if *redact == nil {
		*redact = func(s string) string { return s }
	}
}
