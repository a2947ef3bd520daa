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
	// Public marks a value that is not a secret (a directory to serve, a port, a switch), so
	// redaction leaves it readable: an error such as "cannot access directory /data" is useless
	// with the directory masked. Unmarked values are masked wherever they could be echoed.
	Public bool `json:"public,omitempty"`
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
