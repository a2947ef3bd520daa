// Package intercept runs the gateway's interceptors: go-plugin binaries,
// exec commands and built-in policies (tool filters, a secret guard, size
// guards), in the order the interceptor config lists them, around every
// tools/call they apply to and on every tools list.
package intercept

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path"
	"slices"
	"strings"
	"time"

	"github.com/mcp-gateway/mcp-gateway/interceptor/contract"
)

// DefaultPath is where a sandbox template puts its interceptor config. A
// missing file there means no interceptors; a file named by flag must exist.
const DefaultPath = "/etc/mcp-gateway/interceptors.json"

// DefaultTimeout bounds one hook of a plugin or exec interceptor when the
// config gives no timeout.
const DefaultTimeout = 5 * time.Second

// Interceptor kinds, the "type" of a config entry.
const (
	TypePlugin      = "plugin"
	TypeExec        = "exec"
	TypeToolFilter  = "toolFilter"
	TypeSecretGuard = "secretGuard"
	TypeSizeGuard   = "sizeGuard"
)

// ErrInvalidConfig is matched by every error Parse and Load return for the
// content of the interceptor config.
var ErrInvalidConfig = errors.New("invalid interceptor config")

// ConfigError is one invalid part of the interceptor config: Index is the
// entry's position in "interceptors" (-1 for the file as a whole), Name its
// name when it has one, Field the member at fault.
type ConfigError struct {
	File  string
	Index int
	Name  string
	Field string
	Err   error
}

func (e *ConfigError) Error() string {
	var b strings.Builder
	b.WriteString("interceptor config")
	if e.File != "" {
		fmt.Fprintf(&b, " %s", e.File)
	}
	if e.Index >= 0 {
		fmt.Fprintf(&b, ": interceptors[%d]", e.Index)
		if e.Name != "" {
			fmt.Fprintf(&b, " (%q)", e.Name)
		}
	}
	if e.Field != "" {
		fmt.Fprintf(&b, ": %s", e.Field)
	}
	fmt.Fprintf(&b, ": %v", e.Err)
	return b.String()
}

func (e *ConfigError) Unwrap() error        { return e.Err }
func (e *ConfigError) Is(target error) bool { return target == ErrInvalidConfig }

// Config is a validated interceptor config. The zero value has no
// interceptors.
type Config struct {
	Interceptors []Spec
	// PluginHost is the plugin host program (HostName) that runs plugin
	// interceptors: Parse finds it when the config has one, so that a
	// gateway that could not run its plugins does not start.
	PluginHost string
}

// Spec is one interceptor, validated: plain data, no JSON left.
type Spec struct {
	Name string
	Type string
	// Servers and Tools are globs (path.Match syntax) over server keys and
	// original tool names; the interceptor applies to a call or listing
	// only when both match. Empty means all.
	Servers, Tools []string
	// Hooks it runs at (plugin and exec): a subset of before, after, tools.
	Hooks []contract.Hook
	// Timeout bounds one hook (plugin and exec).
	Timeout time.Duration
	// FailOpen lets calls through (unchanged) when the interceptor fails,
	// times out or is down; by default such calls fail.
	FailOpen bool

	Path    string   // plugin: the binary
	Args    []string // plugin: its arguments
	Command string   // exec: run with /bin/sh -c

	Allow, Deny []string // toolFilter: tool globs

	Mode     string // secretGuard: "redact" (default) or "refuse"
	Patterns bool   // secretGuard: also well-known token formats (default true)

	MaxArgumentBytes int // sizeGuard: 0 means no limit
	MaxResultBytes   int // sizeGuard: 0 means no limit
}

// entry is one interceptor as written in the file.
type entry struct {
	Name     string   `json:"name"`
	Type     string   `json:"type"`
	Servers  []string `json:"servers"`
	Tools    []string `json:"tools"`
	Hooks    []string `json:"hooks"`
	Timeout  string   `json:"timeout"`
	FailOpen bool     `json:"failOpen"`

	Path    string   `json:"path"`
	Args    []string `json:"args"`
	Command string   `json:"command"`

	Allow []string `json:"allow"`
	Deny  []string `json:"deny"`

	Mode     string `json:"mode"`
	Patterns *bool  `json:"patterns"`

	MaxArgumentBytes int `json:"maxArgumentBytes"`
	MaxResultBytes   int `json:"maxResultBytes"`
}

// Load reads and validates the config at path. When optional is set (the
// default path, not named by flag), a missing file is no interceptors.
func Load(file string, optional bool) (*Config, error) {
	raw, err := os.ReadFile(file)
	if err != nil {
		if optional && errors.Is(err, os.ErrNotExist) {
			return &Config{}, nil
		}
		return nil, &ConfigError{File: file, Index: -1, Err: err}
	}
	cfg, err := Parse(raw)
	var ce *ConfigError
	if errors.As(err, &ce) {
		ce.File = file
	}
	return cfg, err
}

// members that a type may set besides the common name, type, servers, tools.
func typeFields() map[string][]string {
	return map[string][]string{
		TypePlugin:      {"hooks", "timeout", "failOpen", "path", "args"},
		TypeExec:        {"hooks", "timeout", "failOpen", "command"},
		TypeToolFilter:  {"allow", "deny"},
		TypeSecretGuard: {"mode", "patterns"},
		TypeSizeGuard:   {"maxArgumentBytes", "maxResultBytes"},
	}
}

// Parse validates an interceptor config document.
func Parse(raw []byte) (*Config, error) {
	fileErr := func(err error) error { return &ConfigError{Index: -1, Err: err} }
	var doc struct {
		Interceptors []json.RawMessage `json:"interceptors"`
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&doc); err != nil {
		return nil, fileErr(fmt.Errorf("must be a JSON object {\"interceptors\": [...]}: %w", err))
	}
	if dec.More() {
		return nil, fileErr(errors.New("has data after the JSON object"))
	}
	cfg := &Config{}
	names := make(map[string]bool)
	for i, raw := range doc.Interceptors {
		s, err := parseEntry(i, raw)
		if err != nil {
			return nil, err
		}
		if names[s.Name] {
			return nil, &ConfigError{Index: i, Name: s.Name, Field: "name", Err: errors.New("is used by an earlier interceptor")}
		}
		names[s.Name] = true
		if s.Type == TypePlugin && cfg.PluginHost == "" {
			if cfg.PluginHost, err = findHost(); err != nil {
				return nil, &ConfigError{Index: i, Name: s.Name, Field: "type", Err: fmt.Errorf("plugin %w", err)}
			}
		}
		cfg.Interceptors = append(cfg.Interceptors, s)
	}
	return cfg, nil
}

func parseEntry(i int, raw json.RawMessage) (Spec, error) {
	var e entry
	fail := func(field string, err error) (Spec, error) {
		return Spec{}, &ConfigError{Index: i, Name: e.Name, Field: field, Err: err}
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(raw, &members); err != nil || members == nil {
		return fail("", errors.New("must be a JSON object"))
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&e); err != nil {
		var te *json.UnmarshalTypeError
		if errors.As(err, &te) {
			return fail(te.Field, fmt.Errorf("must be %s", te.Type))
		}
		return fail("", err)
	}
	if !validName(e.Name) {
		return fail("name", errors.New("is required: letters, digits, '-', '_' and '.', at most 64"))
	}
	allowed, ok := typeFields()[e.Type]
	if !ok {
		return fail("type", fmt.Errorf("%q is not one of plugin, exec, toolFilter, secretGuard, sizeGuard", e.Type))
	}
	for k := range members {
		if !slices.Contains([]string{"name", "type", "servers", "tools"}, k) && !slices.Contains(allowed, k) {
			return fail(k, fmt.Errorf("is not a field of a %s interceptor", e.Type))
		}
	}
	s := Spec{Name: e.Name, Type: e.Type, Servers: e.Servers, Tools: e.Tools, FailOpen: e.FailOpen,
		Path: e.Path, Args: e.Args, Command: e.Command, Allow: e.Allow, Deny: e.Deny,
		Mode: e.Mode, Patterns: e.Patterns == nil || *e.Patterns,
		MaxArgumentBytes: e.MaxArgumentBytes, MaxResultBytes: e.MaxResultBytes}
	for field, globs := range map[string][]string{"servers": e.Servers, "tools": e.Tools, "allow": e.Allow, "deny": e.Deny} {
		if err := checkGlobs(globs); err != nil {
			return fail(field, err)
		}
	}
	switch e.Type {
	case TypePlugin, TypeExec:
		if len(e.Hooks) == 0 {
			return fail("hooks", errors.New("is required: one or more of before, after, tools"))
		}
		for _, h := range e.Hooks {
			hook := contract.Hook(h)
			if hook != contract.HookBefore && hook != contract.HookAfter && hook != contract.HookTools {
				return fail("hooks", fmt.Errorf("%q is not one of before, after, tools", h))
			}
			if slices.Contains(s.Hooks, hook) {
				return fail("hooks", fmt.Errorf("%q is listed twice", h))
			}
			s.Hooks = append(s.Hooks, hook)
		}
		s.Timeout = DefaultTimeout
		if e.Timeout != "" {
			d, err := time.ParseDuration(e.Timeout)
			if err != nil || d <= 0 {
				return fail("timeout", errors.New(`must be a positive duration such as "2s" or "500ms"`))
			}
			s.Timeout = d
		}
	}
	switch e.Type {
	case TypePlugin:
		if e.Path == "" || !path.IsAbs(e.Path) {
			return fail("path", errors.New("is required: the plugin binary's absolute path"))
		}
		fi, err := os.Stat(e.Path)
		switch {
		case err != nil:
			return fail("path", fmt.Errorf("cannot be used: %w", err))
		case !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0:
			return fail("path", errors.New("is not an executable file"))
		}
	case TypeExec:
		if strings.TrimSpace(e.Command) == "" {
			return fail("command", errors.New("is required: a shell command, run with /bin/sh -c"))
		}
		if strings.ContainsRune(e.Command, 0) {
			return fail("command", errors.New("contains a NUL byte"))
		}
	case TypeToolFilter:
		if len(e.Allow) == 0 && len(e.Deny) == 0 {
			return fail("allow", errors.New("a toolFilter needs allow or deny globs"))
		}
	case TypeSecretGuard:
		switch e.Mode {
		case "":
			s.Mode = "redact"
		case "redact", "refuse":
		default:
			return fail("mode", fmt.Errorf("%q is not redact or refuse", e.Mode))
		}
	case TypeSizeGuard:
		if e.MaxArgumentBytes < 0 || e.MaxResultBytes < 0 || e.MaxArgumentBytes == 0 && e.MaxResultBytes == 0 {
			return fail("maxArgumentBytes", errors.New("a sizeGuard needs a positive maxArgumentBytes or maxResultBytes"))
		}
	}
	return s, nil
}

func validName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for _, c := range s {
		if !(c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '-' || c == '_' || c == '.') {
			return false
		}
	}
	return true
}

// checkGlobs reports the first malformed glob.
func checkGlobs(globs []string) error {
	for _, g := range globs {
		if g == "" {
			return errors.New("has an empty glob")
		}
		if _, err := path.Match(g, ""); err != nil {
			return fmt.Errorf("glob %q: %w", g, err)
		}
	}
	return nil
}

// matchAny reports whether name matches one of globs; no globs match all.
func matchAny(globs []string, name string) bool {
	if len(globs) == 0 {
		return true
	}
	for _, g := range globs {
		if ok, _ := path.Match(g, name); ok {
			return true
		}
	}
	return false
}
