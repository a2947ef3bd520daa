package aggregate

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/mcp-gateway/mcp-gateway/internal/rawjson"
)

// listRaw lists every item of an upstream's paginated list with raw
// requests: each item is decoded into T for routing and kept, by its key,
// as the bytes the server sent, which is what agents are served. A
// JSON-RPC error from the server is returned as it is.
func listRaw[T any](ctx context.Context, raw RoundTrip, method, member string, keyOf func(T) string) ([]T, map[string]json.RawMessage, error) {
	var items []T
	byKey := make(map[string]json.RawMessage)
	seen := make(map[string]bool) // a server whose cursors loop would never end
	params := json.RawMessage(`{}`)
	for {
		res, err := raw(ctx, method, params)
		if err != nil {
			return nil, nil, err
		}
		page, next, err := rawjson.ItemsOf(res, member)
		if err != nil {
			return nil, nil, fmt.Errorf("%s: %w", method, err)
		}
		for _, b := range page {
			if string(b) == "null" { // the SDK client drops it too
				continue
			}
			var it T
			if err := json.Unmarshal(b, &it); err != nil {
				return nil, nil, fmt.Errorf("%s: %w", method, err)
			}
			items = append(items, it)
			byKey[keyOf(it)] = b
		}
		if next == "" {
			return items, byKey, nil
		}
		if seen[next] {
			return nil, nil, fmt.Errorf("%s: the server repeats cursor %q", method, next)
		}
		seen[next] = true
		if params, err = json.Marshal(map[string]string{"cursor": next}); err != nil {
			return nil, nil, err
		}
	}
}
