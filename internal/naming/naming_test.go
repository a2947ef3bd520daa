package naming

import (
	"regexp"
	"strings"
	"testing"
)

var validName = regexp.MustCompile(`^[a-zA-Z0-9_-]{1,64}$`)

func TestSanitize(t *testing.T) {
	cases := map[string]string{
		"echo":          "echo",
		"get-time_2":    "get-time_2",
		"github/acme/x": "github_acme_x",
		"read.file":     "read_file",
		"":              "_",
		"ünïcode tool":  "__n__code_tool",
	}
	for in, want := range cases {
		if got := Sanitize(in); got != want {
			t.Errorf("Sanitize(%q) = %q, want %q", in, got, want)
		}
	}
	long := strings.Repeat("a", 100)
	a, b := Sanitize(long), Sanitize(long+"b")
	if !validName.MatchString(a) || !validName.MatchString(b) {
		t.Fatalf("long names not valid: %q %q", a, b)
	}
	if a == b {
		t.Error("two long names sharing a 64-char prefix sanitize to the same name")
	}
	if Sanitize(long) != a {
		t.Error("Sanitize is not deterministic")
	}
}

func FuzzSanitize(f *testing.F) {
	for _, s := range []string{"echo", "github/acme/x", "", strings.Repeat("x", 70), "a b\x00c", "\xff\xfe"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		got := Sanitize(s)
		if !validName.MatchString(got) {
			t.Fatalf("Sanitize(%q) = %q: not a valid tool name", s, got)
		}
		if validName.MatchString(s) && got != s {
			t.Fatalf("Sanitize changed the valid name %q to %q", s, got)
		}
	})
}

func TestNamerConflictsAndStability(t *testing.T) {
	n := New()
	got := n.Assign([]Key{{"a", "echo"}, {"a", "only_a"}, {"b", "echo"}, {"b", "only_b"}, {"github/acme/x", "echo"}})
	want := map[Key]string{
		{"a", "echo"}:             "echo",
		{"a", "only_a"}:           "only_a",
		{"b", "echo"}:             "b_echo",
		{"b", "only_b"}:           "only_b",
		{"github/acme/x", "echo"}: "github_acme_x_echo",
	}
	for k, w := range want {
		if got[k] != w {
			t.Errorf("%v -> %q, want %q", k, got[k], w)
		}
	}
	// a restarts without "echo": b keeps b_echo, nobody takes the plain name
	// from under an agent that already saw it.
	got = n.Assign([]Key{{"a", "only_a"}, {"b", "echo"}, {"b", "only_b"}})
	if got[Key{"b", "echo"}] != "b_echo" {
		t.Errorf("after a lost echo, b's echo became %q; names must be stable", got[Key{"b", "echo"}])
	}
	// a comes back with echo: it gets its old name back.
	got = n.Assign([]Key{{"a", "echo"}, {"a", "only_a"}, {"b", "echo"}, {"b", "only_b"}})
	if got[Key{"a", "echo"}] != "echo" || got[Key{"b", "echo"}] != "b_echo" {
		t.Errorf("after a regained echo: %v", got)
	}
}

func TestNamerSanitizedCollision(t *testing.T) {
	n := New()
	// "x.y" and "x_y" sanitize alike within one server; "s_x.y" also collides.
	got := n.Assign([]Key{{"s", "x_y"}, {"s", "x.y"}, {"t", "s_x_y"}})
	seen := map[string]bool{}
	for k, name := range got {
		if !validName.MatchString(name) {
			t.Errorf("%v -> invalid %q", k, name)
		}
		if seen[name] {
			t.Errorf("name %q assigned twice: %v", name, got)
		}
		seen[name] = true
	}
	if got[Key{"s", "x_y"}] != "x_y" {
		t.Errorf("first tool lost its plain name: %v", got)
	}
}

// TestSanitizeAtMaxLen: a name of exactly MaxLen characters is valid as it
// is; one more and it is shortened with a hash.
func TestSanitizeAtMaxLen(t *testing.T) {
	at := strings.Repeat("a", MaxLen)
	if got := Sanitize(at); got != at {
		t.Errorf("Sanitize(%d characters) = %q, want it unchanged", MaxLen, got)
	}
	if got := Sanitize(at + "a"); len(got) != MaxLen || got == at {
		t.Errorf("Sanitize(%d characters) = %q, want %d characters ending in a hash", MaxLen+1, got, MaxLen)
	}
}
