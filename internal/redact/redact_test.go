package redact

import "testing"

func TestRedactor(t *testing.T) {
	r := New("s3cr3t-token", "abc", "s3cr3t-token-long", "hunter22")
	cases := map[string]string{
		"token=s3cr3t-token":              "token=" + Mask,
		"long s3cr3t-token-long end":      "long " + Mask + " end",
		"abc stays (too short to matter)": "abc stays (too short to matter)",
		"pw hunter22 and hunter22":        "pw " + Mask + " and " + Mask,
		"nothing here":                    "nothing here",
	}
	for in, want := range cases {
		if got := r.String(in); got != want {
			t.Errorf("String(%q) = %q, want %q", in, got, want)
		}
	}
	var nilR *Redactor
	if got := nilR.String("x hunter22"); got != "x hunter22" {
		t.Errorf("nil redactor changed input: %q", got)
	}
}

// TestRedactorMinimumLength pins the documented threshold (README, Security:
// "a secret shorter than 4 characters ... is not recognized"): a 4-character
// secret is masked, a 3-character one is left alone, also when both are given.
func TestRedactorMinimumLength(t *testing.T) {
	if minLen != 4 {
		t.Fatalf("minLen = %d; the README documents 4", minLen)
	}
	cases := []struct {
		secrets []string
		in      string
		want    string
	}{
		{[]string{"k3y!"}, "key=k3y! twice k3y!", "key=" + Mask + " twice " + Mask},
		{[]string{"k3y"}, "key=k3y", "key=k3y"},
		{[]string{"k3y", "w0rd"}, "k3y w0rd", "k3y " + Mask},
		{[]string{""}, "empty", "empty"},
	}
	for _, c := range cases {
		if got := New(c.secrets...).String(c.in); got != c.want {
			t.Errorf("New(%q).String(%q) = %q, want %q", c.secrets, c.in, got, c.want)
		}
	}
}
