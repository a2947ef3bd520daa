package aggregate

import (
	"encoding/base64"
	"testing"
)

// TestPageItemsAsPageOfCuts: the list-size metric's count of a page is the
// length of the page pageOf cuts, for every offset, list length and page
// size around the bounds, and 0 for cursors pageOf refuses.
func TestPageItemsAsPageOfCuts(t *testing.T) {
	cursor := func(s string) string { return base64.RawURLEncoding.EncodeToString([]byte(s)) }
	for n := 0; n <= 5; n++ {
		list := make([]int, n)
		for size := 1; size <= 4; size++ {
			for _, c := range []string{"", cursor("0"), cursor("1"), cursor("2"), cursor("3"), cursor("4"), cursor("5"), cursor("9")} {
				page, _, err := pageOf(list, c, size)
				if err != nil {
					t.Fatalf("pageOf(%d items, %q, %d): %v", n, c, size, err)
				}
				if got := pageItems(n, c, size); got != len(page) {
					t.Errorf("pageItems(%d, %q, %d) = %d, pageOf cuts %d", n, c, size, got, len(page))
				}
			}
		}
	}
	for _, bad := range []string{"!!", cursor("x"), cursor("-1")} {
		if got := pageItems(5, bad, 2); got != 0 {
			t.Errorf("pageItems of the refused cursor %q = %d, want 0", bad, got)
		}
	}
}
