package aggregate

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"iter"
	"reflect"
	"slices"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"

	"github.com/mcp-gateway/mcp-gateway/internal/naming"
	"github.com/mcp-gateway/mcp-gateway/internal/rawjson"
)

// named merges one kind of named item (tools, prompts) across servers. Items
// keep the contract's naming rule through a sticky naming.Namer; the merged list is
// kept ready to serve, in server order. Callers hold the Gateway's lock.
type named[T any] struct {
	names     *naming.Namer
	perServer map[string][]T
	// raw holds, per server and original name, each item as the server
	// listed it, for servers listed with raw requests; enc is list's
	// items as served (nil for an item the SDK listed, encoded from T).
	raw    map[string]map[string]json.RawMessage
	routes map[string]route // exported name -> owner and original name
	list   []T
	enc    []json.RawMessage

	nameOf func(T) string
	rename func(T, string) T // returns a renamed copy
}

// route says which upstream owns an exported item, and its name there.
type route struct {
	up   Upstream
	name string
}

func newNamed[T any](nameOf func(T) string, rename func(T, string) T) *named[T] {
	return &named[T]{
		names:     naming.New(),
		perServer: make(map[string][]T),
		raw:       make(map[string]map[string]json.RawMessage),
		routes:    make(map[string]route),
		nameOf:    nameOf,
		rename:    rename,
	}
}

// rebuild recomputes names, routes and the list for the given servers (in
// order), and reports whether the exported list changed.
func (m *named[T]) rebuild(servers []string, ups map[string]Upstream) bool {
	total := 0
	for _, s := range servers {
		total += len(m.perServer[s])
	}
	present := make([]naming.Key, 0, total)
	for _, s := range servers {
		for _, it := range m.perServer[s] {
			present = append(present, naming.Key{Server: s, Item: m.nameOf(it)})
		}
	}
	names := m.names.Assign(present)
	routes := make(map[string]route, len(present))
	list := make([]T, 0, len(present))
	enc := make([]json.RawMessage, 0, len(present))
	for _, s := range servers {
		for _, it := range m.perServer[s] {
			orig := m.nameOf(it)
			name := names[naming.Key{Server: s, Item: orig}]
			routes[name] = route{up: ups[s], name: orig}
			raw := m.raw[s][orig]
			if name != orig {
				it = m.rename(it, name)
				if raw != nil {
					var err error
					if raw, err = rawjson.SetString(raw, "name", name); err != nil {
						raw = nil // served from T, which has the new name
					}
				}
			}
			list = append(list, it)
			enc = append(enc, raw)
		}
	}
	// Compared as values, not as JSON: encoding 6,400 tools to compare
	// them was a fifth of the gateway's CPU from launch to ready.
	// The two can differ only where JSON cannot tell (nil or empty), and
	// then an agent gets one list_changed too many, never one too few.
	// What only the raw bytes hold (a tool's execution) is compared as
	// bytes.
	changed := !reflect.DeepEqual(list, m.list) || !slices.EqualFunc(enc, m.enc, func(a, b json.RawMessage) bool { return bytes.Equal(a, b) })
	m.routes, m.list, m.enc = routes, list, enc
	return changed
}

// setServer records a server's items, and their raw forms when it was
// listed with raw requests (raw is nil otherwise).
func (m *named[T]) setServer(server string, items []T, raw map[string]json.RawMessage) {
	m.perServer[server] = items
	if raw == nil {
		delete(m.raw, server)
		return
	}
	m.raw[server] = raw
}

// page encodes one page of the merged list as a list result whose member
// holds the items: raw items as the server listed them (renamed), others
// encoded from their Go values.
func (m *named[T]) page(mu *sync.RWMutex, member, cursor string, size int) (json.RawMessage, error) {
	mu.RLock()
	list, enc := m.list, m.enc
	mu.RUnlock()
	return encodePage(list, enc, member, cursor, size)
}

// encodePage cuts a page of list (enc parallel to it) and encodes it.
func encodePage[T any](list []T, enc []json.RawMessage, member, cursor string, size int) (json.RawMessage, error) {
	idx := make([]int, len(list))
	for i := range idx {
		idx[i] = i
	}
	page, next, err := pageOf(idx, cursor, size)
	if err != nil {
		return nil, err
	}
	items := make([]json.RawMessage, len(page))
	for j, i := range page {
		if i < len(enc) && enc[i] != nil {
			items[j] = enc[i]
			continue
		}
		if items[j], err = json.Marshal(list[i]); err != nil {
			return nil, err
		}
	}
	return rawjson.EncodeList(member, items, next), nil
}

// page returns one page of list starting at cursor, and the next cursor.
// Cursors are opaque offsets; an invalid one is a JSON-RPC invalid-params
// error, as the spec asks.
func pageOf[T any](list []T, cursor string, size int) ([]T, string, error) {
	start := 0
	if cursor != "" {
		b, err := base64.RawURLEncoding.DecodeString(cursor)
		n, err2 := strconv.Atoi(string(b))
		if err != nil || err2 != nil || n < 0 {
			return nil, "", &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "invalid cursor"}
		}
		start = n
	}
	if start >= len(list) {
		return []T{}, "", nil
	}
	end := min(start+size, len(list))
	next := ""
	if end < len(list) {
		next = base64.RawURLEncoding.EncodeToString([]byte(strconv.Itoa(end)))
	}
	return slices.Clip(list[start:end]), next, nil
}

// collect gathers every item of an upstream's paginated list.
func collect[T any](seq iter.Seq2[T, error], what string) ([]T, error) {
	var items []T
	for it, err := range seq {
		if err != nil {
			return nil, fmt.Errorf("list %s: %w", what, err)
		}
		items = append(items, it)
	}
	return items, nil
}
