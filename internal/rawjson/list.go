package rawjson

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strconv"
)

// EncodeList encodes one page of a list result: member holds items (each
// already JSON), and nextCursor follows when there is one.
func EncodeList(member string, items []json.RawMessage, next string) json.RawMessage {
	n := len(member) + len(next) + 32
	for _, it := range items {
		n += len(it) + 1
	}
	b := make([]byte, 0, n)
	b = append(b, '{')
	b = strconv.AppendQuote(b, member)
	b = append(b, ":["...)
	for i, it := range items {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, it...)
	}
	b = append(b, ']')
	if next != "" {
		b = append(b, `,"nextCursor":`...)
		nb, _ := json.Marshal(next)
		b = append(b, nb...)
	}
	return append(b, '}')
}

// ItemsOf returns the raw items of member in a list result, and its next
// cursor.
func ItemsOf(res json.RawMessage, member string) (items []json.RawMessage, next string, err error) {
	var page map[string]json.RawMessage
	if err := json.Unmarshal(res, &page); err != nil {
		return nil, "", fmt.Errorf("list result: %w", err)
	}
	if v, ok := page[member]; ok && !bytes.Equal(v, []byte("null")) {
		if err := json.Unmarshal(v, &items); err != nil {
			return nil, "", fmt.Errorf("list result: %s: %w", member, err)
		}
	}
	if v, ok := page["nextCursor"]; ok && !bytes.Equal(v, []byte("null")) {
		if err := json.Unmarshal(v, &next); err != nil {
			return nil, "", fmt.Errorf("list result: nextCursor: %w", err)
		}
	}
	return items, next, nil
}
