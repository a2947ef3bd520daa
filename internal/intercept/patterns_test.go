package intercept

import (
	"strings"
	"testing"
)

// TestSecretPatternsEveryFormat: every credential format the secret guard
// claims (tokenPatterns), each variant of each (every GitHub prefix, every
// Slack token type, AWS's long-term and temporary key ids, ...), is masked
// whole, standing alone in text, and named as what it is. Each sample is
// the shortest the format allows, where the pattern sets a minimum.
func TestSecretPatternsEveryFormat(t *testing.T) {
	gh36 := strings.Repeat("A1b2", 9) // 36: the shortest classic GitHub token body
	cases := []struct{ kind, sample string }{
		{"a GitHub token", "ghp_" + gh36}, // personal access token (classic)
		{"a GitHub token", "gho_" + gh36}, // OAuth access token
		{"a GitHub token", "ghu_" + gh36}, // GitHub App user-to-server token
		{"a GitHub token", "ghs_" + gh36}, // GitHub App server-to-server (installation) token
		{"a GitHub token", "ghr_" + gh36}, // GitHub App refresh token
		{"a GitHub token", "ghp_" + strings.Repeat("z", 251)},
		{"a GitHub token", "github_pat_" + strings.Repeat("a", 22) + "_" + strings.Repeat("B", 59)}, // fine-grained
		{"a GitLab token", "glpat-" + strings.Repeat("x", 20)},
		{"a GitLab token", "glpat-" + strings.Repeat("x_-", 10)}, // ends in a '-'
		{"an AWS access key id", "AKIAIOSFODNN7EXAMPLE"},         // long-term
		{"an AWS access key id", "ASIAIOSFODNN7EXAMPLE"},         // temporary (STS)
		{"a Slack token", "xoxa-123456-abcdefghij"},
		{"a Slack token", "xoxb-123456789012-abcdefghijklmnop"},
		{"a Slack token", "xoxp-123456-abcdefghij"},
		{"a Slack token", "xoxo-123456-abcdefghij"},
		{"a Slack token", "xoxs-123456-abcdefghij"},
		{"a Slack token", "xoxr-123456-abcdefghij"},
		{"an Anthropic API key", "sk-ant-api03-" + strings.Repeat("z", 80)},
		{"an Anthropic API key", "sk-ant-admin01-" + strings.Repeat("Z_-", 30)},
		{"an OpenAI API key", "sk-proj-" + strings.Repeat("Q", 40)},
		{"an OpenAI API key", "sk-svcacct-" + strings.Repeat("Q", 40)},
		{"an OpenAI API key", "sk-admin-" + strings.Repeat("Q", 40)},
		{"an OpenAI API key", "sk-" + strings.Repeat("a", 20) + "T3BlbkFJ" + strings.Repeat("b", 20)}, // legacy
		{"a Google API key", "AIza" + strings.Repeat("k", 35)},
		{"a Google API key", "AIza" + strings.Repeat("k_", 17) + "-"}, // the body's alphabet has '-' and '_'
		{"a Stripe secret key", "sk_live_" + strings.Repeat("4", 24)},
		{"a Stripe secret key", "rk_live_" + strings.Repeat("4", 24)}, // restricted key
		{"a Hugging Face token", "hf_" + strings.Repeat("h", 34)},
		{"an E2B API key", "e2b_" + strings.Repeat("0a", 20)},
		{"a private key", "-----BEGIN PRIVATE KEY-----"}, // PKCS#8
		{"a private key", "-----BEGIN RSA PRIVATE KEY-----"},
		{"a private key", "-----BEGIN EC PRIVATE KEY-----"},
		{"a private key", "-----BEGIN OPENSSH PRIVATE KEY-----"},
	}
	g := &secretGuard{patterns: tokenPatterns()}
	for _, c := range cases {
		out, found := g.mask("value: " + c.sample + " end")
		if out != "value: [REDACTED] end" || found != c.kind {
			t.Errorf("%.40s: masked %q as %q, want it masked whole as %q", c.sample, out, found, c.kind)
		}
	}
}

// TestSecretPatternsNearMisses: strings one step outside a format are left
// as they are: a prefix the format does not have, a body too short, a
// token inside a longer word. A pattern loosened so far would mask hashes
// and identifiers in ordinary tool output.
func TestSecretPatternsNearMisses(t *testing.T) {
	gh36 := strings.Repeat("A1b2", 9)
	for _, s := range []string{
		"ghx_" + gh36,      // no such GitHub prefix
		"ghp_" + gh36[:35], // one short
		"xghp_" + gh36,     // inside a word
		"github_pat_" + strings.Repeat("a", 21) + "_" + strings.Repeat("B", 59),
		"glpat-" + strings.Repeat("x", 19),
		"AKIA" + strings.Repeat("A", 15),
		"AKIB" + strings.Repeat("A", 16),
		"xoxz-123456-abcdefghij",
		"xoxb-12345-abcdefghij",
		"sk-ant-api03-" + strings.Repeat("z", 79),
		"sk-proj-" + strings.Repeat("Q", 39),
		"sk-" + strings.Repeat("a", 48),
		"AIza" + strings.Repeat("k", 34),
		"AIza" + strings.Repeat("k", 36),
		"sk_test_" + strings.Repeat("4", 24),
		"sk_live_" + strings.Repeat("4", 23),
		"hf_" + strings.Repeat("h", 33),
		"e2b_" + strings.Repeat("0A", 20),
		"-----BEGIN PUBLIC KEY-----",
	} {
		if out, found := (&secretGuard{patterns: tokenPatterns()}).mask("value: " + s + " end"); found != "" || out != "value: "+s+" end" {
			t.Errorf("%.40s: masked %q as %q, want it left alone", s, out, found)
		}
	}
}
