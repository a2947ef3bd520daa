package aggregate

import (
	"encoding/json"
	"maps"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// progressMap maps the progress tokens the gateway sends upstream back to
// the caller's own token. Each forwarded request gets a token of its own:
// two agent sessions may both use token 1, and their progress must not mix.
type progressMap struct {
	mu sync.Mutex
	n  uint64
	m  map[string]progressRoute
}

type progressRoute struct {
	call  *call
	token any             // the caller's token
	raw   json.RawMessage // and as the caller wrote it, for a raw call
}

func newProgressMap() *progressMap { return &progressMap{m: make(map[string]progressRoute)} }

const progressKey = "progressToken"

// forward returns the meta to send upstream: meta without the 2026 envelope
// (era.go) and with the caller's progress
// token replaced by a fresh one, or meta itself when the caller asked for no
// progress.
func (p *progressMap) forward(meta mcp.Meta, c *call) mcp.Meta {
	meta = withoutEnvelopeMeta(meta) // era.go: the upstreams speak the 2025 era
	tok, ok := meta[progressKey]
	if !ok || tok == nil {
		return meta
	}
	p.mu.Lock()
	p.n++
	mine := "mcp-gateway-" + strconv.FormatUint(p.n, 10)
	p.m[mine] = progressRoute{call: c, token: tok}
	p.mu.Unlock()
	out := maps.Clone(meta)
	out[progressKey] = mine
	return out
}

// forwardRaw registers a call's progress token, as the caller wrote it, and
// returns the token to send upstream instead.
func (p *progressMap) forwardRaw(token json.RawMessage, c *call) string {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.n++
	mine := "mcp-gateway-" + strconv.FormatUint(p.n, 10)
	p.m[mine] = progressRoute{call: c, raw: token}
	return mine
}

// releaseToken forgets a token minted by forwardRaw.
func (p *progressMap) releaseToken(mine string) {
	p.mu.Lock()
	delete(p.m, mine)
	p.mu.Unlock()
}

// release forgets the token minted by forward, once the call is over.
func (p *progressMap) release(meta mcp.Meta) {
	if mine, ok := meta[progressKey].(string); ok {
		p.mu.Lock()
		delete(p.m, mine)
		p.mu.Unlock()
	}
}

func (p *progressMap) lookup(token any) (progressRoute, bool) {
	s, ok := token.(string)
	if !ok {
		return progressRoute{}, false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.m[s]
	return r, ok
}
