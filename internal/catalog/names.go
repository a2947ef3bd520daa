package catalog

// The name rules below are written out by hand rather than as regular
// expressions: compiling the bounded repetitions ({0,63}, {1,100}) at package
// init and running them per name cost about 1 ms of every process start, and
// the launch starts two. names_test.go holds the regular expressions they
// must agree with and checks that they do.

// validEntryName reports whether s is a catalog entry name:
// [A-Za-z0-9][A-Za-z0-9._-]{0,63}.
func validEntryName(s string) bool {
	return len(s) >= 1 && len(s) <= 64 && isAlnum(s[0]) && all(s[1:], isNameByte)
}

// validEnvName reports whether s is an environment variable name:
// [A-Za-z_][A-Za-z0-9_]*.
func validEnvName(s string) bool {
	return s != "" && (isLetter(s[0]) || s[0] == '_') && all(s[1:], func(c byte) bool { return isAlnum(c) || c == '_' })
}

// validFlag reports whether s is a command-line flag: --?[A-Za-z0-9][A-Za-z0-9._-]*.
func validFlag(s string) bool {
	switch {
	case len(s) >= 2 && s[0] == '-' && s[1] == '-':
		s = s[2:]
	case len(s) >= 1 && s[0] == '-':
		s = s[1:]
	default:
		return false
	}
	return s != "" && isAlnum(s[0]) && all(s[1:], isNameByte)
}

// validGitHubOwner reports whether s can be a GitHub user or organization:
// [A-Za-z0-9][A-Za-z0-9-]{0,38}.
func validGitHubOwner(s string) bool {
	return len(s) >= 1 && len(s) <= 39 && isAlnum(s[0]) && all(s[1:], func(c byte) bool { return isAlnum(c) || c == '-' })
}

// validGitHubRepo reports whether s is made of GitHub's repository name
// characters: [A-Za-z0-9._-]{1,100}. (Names starting with '.' are refused by
// the caller.)
func validGitHubRepo(s string) bool {
	return len(s) >= 1 && len(s) <= 100 && all(s, isNameByte)
}

func isLetter(c byte) bool   { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isAlnum(c byte) bool    { return isLetter(c) || '0' <= c && c <= '9' }
func isNameByte(c byte) bool { return isAlnum(c) || c == '.' || c == '_' || c == '-' }

// all reports whether every byte of s satisfies ok. Bytes, not runes: every
// rule above is ASCII-only, so any byte of a multi-byte rune fails it.
func all(s string, ok func(byte) bool) bool {
	for i := 0; i < len(s); i++ {
		if !ok(s[i]) {
			return false
		}
	}
	return true
}

// validVersion reports whether s is an exact package version: [0-9A-Za-z.+-]+ starting with a
// digit. Ranges ("^1.2", ">=1") and tags ("latest") are refused: a catalog pins what it tested.
func validVersion(s string) bool {
	return s != "" && '0' <= s[0] && s[0] <= '9' && all(s, func(c byte) bool { return isAlnum(c) || c == '.' || c == '+' || c == '-' })
}
