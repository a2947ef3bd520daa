package supervisor

import "strings"

// shellLine returns the /bin/sh -c line for a runCmd. A simple command (one
// program and its arguments, quoted or not) gets "exec " in front, so the
// shell replaces itself with the server instead of waiting as its parent:
// dash, Debian's /bin/sh, does not do that by itself. That saves a process
// per server and makes the server the process that receives our signals.
// Anything with shell syntax beyond words and quotes (lists, pipes,
// redirections, substitutions, leading VAR=value assignments) is left as
// written.
func shellLine(runCmd string) string {
	cmd := strings.TrimSpace(runCmd)
	if cmd == "" || strings.ContainsAny(cmd, ";&|<>()$`\\\n*?[]{}~#!") {
		return runCmd
	}
	first, _, _ := strings.Cut(cmd, " ")
	if strings.Contains(first, "=") || first == "exec" {
		return runCmd
	}
	return "exec " + cmd
}
