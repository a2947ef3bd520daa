package catalog

import (
	"regexp"
	"strings"
	"testing"
)

// nameRules pairs each hand-written rule with the regular expression it
// replaces (the specification it must keep).
var nameRules = []struct {
	name string
	re   *regexp.Regexp
	fn   func(string) bool
}{
	{"entry name", regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$`), validEntryName},
	{"env name", regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`), validEnvName},
	{"flag", regexp.MustCompile(`^--?[A-Za-z0-9][A-Za-z0-9._-]*$`), validFlag},
	{"github owner", regexp.MustCompile(`^[A-Za-z0-9](?:[A-Za-z0-9-]{0,38})$`), validGitHubOwner},
	{"github repo", regexp.MustCompile(`^[A-Za-z0-9._-]{1,100}$`), validGitHubRepo},
}

// TestNameRulesMatchTheirRegexps compares every rule with its regular
// expression on every string of up to two bytes, on every string of up to four
// bytes over an alphabet with one byte of each class that matters (and a
// multi-byte rune, a newline, a NUL), and on strings around each length bound.
func TestNameRulesMatchTheirRegexps(t *testing.T) {
	alphabet := []string{"a", "Z", "7", ".", "_", "-", "/", " ", "\n", "\x00", "é", "\xff"}
	var inputs []string
	var grow func(prefix string, n int)
	grow = func(prefix string, n int) {
		inputs = append(inputs, prefix)
		if n == 0 {
			return
		}
		for _, a := range alphabet {
			grow(prefix+a, n-1)
		}
	}
	grow("", 4)
	for a := range 256 {
		for b := range 257 { // 256: the one-byte string
			s := string([]byte{byte(a)})
			if b < 256 {
				s += string([]byte{byte(b)})
			}
			inputs = append(inputs, s, "-"+s, "--"+s)
		}
	}
	for _, n := range []int{37, 38, 39, 40, 62, 63, 64, 65, 99, 100, 101} {
		for _, head := range []string{"a", "-", "--a", "_", "."} {
			for _, fill := range []string{"b", "-", ".", "_", "9"} {
				s := head + strings.Repeat(fill, max(n-len(head), 0))
				inputs = append(inputs, s, s+"\n", s+"é")
			}
		}
	}
	for _, r := range nameRules {
		matched := 0
		for _, s := range inputs {
			want := r.re.MatchString(s)
			if got := r.fn(s); got != want {
				t.Errorf("%s %q: hand-written rule says %v, regexp says %v", r.name, s, got, want)
			}
			if want {
				matched++
			}
		}
		// Both outcomes must be exercised, or the comparison proves little.
		if matched == 0 || matched == len(inputs) {
			t.Errorf("%s: %d of %d inputs match: the inputs do not exercise the rule", r.name, matched, len(inputs))
		}
	}
}

// FuzzNameRules extends the comparison to whatever the fuzzer finds.
func FuzzNameRules(f *testing.F) {
	for _, s := range []string{"", "a", "--a.b", "-", "a-b", strings.Repeat("x", 64), "A_1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		for _, r := range nameRules {
			if got, want := r.fn(s), r.re.MatchString(s); got != want {
				t.Errorf("%s %q: hand-written rule says %v, regexp says %v", r.name, s, got, want)
			}
		}
	})
}

// TestSuggestEdges: a name of six bytes may be two edits from the name it
// means (shorter ones only one); names of up to 64 bytes are compared,
// longer ones are not.
func TestSuggestEdges(t *testing.T) {
	known := []string{"github", "filesystem"}
	if got := suggest("gitxxb", known); got != "github" {
		t.Errorf("suggest(gitxxb) = %q, want github (6 bytes, two edits)", got)
	}
	if got := suggest("gxxub", known); got != "" {
		t.Errorf("suggest(gxxub) = %q, want none (5 bytes, two edits)", got)
	}
	a64 := strings.Repeat("a", 64)
	b64 := strings.Repeat("a", 63) + "b"
	if d := editDistance(a64, b64); d != 1 {
		t.Errorf("editDistance of two 64-byte names one edit apart = %d, want 1", d)
	}
	if d := editDistance(a64+"a", b64); d != 65 {
		t.Errorf("editDistance with a 65-byte name = %d, want 65 (not compared)", d)
	}
	if d := editDistance(b64, a64+"a"); d != 65 {
		t.Errorf("editDistance with a 65-byte name second = %d, want 65 (not compared)", d)
	}
}
