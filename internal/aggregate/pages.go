package aggregate

import (
	"encoding/json"
)

// ToolsPage returns the result of tools/list for cursor, encoded as JSON.
// Pages are encoded once per version of the merged list and kept until it
// changes: with thousands of tools, encoding the list through the SDK (by
// reflection, then compacted twice) costs tens of milliseconds per request,
// and agents list tools often. An invalid cursor is a JSON-RPC error.
func (g *Gateway) ToolsPage(cursor string) (json.RawMessage, error) {
	g.mu.RLock()
	page, ok := g.toolPages[cursor]
	list, enc := g.tools.list, g.tools.enc
	version := g.toolsVersion
	g.mu.RUnlock()
	if ok {
		return page, nil
	}
	b, err := encodePage(list, enc, "tools", cursor, g.pageSize)
	if err != nil {
		return nil, err
	}
	g.mu.Lock()
	if g.toolsVersion == version { // not rebuilt meanwhile
		if g.toolPages == nil {
			g.toolPages = make(map[string]json.RawMessage)
		}
		g.toolPages[cursor] = b
	}
	g.mu.Unlock()
	return b, nil
}
