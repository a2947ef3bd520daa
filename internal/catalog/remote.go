package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/textproto"
	"net/url"
	"os"
	"slices"
	"strings"
)

// transportHeaders are set by the MCP streamable-HTTP transport or by net/http itself. A config
// header of the same name would break the session (a second Mcp-Session-Id, a wrong
// Content-Type), so it is refused rather than silently overridden.
func transportHeaders() []string {
	return []string{
		"Accept", "Connection", "Content-Length", "Content-Type", "Host", "Last-Event-Id",
		"Mcp-Protocol-Version", "Mcp-Session-Id", "Transfer-Encoding", "Upgrade",
	}
}

// remote resolves a key with a url: a streamable-HTTP MCP server. Its header values may refer
// to the gateway's environment as ${VAR}, so that a config (which the SDKs pass on a command
// line, visible to every process) need not carry the key itself.
func (r *resolver) remote(name string, fields map[string]json.RawMessage) (ServerSpec, error) {
	fail := func(field string, err error) (ServerSpec, error) {
		return ServerSpec{}, &ConfigError{Server: name, Field: field, Err: err}
	}
	for _, f := range []string{"runCmd", "run_cmd"} {
		if _, ok := fields[f]; ok {
			return fail("url", fmt.Errorf("cannot be given with %s: a server is either remote (url) or a command (runCmd)", f))
		}
	}
	if strings.HasPrefix(name, "github/") {
		return fail("url", errors.New("a GitHub server is cloned and run with runCmd; give a remote server a name without the github/ prefix"))
	}
	raw, err := decodeString(fields["url"])
	if err != nil {
		return fail("url", err)
	}
	u, err := checkURL(raw)
	if err != nil {
		return fail("url", err)
	}
	spec := ServerSpec{Name: name, Kind: KindRemote, URL: u}
	if spec.Headers, err = r.headers(name, fields); err != nil {
		return ServerSpec{}, err
	}
	if _, ok := r.cat.Lookup(name); ok {
		r.warn("server %q: url given, so the catalog entry of the same name is not used", name)
	}
	for _, k := range sortedKeys(fields) {
		if k != "url" && k != "headers" {
			r.warn("server %q: field %q ignored (a remote server takes url and headers)", name, k)
		}
	}
	return spec, nil
}

// checkURL accepts an absolute http or https URL without credentials. Messages never quote the
// URL: a query string may hold a key.
func checkURL(raw string) (string, error) {
	if strings.TrimSpace(raw) == "" {
		return "", errors.New("is empty")
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse quotes its input; say what is wrong without it.
		return "", errors.New("is not a valid URL")
	}
	switch {
	case u.Scheme != "http" && u.Scheme != "https":
		return "", errors.New("must be an absolute http:// or https:// URL")
	case u.Host == "" || u.Hostname() == "":
		return "", errors.New("has no host")
	case u.User != nil:
		return "", errors.New("must not contain credentials (user:password@); send them in headers, which are kept out of logs")
	}
	return u.String(), nil
}

// headers reads the optional "headers" object: header names are HTTP tokens, values are strings
// in which ${VAR} is replaced from the environment. Messages name headers and variables, never
// values.
func (r *resolver) headers(server string, fields map[string]json.RawMessage) (map[string]string, error) {
	fail := func(err error) (map[string]string, error) {
		return nil, &ConfigError{Server: server, Field: "headers", Err: err}
	}
	raw, ok := fields["headers"]
	if !ok {
		return nil, nil
	}
	if t := jsonType(raw); t != "object" {
		return fail(fmt.Errorf("must be an object of \"Name\": \"value\" strings, got %s", t))
	}
	members, err := readObject(raw)
	if err != nil {
		return fail(err)
	}
	lookup := r.opts.LookupEnv
	if lookup == nil {
		lookup = os.LookupEnv
	}
	var out map[string]string
	for _, m := range members {
		if !validToken(m.Key) {
			return fail(fmt.Errorf("header %q: invalid name (letters, digits and !#$%%&'*+-.^_`|~)", m.Key))
		}
		canon := textproto.CanonicalMIMEHeaderKey(m.Key)
		if slices.Contains(transportHeaders(), canon) {
			return fail(fmt.Errorf("header %q is set by the MCP transport and cannot be configured", m.Key))
		}
		if _, dup := out[canon]; dup {
			return fail(fmt.Errorf("header %q given twice (header names are case-insensitive)", canon))
		}
		v, err := decodeString(m.Value)
		if err != nil {
			return fail(fmt.Errorf("header %q: value %w", m.Key, err))
		}
		if v, err = expandVars(v, lookup); err != nil {
			return fail(fmt.Errorf("header %q: %w", m.Key, err))
		}
		if !validHeaderValue(v) {
			return fail(fmt.Errorf("header %q: value contains a line break or another control character", m.Key))
		}
		if out == nil {
			out = make(map[string]string)
		}
		out[canon] = v
	}
	return out, nil
}

// expandVars replaces every ${NAME} in s with the variable's value from lookup. A variable that
// is not set is an error naming it, so that a missing key fails the launch instead of sending
// "Bearer " to the remote. The gateway's own token may not be referenced: forwarding it to a
// remote server would leak it out of the sandbox. A "$" not followed by "{" is kept as is.
func expandVars(s string, lookup func(string) (string, bool)) (string, error) {
	if !strings.Contains(s, "${") {
		return s, nil
	}
	var b strings.Builder
	for {
		i := strings.Index(s, "${")
		if i < 0 {
			b.WriteString(s)
			return b.String(), nil
		}
		b.WriteString(s[:i])
		end := strings.IndexByte(s[i:], '}')
		if end < 0 {
			return "", errors.New(`"${" without a closing "}"`)
		}
		name := s[i+2 : i+end]
		switch {
		case !validEnvName(name):
			return "", errors.New(`"${...}" must hold a variable name (letters, digits and _, not starting with a digit)`)
		case name == tokenEnv:
			return "", fmt.Errorf("${%s} is the gateway's own token and is never sent to a server", tokenEnv)
		}
		v, ok := lookup(name)
		if !ok {
			return "", fmt.Errorf("environment variable %s is not set", name)
		}
		b.WriteString(v)
		s = s[i+end+1:]
	}
}

// validToken reports whether s is an HTTP token (RFC 9110 §5.6.2), the syntax of header names.
func validToken(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c >= 'a' && c <= 'z', c >= 'A' && c <= 'Z', c >= '0' && c <= '9':
		case strings.IndexByte("!#$%&'*+-.^_`|~", c) >= 0:
		default:
			return false
		}
	}
	return true
}

// validHeaderValue reports whether s can be sent as a header value: no control characters other
// than horizontal tab (RFC 9110 §5.5), so no CR or LF that would split the request.
func validHeaderValue(s string) bool {
	for i := 0; i < len(s); i++ {
		if c := s[i]; (c < ' ' && c != '\t') || c == 0x7f {
			return false
		}
	}
	return true
}
