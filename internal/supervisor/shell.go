package supervisor

import (
	"io"
	"os"
	"path/filepath"
	"strings"
)

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

// directCommand splits a runCmd made only of words, quotes and leading
// VAR=value assignments into the program's argv and the assignments, so that
// the supervisor can start the server without a shell. A shell per server
// cost a process start each, which at 64 servers was most of the gateway's
// launch overhead. ok is false for anything else: the shell runs it.
func directCommand(runCmd string) (argv, assigns []string, ok bool) {
	var words []string
	var quotedName []bool // whether the word's text before '=' had quotes
	var cur strings.Builder
	inWord, quoted, sawEq := false, false, false
	for i := 0; i < len(runCmd); i++ {
		c := runCmd[i]
		switch {
		case c == ' ' || c == '\t':
			if inWord {
				words, quotedName = append(words, cur.String()), append(quotedName, quoted)
				cur.Reset()
				inWord, quoted, sawEq = false, false, false
			}
		case c == '\'' || c == '"':
			end := strings.IndexByte(runCmd[i+1:], c)
			if end < 0 {
				return nil, nil, false // unterminated: the shell says so
			}
			text := runCmd[i+1 : i+1+end]
			if c == '"' && strings.ContainsAny(text, "$`\\") {
				return nil, nil, false // expanded inside double quotes
			}
			cur.WriteString(text)
			i += end + 1
			inWord = true
			if !sawEq {
				quoted = true
			}
		case strings.IndexByte(shellSpecial, c) >= 0:
			return nil, nil, false
		default:
			if c == '=' {
				sawEq = true
			}
			cur.WriteByte(c)
			inWord = true
		}
	}
	if inWord {
		words, quotedName = append(words, cur.String()), append(quotedName, quoted)
	}
	for len(words) > 0 && !quotedName[0] && isAssignment(words[0]) {
		assigns = append(assigns, words[0])
		words, quotedName = words[1:], quotedName[1:]
	}
	if len(words) == 0 || words[0] == "exec" || words[0] == "" {
		return nil, nil, false
	}
	return words, assigns, true
}

// shellSpecial are the characters that mean more than themselves to the
// shell outside quotes.
const shellSpecial = ";&|<>()$`\\\n*?[]{}~#!"

// isAssignment reports whether word is NAME=value with NAME a shell name.
func isAssignment(word string) bool {
	name, _, ok := strings.Cut(word, "=")
	if !ok || name == "" {
		return false
	}
	for i, c := range name {
		if c != '_' && (c < 'A' || c > 'Z') && (c < 'a' || c > 'z') && (i == 0 || c < '0' || c > '9') {
			return false
		}
	}
	return true
}

// findProgram resolves a program as the shell would, in the PATH of env and
// relative to dir, and reports whether it can be started without a shell: a
// binary or a script with a #! line. A script without one is run by the
// shell itself, and a missing program gets the shell's "not found".
func findProgram(name, dir string, env []string) (string, bool) {
	candidates := []string{name}
	if !strings.Contains(name, "/") {
		candidates = candidates[:0]
		path := ""
		for _, kv := range env {
			if v, ok := strings.CutPrefix(kv, "PATH="); ok {
				path = v // the last one wins, as in the process
			}
		}
		for _, d := range filepath.SplitList(path) {
			if d == "" {
				d = "."
			}
			candidates = append(candidates, filepath.Join(d, name))
		}
	}
	for _, c := range candidates {
		p := c
		if !filepath.IsAbs(p) && dir != "" {
			p = filepath.Join(dir, p)
		}
		// The first executable file is the one the shell runs, whatever
		// it holds: if the kernel cannot start it, the shell can.
		if st, err := os.Stat(p); err != nil || !st.Mode().IsRegular() || st.Mode().Perm()&0o111 == 0 {
			continue
		}
		if !startable(p) {
			return "", false
		}
		if !filepath.IsAbs(p) {
			if abs, err := filepath.Abs(p); err == nil {
				p = abs
			}
		}
		return p, true
	}
	return "", false
}

// startable reports whether the executable file at path is one the kernel
// can run: a binary, or a script with a #! line.
func startable(path string) bool {
	f, err := os.Open(path)
	if err != nil {
		return false
	}
	defer f.Close()
	var head [4]byte
	n, _ := io.ReadFull(f, head[:])
	return (n >= 2 && string(head[:2]) == "#!") || (n == 4 && string(head[:]) == "\x7fELF")
}
