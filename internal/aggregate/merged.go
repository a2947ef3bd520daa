package aggregate

import (
	"encoding/base64"
	"fmt"
	"iter"
	"reflect"
	"slices"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// named merges one kind of named item (tools, prompts) across servers. Items
// keep the contract's naming rule through a sticky namer; the merged list is
// kept ready to serve, in server order. Callers hold the Gateway's lock.
type named[T any] struct {
	names     *namer
	perServer map[string][]T
	routes    map[string]route // exported name -> owner and original name
	list      []T

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
		names:     newNamer(),
		perServer: make(map[string][]T),
		routes:    make(map[string]route),
		nameOf:    nameOf,
		rename:    rename,
	}
}

// rebuild recomputes names, routes and the list for the given servers (in
// order), and reports whether the exported list changed.
func (m *named[T]) rebuild(servers []string, ups map[string]Upstream) bool {
	var present []key
	for _, s := range servers {
		for _, it := range m.perServer[s] {
			present = append(present, key{s, m.nameOf(it)})
		}
	}
	names := m.names.assign(present)
	routes := make(map[string]route, len(present))
	list := make([]T, 0, len(present))
	for _, s := range servers {
		for _, it := range m.perServer[s] {
			orig := m.nameOf(it)
			name := names[key{s, orig}]
			routes[name] = route{up: ups[s], name: orig}
			if name != orig {
				it = m.rename(it, name)
			}
			list = append(list, it)
		}
	}
	// Compared as values, not as JSON: encoding 6,400 tools to compare
	// them was a fifth of the gateway's CPU from launch to ready (issue 6).
	// The two can differ only where JSON cannot tell (nil or empty), and
	// then an agent gets one list_changed too many, never one too few.
	changed := !reflect.DeepEqual(list, m.list)
	m.routes, m.list = routes, list
	return changed
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

// servePage answers one page of a merged list: the list is read under mu,
// and the page is cut from that snapshot.
func servePage[T any](mu *sync.RWMutex, list *[]T, cursor string, size int) ([]T, string, error) {
	mu.RLock()
	l := *list
	mu.RUnlock()
	return pageOf(l, cursor, size)
}
