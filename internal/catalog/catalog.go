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
	"net/textproto"
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
	// ManagerRemote servers are hosted streamable-HTTP MCP servers (Entry.Remote): nothing is
	// installed or started, the gateway connects with headers filled from the properties.
	ManagerRemote Manager = "remote"
	// ManagerUnavailable entries are known but cannot start here (Entry.Unavailable says why):
	// E2B runs them as Docker images and no package exists that runs without Docker. They are
	// in the catalog so that a config naming one fails with that reason, not "unknown server".
	ManagerUnavailable Manager = "unavailable"
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
	// Version pins the npm or PyPI version that npx/uvx run and pull installs. "" means the
	// latest, which only entries whose package could not be checked here use (see Unverified).
	Version string `json:"version,omitempty"`
	// Bin is the executable the package installs. When the catalog omits it, it defaults to
	// Name for PyPI and unscoped npm packages; scoped npm packages must name it.
	Bin string `json:"bin,omitempty"`
	// Unverified, when set, says why the package name, bin or version could not be checked
	// against its registry when the catalog was made (PyPI is not reachable from where it is
	// built). Starting such an entry may fail; the catalog command shows it.
	Unverified string `json:"unverified,omitempty"`
}

// Remote is where a hosted catalog server listens.
type Remote struct {
	// URL is the server's streamable-HTTP MCP endpoint.
	URL string `json:"url"`
}

// Unavailable says why an entry cannot start without Docker and how to run it anyway; both are
// shown to the user when a config names the entry.
type Unavailable struct {
	Reason string `json:"reason"`
	HowTo  string `json:"howTo"`
}

// Property is one setting a catalog server accepts in the mcp config, and how its value reaches
// the server: exactly one of Positional, Flag, Arg, Env, Header and Unused is set (Parse enforces
// it). Values are treated as secrets wherever they go: Env is preferred, since an argument is
// visible to every process in the sandbox; catalog entries use Flag, Arg or Positional only for
// servers that read the value nowhere else.
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
	// Arg values are passed as one argument made from this template, in which {name} (the
	// property's own name) stands for the value, e.g. "--access-level={accessLevel}".
	Arg string `json:"arg,omitempty"`
	// Env values are set in this server's environment; non-strings are JSON-encoded.
	Env string `json:"env,omitempty"`
	// Header values are sent as this HTTP header to a remote entry.
	Header string `json:"header,omitempty"`
	// Format, for Env and Header, is the template of the value with {name} standing for the
	// property's value, e.g. "Bearer {apiKey}". "" means the value as is.
	Format string `json:"format,omitempty"`
	// Unused says why the value is accepted but goes nowhere: E2B passes it to Docker only (a
	// bind mount, the container user), which has no meaning for a process started here.
	Unused string `json:"unused,omitempty"`
	// Note explains where this property deliberately differs from the E2B schema, or where its
	// destination was worked out rather than read from the registry.
	Note string `json:"note,omitempty"`
}

// Entry is one catalog server. Entries returned by a Catalog are copies: changing them does not
// change the catalog.
type Entry struct {
	Name        string `json:"name"`
	Title       string `json:"title,omitempty"`
	Description string `json:"description"`
	// Package says how the entry starts; Package.Manager is its start kind. Entries written
	// with "command", "remote" or "unavailable" instead of "package" get that manager.
	Package Package  `json:"package"`
	Command []string `json:"command,omitempty"` // ManagerCommand only
	// Args are fixed arguments placed after the executable and before property arguments.
	Args []string `json:"args,omitempty"`
	// Env holds fixed variables for the server's environment. A value may embed properties as
	// {name}; such a variable is set only when every property it names is given, and its value
	// is then a secret. Constant values are not secrets.
	Env         map[string]string   `json:"env,omitempty"`
	Remote      *Remote             `json:"remote,omitempty"`      // ManagerRemote only
	Unavailable *Unavailable        `json:"unavailable,omitempty"` // ManagerUnavailable only
	Properties  map[string]Property `json:"properties"`            // never nil
	// Source is the server's source repository, for people reading the catalog.
	Source string `json:"source,omitempty"`
	// Notes are facts a user of this entry should know (what was not verified, what differs
	// from the Docker image E2B runs).
	Notes []string `json:"notes,omitempty"`
}

// Catalog is an immutable set of entries keyed by name; it is safe for concurrent use.
type Catalog struct {
	entries map[string]Entry
	// lazy holds embedded entries not parsed yet (see lazy.go); a name is in entries or lazy,
	// never both. Nothing writes to either map after Load.
	lazy map[string]json.RawMessage
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
	starts := 0
	var hasPackage, hasCommand bool
	for _, m := range members {
		switch m.Key {
		case "title":
			e.Title, err = decodeString(m.Value)
		case "description":
			e.Description, err = decodeString(m.Value)
		case "source":
			e.Source, err = decodeString(m.Value)
		case "notes":
			e.Notes, err = decodeStrings(m.Value)
		case "package":
			starts++
			hasPackage = true
			e.Package, err = parsePackage(m.Value)
		case "command":
			starts++
			hasCommand = true
			e.Command, err = decodeStrings(m.Value)
		case "remote":
			starts++
			e.Remote, err = parseRemote(m.Value)
			e.Package.Manager = ManagerRemote
		case "unavailable":
			starts++
			e.Unavailable, err = parseUnavailable(m.Value)
			e.Package.Manager = ManagerUnavailable
		case "args":
			e.Args, err = decodeStrings(m.Value)
		case "env":
			e.Env, err = parseEnv(m.Value)
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
	case hasCommand && !hasPackage:
		e.Package.Manager = ManagerCommand
	case hasCommand && e.Package.Manager == ManagerCommand:
		starts-- // {"package": {"manager": "command"}, "command": [...]} says it twice
	case hasCommand:
		return Entry{}, fmt.Errorf(`command: only for manager "command", not %q`, e.Package.Manager)
	}
	switch {
	case starts == 0:
		return Entry{}, errors.New(`needs one of "package", "command", "remote", "unavailable"`)
	case starts > 1:
		return Entry{}, errors.New(`has more than one of "package", "command", "remote", "unavailable"`)
	}
	if e.Package.Manager == ManagerCommand && (len(e.Command) == 0 || e.Command[0] == "") {
		return Entry{}, errors.New("command: must name an executable")
	}
	for _, a := range slices.Concat(e.Command, e.Args) {
		if strings.ContainsRune(a, 0) {
			return Entry{}, errors.New("command and args must not contain NUL bytes")
		}
	}
	if err := checkDestinations(e); err != nil {
		return Entry{}, err
	}
	return e, nil
}

// checkDestinations holds the properties' destinations and the env templates to what the entry's
// start kind can deliver, so that a catalog mistake fails Parse instead of dropping a secret.
func checkDestinations(e Entry) error {
	remote := e.Package.Manager == ManagerRemote
	for _, name := range slices.Sorted(maps.Keys(e.Properties)) {
		p := e.Properties[name]
		fail := func(format string, args ...any) error {
			return fmt.Errorf("properties: %q: %s", name, fmt.Sprintf(format, args...))
		}
		switch {
		case remote && p.Header == "" && p.Unused == "":
			return fail("a remote entry passes properties as headers (or not at all)")
		case p.Header != "" && !remote && e.Package.Manager != ManagerUnavailable:
			return fail("header: only for remote entries")
		case p.Type == TypeArray && (p.Arg != "" || p.Header != "" || p.Format != ""):
			return fail("a list goes to positional, flag or env")
		}
		for _, t := range []struct{ field, tmpl string }{{"arg", p.Arg}, {"format", p.Format}} {
			field, tmpl := t.field, t.tmpl
			if tmpl == "" {
				continue
			}
			refs := placeholders(tmpl)
			if !slices.Contains(refs, name) {
				return fail("%s: must contain {%s}", field, name)
			}
			if len(refs) != 1 {
				return fail("%s: may name only its own property", field)
			}
		}
	}
	for _, k := range slices.Sorted(maps.Keys(e.Env)) {
		for _, ref := range placeholders(e.Env[k]) {
			if _, ok := e.Properties[ref]; !ok {
				return fmt.Errorf("env: %s: {%s} is not a property of this entry", k, ref)
			}
		}
		for _, p := range e.Properties {
			if p.Env == k {
				return fmt.Errorf("env: %s is also set by a property", k)
			}
		}
	}
	if remote && (len(e.Env) > 0 || len(e.Args) > 0) {
		return errors.New("a remote entry has no env or args")
	}
	return nil
}

func parseRemote(raw json.RawMessage) (*Remote, error) {
	members, err := readObject(raw)
	if err != nil {
		return nil, err
	}
	r := &Remote{}
	for _, m := range members {
		if m.Key != "url" {
			return nil, fmt.Errorf("unknown field %q", m.Key)
		}
		if r.URL, err = decodeString(m.Value); err != nil {
			return nil, fmt.Errorf("url: %w", err)
		}
	}
	if _, err := checkURL(r.URL); err != nil {
		return nil, fmt.Errorf("url: %w", err)
	}
	return r, nil
}

func parseUnavailable(raw json.RawMessage) (*Unavailable, error) {
	members, err := readObject(raw)
	if err != nil {
		return nil, err
	}
	u := &Unavailable{}
	for _, m := range members {
		switch m.Key {
		case "reason":
			u.Reason, err = decodeString(m.Value)
		case "howTo":
			u.HowTo, err = decodeString(m.Value)
		default:
			return nil, fmt.Errorf("unknown field %q", m.Key)
		}
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.Key, err)
		}
	}
	if u.Reason == "" || u.HowTo == "" {
		return nil, errors.New("needs reason and howTo")
	}
	return u, nil
}

func parseEnv(raw json.RawMessage) (map[string]string, error) {
	members, err := readObject(raw)
	if err != nil {
		return nil, err
	}
	env := make(map[string]string, len(members))
	for _, m := range members {
		if !validEnvName(m.Key) || m.Key == tokenEnv {
			return nil, fmt.Errorf("%q is not a usable environment variable name", m.Key)
		}
		v, err := decodeString(m.Value)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", m.Key, err)
		}
		if strings.ContainsRune(v, 0) {
			return nil, fmt.Errorf("%s: contains a NUL byte", m.Key)
		}
		env[m.Key] = v
	}
	return env, nil
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
		case "version":
			p.Version = s
		case "unverified":
			p.Unverified = s
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
	if p.Version != "" && !validVersion(p.Version) {
		return Package{}, errors.New("version: must be an exact version such as 1.2.3")
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
		if p.Bin != "" || p.Version != "" {
			return Package{}, errors.New(`bin and version: not allowed for manager "builtin"`)
		}
	case ManagerCommand:
		if p.Name != "" || p.Bin != "" || p.Version != "" {
			return Package{}, errors.New(`name and bin: not allowed for manager "command" (use "command")`)
		}
	default:
		return Package{}, fmt.Errorf("manager: %q is not one of npm, pypi, builtin, command (remote and unavailable entries say \"remote\" or \"unavailable\" instead of \"package\")", p.Manager)
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
		case "type", "items", "description", "flag", "env", "arg", "header", "format", "unused", "note":
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
		case "arg":
			p.Arg = s
		case "header":
			p.Header = s
		case "format":
			p.Format = s
		case "unused":
			p.Unused = s
		case "note":
			p.Note = s
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
	for _, set := range []bool{p.Positional, p.Flag != "", p.Arg != "", p.Env != "", p.Header != "", p.Unused != ""} {
		if set {
			ways++
		}
	}
	if ways != 1 {
		return Property{}, errors.New("needs exactly one of positional, flag, arg, env, header, unused")
	}
	if p.Format != "" && p.Env == "" && p.Header == "" {
		return Property{}, errors.New("format: only with env or header")
	}
	if p.Arg != "" && strings.ContainsRune(p.Arg, 0) {
		return Property{}, errors.New("arg: must not contain NUL bytes")
	}
	if p.Header != "" && (!validToken(p.Header) || slices.Contains(transportHeaders, textproto.CanonicalMIMEHeaderKey(p.Header))) {
		return Property{}, fmt.Errorf("header: %q is not a header a server may be sent", p.Header)
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
	c := &Catalog{entries: map[string]Entry{}}
	var ok bool
	if c.lazy, ok = splitServers(embedded); !ok {
		var err error
		if c, err = Parse(embedded); err != nil {
			return nil, fmt.Errorf("embedded catalog: %w", err)
		}
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
	for name, e := range o.entries {
		c.entries[name] = e
		delete(c.lazy, name)
	}
	return c, nil
}

// Lookup returns a copy of the entry called name.
func (c *Catalog) Lookup(name string) (Entry, bool) {
	if c == nil {
		return Entry{}, false
	}
	if e, ok := c.entries[name]; ok {
		return e.clone(), true
	}
	if raw, ok := c.lazy[name]; ok {
		return parseLazy(name, raw), true // parsed afresh: nothing to share, nothing to copy
	}
	return Entry{}, false
}

// Names returns the entry names, sorted.
func (c *Catalog) Names() []string {
	if c == nil {
		return nil
	}
	return slices.Sorted(func(yield func(string) bool) {
		for n := range c.entries {
			if !yield(n) {
				return
			}
		}
		for n := range c.lazy {
			if !yield(n) {
				return
			}
		}
	})
}

// Entries returns copies of all entries, sorted by name.
func (c *Catalog) Entries() []Entry {
	names := c.Names()
	out := make([]Entry, 0, len(names))
	for _, n := range names {
		e, _ := c.Lookup(n)
		out = append(out, e)
	}
	return out
}

func (e Entry) clone() Entry {
	e.Command = slices.Clone(e.Command)
	e.Args = slices.Clone(e.Args)
	e.Env = maps.Clone(e.Env)
	e.Notes = slices.Clone(e.Notes)
	e.Properties = maps.Clone(e.Properties)
	if e.Remote != nil {
		r := *e.Remote
		e.Remote = &r
	}
	if e.Unavailable != nil {
		u := *e.Unavailable
		e.Unavailable = &u
	}
	return e
}
