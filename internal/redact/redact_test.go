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
