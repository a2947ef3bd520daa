package aggregate

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"strconv"
)

// listKind names one of the merged lists an agent pages through.
type listKind int

const (
	toolsList listKind = iota
	promptsList
	resourcesList
	templatesList
	numLists
)

// listKindOf names the list of a list method; ok is false for any other
// method.
func listKindOf(method string) (k listKind, ok bool) {
	switch method {
	case "tools/list":
		return toolsList, true
	case "prompts/list":
		return promptsList, true
	case "resources/list":
		return resourcesList, true
	case "resources/templates/list":
		return templatesList, true
	}
	return 0, false
}

// pageCache holds one list's encoded pages by cursor, for one version of
// the list: a change of the list (rebuildLocked) drops them and bumps the
// version, so that a page encoded from the old list is not stored after.
type pageCache struct {
	version uint64
	pages   map[string]json.RawMessage
}

// dropPagesLocked forgets the encoded pages of the given lists; the caller
// holds g.mu for writing.
func (g *Gateway) dropPagesLocked(kinds ...listKind) {
	for _, k := range kinds {
		g.pages[k] = pageCache{version: g.pages[k].version + 1}
	}
}

// ToolsPage returns the result of tools/list for cursor, encoded as JSON.
// Pages are encoded once per version of the merged list and kept until it
// changes: with thousands of tools, encoding the list through the SDK (by
// reflection, then compacted twice) costs tens of milliseconds per request,
// and agents list tools often. An invalid cursor is a JSON-RPC error.
func (g *Gateway) ToolsPage(cursor string) (json.RawMessage, error) {
	page, _, _, err := g.cachedPage(toolsList, cursor)
	return page, err
}

// ListPage answers a list request outside the SDK: the result of method
// (tools/list, prompts/list, resources/list or resources/templates/list)
// for cursor, from pages encoded once per version of the merged list, as
// ToolsPage. The bytes are those the SDK path sends for the same list and
// cursor (items as the servers listed them, compacted as the SDK's encoder
// compacts them). ok is false when the answer is the SDK path's to give:
// another method, or prompts and resources not named yet, which the SDK
// path waits for (waitExtras). An invalid cursor is a JSON-RPC error.
// items is the number of items on the page, for the list-size metric
// (counting them in the bytes would cost what the cache saves).
func (g *Gateway) ListPage(method, cursor string) (page json.RawMessage, items int, ok bool, err error) {
	k, ok := listKindOf(method)
	if !ok {
		return nil, 0, false, nil
	}
	return g.cachedPage(k, cursor)
}

// cachedPage returns list k's page for cursor, encoding and keeping it if
// it is not kept yet (see keepsPage).
func (g *Gateway) cachedPage(k listKind, cursor string) (page json.RawMessage, items int, ok bool, err error) {
	g.mu.RLock()
	if k != toolsList && !g.extrasOpen {
		g.mu.RUnlock()
		return nil, 0, false, nil
	}
	c := g.pages[k]
	page, ok = c.pages[cursor]
	encode, n := g.encoderLocked(k, cursor) // n: the length of the list the kept pages are of
	g.mu.RUnlock()
	items = pageItems(n, cursor, g.pageSize)
	if ok {
		return page, items, true, nil
	}
	b, err := encode()
	if err != nil {
		return nil, 0, true, err
	}
	var out bytes.Buffer
	if json.Compact(&out, b) == nil {
		b = out.Bytes()
	}
	if !keepsPage(cursor, n, g.pageSize) {
		return b, items, true, nil
	}
	g.mu.Lock()
	if g.pages[k].version == c.version { // not changed meanwhile
		if g.pages[k].pages == nil {
			g.pages[k].pages = make(map[string]json.RawMessage)
		}
		g.pages[k].pages[cursor] = b
	}
	g.mu.Unlock()
	return b, items, true, nil
}

// pageItems is the number of items on the page at cursor of a list of n
// items, as pageOf cuts it (0 for a cursor it refuses).
func pageItems(n int, cursor string, size int) int {
	start := 0
	if cursor != "" {
		b, err := base64.RawURLEncoding.DecodeString(cursor)
		if err != nil {
			return 0
		}
		if start, err = strconv.Atoi(string(b)); err != nil || start < 0 {
			return 0
		}
	}
	if start >= n {
		return 0
	}
	return min(start+size, n) - start
}

// encoderLocked returns the encoding of list k's page for cursor over the
// list as it is now, and the list's length; the caller holds g.mu.
func (g *Gateway) encoderLocked(k listKind, cursor string) (func() (json.RawMessage, error), int) {
	size := g.pageSize
	switch k {
	case promptsList:
		list, enc := g.prompts.list, g.prompts.enc
		return func() (json.RawMessage, error) { return encodePage(list, enc, "prompts", cursor, size) }, len(list)
	case resourcesList:
		list, enc := g.res.list, g.res.enc
		return func() (json.RawMessage, error) { return encodePage(list, enc, "resources", cursor, size) }, len(list)
	case templatesList:
		list, enc := g.res.tpls, g.res.tplEnc
		return func() (json.RawMessage, error) { return encodePage(list, enc, "resourceTemplates", cursor, size) }, len(list)
	default:
		list, enc := g.tools.list, g.tools.enc
		return func() (json.RawMessage, error) { return encodePage(list, enc, "tools", cursor, size) }, len(list)
	}
}

// keepsPage reports whether the page at cursor, of a list of n items, is
// kept: only the first page and those the gateway's nextCursor points to,
// so that agents sending other cursors (any offset, spelled in many ways)
// cannot grow the cache without bound.
func keepsPage(cursor string, n, size int) bool {
	if cursor == "" {
		return true
	}
	b, err := base64.RawURLEncoding.DecodeString(cursor)
	if err != nil {
		return false
	}
	off, err := strconv.Atoi(string(b))
	return err == nil && off > 0 && off < n && off%size == 0 &&
		cursor == base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(off)))
}
