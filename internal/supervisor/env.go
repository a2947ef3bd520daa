package supervisor

import "strings"

// EnvWithout returns env without the named variables. The gateway uses it to
// keep its access token out of every server's environment.
func EnvWithout(env []string, names ...string) []string {
	out := make([]string, 0, len(env))
next:
	for _, kv := range env {
		name, _, _ := strings.Cut(kv, "=")
		for _, n := range names {
			if name == n {
				continue next
			}
		}
		out = append(out, kv)
	}
	return out
}
