// Package catalog knows which MCP servers the gateway can start and turns the user's mcp config
// into plain ServerSpecs: it parses the catalog (the embedded default plus the template's
// override file), validates the config in one pass (Resolve), and pre-installs catalog servers
// at template build time (PullPlan, Pull). Nothing here starts a server.
package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"maps"
	"os"
	"slices"
	"strings"
)

// Manager says how a catalog server is installed and started.
type Manager string

const (
	// ManagerNPM servers run as their npm bin when installed globally, else through npx.
	ManagerNPM Manager = "npm"
	// ManagerPyPI servers run as their bin when installed (uv tool install), else through uvx.
	ManagerPyPI Manager = "pypi"
	// ManagerBuiltin servers are part of the gateway binary: `<self> builtin <name>`.
	ManagerBuiltin Manager = "builtin"
	// ManagerCommand servers run the entry's fixed argv; nothing is installed.
	ManagerCommand Manager = "command"
)

// PropType is the JSON type a server property accepts.
type PropType string

// The property types, named as in JSON Schema so entries read like the E2B server schema.
const (
	TypeString  PropType = "string"
	TypeArray   PropType = "array"
	TypeBoolean PropType = "boolean"
	TypeNumber  PropType = "number"
	TypeInteger PropType = "integer"
	TypeObject  PropType = "object"
)

// Package names what to install and which executable it provides.
type Package struct {
	Manager Manager `json:"manager"`
	// Name is the npm or PyPI package name, or the built-in server's name. Empty for commands.
	Name string `json:"name,omitempty"`
	// Bin is the executable the package installs. When the catalog omits it, it defaults to
	// Name for PyPI and unscoped npm packages; scoped npm packages must name it.
	Bin string `json:"bin,omitempty"`
}

// Property is one setting a catalog server accepts in the mcp config, and how its value reaches
// the server: exactly one of Positional, Flag and Env is set (Parse enforces it).
type Property struct {
	Type PropType `json:"type"`
	// Items is the element type of an array property (never array itself).
	Items       PropType `json:"items,omitempty"`
	Required    bool     `json:"required,omitempty"`
	Description string   `json:"description,omitempty"`
	// Positional values are appended to argv after all flags; arrays add one arg per element.
	Positional bool `json:"positional,omitempty"`
	// Flag values are passed as "--flag" "value"; arrays repeat the flag, booleans pass the flag
	// alone and only when true.
	Flag string `json:"flag,omitempty"`
	// Env values are set in this server's environment; non-strings are JSON-encoded.
	Env string `json:"env,omitempty"`
}

// Entry is one catalog server. Entries returned by a Catalog are copies: changing them does not
// change the catalog.
type Entry struct {
	Name        string   `json:"name"`
	Description string   `json:"description"`
	Package     Package  `json:"package"`
	Command     []string `json:"command,omitempty"` // ManagerCommand only
	// Args are fixed arguments placed after the executable and before property arguments.
	Args       []string            `json:"args,omitempty"`
	Properties map[string]Property `json:"properties"` // never nil
}

// Catalog is an immutable set of entries keyed by name; it is safe for concurrent use.
type Catalog struct {
	entries map[string]Entry
}

// tokenEnv is the gateway's own secret. Servers never get it: not through envs, not through an
// env-mapped property.
const tokenEnv = "GATEWAY_ACCESS_TOKEN"

// reservedKeys are config fields with a meaning of their own in every entry, so no catalog
// property may take their name: runCmd would silently turn the entry into a local server.
var reservedKeys = []string{"runCmd", "run_cmd", "installCmd", "install_cmd", "envs", "cwd"}

// Parse reads a catalog document: {"servers": {"<name>": {entry}}}. It is strict, because a
// catalog is written by a template author at build time and a typo there would otherwise show up
// as a puzzling runtime failure: unknown fields are errors naming the entry and the field.
func Parse(data []byte) (*Catalog, error) {
	top, err := readObject(data)
	if err != nil {
		return nil, err
	}
	var servers json.RawMessage
	for _, m := range top {
		if m.Key != "servers" {
			return nil, fmt.Errorf("unknown field %q (want only \"servers\")", m.Key)
		}
		servers = m.Value
	}
	if servers == nil {
		return nil, errors.New(`"servers" is required`)
	}
	members, err := readObject(servers)
	if err != nil {
		return nil, fmt.Errorf("servers: %w", err)
	}
	c := &Catalog{entries: make(map[string]Entry, len(members))}
	for _, m := range members {
		e, err := parseEntry(m.Key, m.Value)
		if err != nil {
			return nil, fmt.Errorf("entry %q: %w", m.Key, err)
		}
		c.entries[m.Key] = e
	}
	return c, nil
}

func parseEntry(name string, raw json.RawMessage) (Entry, error) {
	if !validEntryName(name) {
		return Entry{}, errors.New("invalid name (letters, digits, '.', '_' and '-', at most 64, starting with a letter or digit)")
	}
	members, err := readObject(raw)
	if err != nil {
		return Entry{}, err
	}
	e := Entry{Name: name, Properties: map[string]Property{}}
	var hasPackage bool
	for _, m := range members {
		switch m.Key {
		case "description":
			e.Description, err = decodeString(m.Value)
		case "package":
			hasPackage = true
			e.Package, err = parsePackage(m.Value)
		case "command":
			e.Command, err = decodeStrings(m.Value)
		case "args":
			e.Args, err = decodeStrings(m.Value)
		case "properties":
			e.Properties, err = parseProperties(m.Value)
		default:
			return Entry{}, fmt.Errorf("unknown field %q", m.Key)
		}
		if err != nil {
			return Entry{}, fmt.Errorf("%s: %w", m.Key, err)
		}
	}
	switch {
	case !hasPackage && e.Command == nil:
		return Entry{}, errors.New(`needs "package" or "command"`)
	case !hasPackage:
		e.Package.Manager = ManagerCommand
	case e.Package.Manager != ManagerCommand && e.Command != nil:
		return Entry{}, fmt.Errorf(`command: only for manager "command", not %q`, e.Package.Manager)
	}
	if e.Package.Manager == ManagerCommand && (len(e.Command) == 0 || e.Command[0] == "") {
		return Entry{}, errors.New("command: must name an executable")
	}
	for _, a := range slices.Concat(e.Command, e.Args) {
		if strings.ContainsRune(a, 0) {
			return Entry{}, errors.New("command and args must not contain NUL bytes")
		}
	}
	return e, nil
}

func parsePackage(raw json.RawMessage) (Package, error) {
	members, err := readObject(raw)
	if err != nil {
		return Package{}, err
	}
	var p Package
	for _, m := range members {
		var s string
		if s, err = decodeString(m.Value); err != nil {
			return Package{}, fmt.Errorf("%s: %w", m.Key, err)
		}
		switch m.Key {
		case "manager":
			p.Manager = Manager(s)
		case "name":
			p.Name = s
		case "bin":
			p.Bin = s
		default:
			return Package{}, fmt.Errorf("unknown field %q", m.Key)
		}
	}
	if strings.ContainsFunc(p.Name, isSpaceOrControl) {
		return Package{}, errors.New("name: must not contain spaces or control characters")
	}
	if strings.ContainsFunc(p.Bin, isSpaceOrControl) || strings.Contains(p.Bin, "/") {
		return Package{}, errors.New("bin: must be a plain executable name")
	}
	switch p.Manager {
	case ManagerNPM, ManagerPyPI:
		if p.Name == "" {
			return Package{}, fmt.Errorf("name: is required for manager %q", p.Manager)
		}
		if p.Bin == "" {
			if strings.HasPrefix(p.Name, "@") {
				return Package{}, errors.New("bin: is required for a scoped npm package")
			}
			p.Bin = p.Name
		}
	case ManagerBuiltin:
		if p.Name == "" {
			return Package{}, errors.New(`name: is required for manager "builtin"`)
		}
		if p.Bin != "" {
			return Package{}, errors.New(`bin: not allowed for manager "builtin"`)
		}
	case ManagerCommand:
		if p.Name != "" || p.Bin != "" {
			return Package{}, errors.New(`name and bin: not allowed for manager "command" (use "command")`)
		}
	default:
		return Package{}, fmt.Errorf("manager: %q is not one of npm, pypi, builtin, command", p.Manager)
	}
	return p, nil
}

func parseProperties(raw json.RawMessage) (map[string]Property, error) {
	members, err := readObject(raw)
	if err != nil {
		return nil, err
	}
	props := make(map[string]Property, len(members))
	for _, m := range members {
		p, err := parseProperty(m.Key, m.Value)
		if err != nil {
			return nil, fmt.Errorf("%q: %w", m.Key, err)
		}
		props[m.Key] = p
	}
	return props, nil
}

func parseProperty(name string, raw json.RawMessage) (Property, error) {
	if name == "" || strings.ContainsFunc(name, func(r rune) bool { return r < ' ' }) {
		return Property{}, errors.New("invalid property name")
	}
	if slices.Contains(reservedKeys, name) {
		return Property{}, fmt.Errorf("name is reserved (%s)", strings.Join(reservedKeys, ", "))
	}
	members, err := readObject(raw)
	if err != nil {
		return Property{}, err
	}
	var p Property
	for _, m := range members {
		var s string
		switch m.Key {
		case "type", "items", "description", "flag", "env":
			s, err = decodeString(m.Value)
		case "required":
			p.Required, err = decodeBool(m.Value)
		case "positional":
			p.Positional, err = decodeBool(m.Value)
		default:
			return Property{}, fmt.Errorf("unknown field %q", m.Key)
		}
		if err != nil {
			return Property{}, fmt.Errorf("%s: %w", m.Key, err)
		}
		switch m.Key {
		case "type":
			p.Type = PropType(s)
		case "items":
			p.Items = PropType(s)
		case "description":
			p.Description = s
		case "flag":
			p.Flag = s
		case "env":
			p.Env = s
		}
	}
	if !validType(p.Type) {
		return Property{}, fmt.Errorf("type: %q is not one of string, array, boolean, number, integer, object", p.Type)
	}
	switch {
	case p.Type == TypeArray && (p.Items == TypeArray || !validType(p.Items)):
		return Property{}, fmt.Errorf("items: %q is not one of string, boolean, number, integer, object", p.Items)
	case p.Type != TypeArray && p.Items != "":
		return Property{}, errors.New("items: only for type array")
	}
	ways := 0
	for _, set := range []bool{p.Positional, p.Flag != "", p.Env != ""} {
		if set {
			ways++
		}
	}
	if ways != 1 {
		return Property{}, errors.New("needs exactly one of positional, flag, env")
	}
	if p.Flag != "" && !validFlag(p.Flag) {
		return Property{}, errors.New(`flag: must look like "--name"`)
	}
	if p.Env != "" && (!validEnvName(p.Env) || p.Env == tokenEnv) {
		return Property{}, fmt.Errorf("env: %q is not a usable environment variable name", p.Env)
	}
	return p, nil
}

func isSpaceOrControl(r rune) bool { return r <= ' ' || r == 0x7f }

func validType(t PropType) bool {
	switch t {
	case TypeString, TypeArray, TypeBoolean, TypeNumber, TypeInteger, TypeObject:
		return true
	}
	return false
}

// Load parses the embedded catalog and lays the override file over it: each override entry adds
// a server or replaces the embedded entry of the same name as a whole. overridePath == "" or a
// missing file means no override (templates need not have one); any other read or parse error is
// returned naming the path, so a broken template fails loudly instead of losing its servers.
func Load(embedded []byte, overridePath string) (*Catalog, error) {
	c, err := Parse(embedded)
	if err != nil {
		return nil, fmt.Errorf("embedded catalog: %w", err)
	}
	if overridePath == "" {
		return c, nil
	}
	data, err := os.ReadFile(overridePath)
	if errors.Is(err, fs.ErrNotExist) {
		return c, nil
	}
	if err != nil {
		return nil, fmt.Errorf("catalog override: %w", err)
	}
	o, err := Parse(data)
	if err != nil {
		return nil, fmt.Errorf("catalog override %s: %w", overridePath, err)
	}
	maps.Copy(c.entries, o.entries)
	return c, nil
}

// Lookup returns a copy of the entry called name.
func (c *Catalog) Lookup(name string) (Entry, bool) {
	if c == nil {
		return Entry{}, false
	}
	e, ok := c.entries[name]
	if !ok {
		return Entry{}, false
	}
	return e.clone(), true
}

// Names returns the entry names, sorted.
func (c *Catalog) Names() []string {
	if c == nil {
		return nil
	}
	return slices.Sorted(maps.Keys(c.entries))
}

// Entries returns copies of all entries, sorted by name.
func (c *Catalog) Entries() []Entry {
	names := c.Names()
	out := make([]Entry, 0, len(names))
	for _, n := range names {
		out = append(out, c.entries[n].clone())
	}
	return out
}

func (e Entry) clone() Entry {
	e.Command = slices.Clone(e.Command)
	e.Args = slices.Clone(e.Args)
	e.Properties = maps.Clone(e.Properties)
	return e
}
