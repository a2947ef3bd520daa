package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"net/textproto"
	"slices"
	"strings"
)

// reservedKeys are config fields with a meaning of their own in every entry, so no catalog
// property may take their name: runCmd would silently turn the entry into a local server.
func reservedKeys() []string {
	return []string{"runCmd", "run_cmd", "installCmd", "install_cmd", "envs", "cwd"}
}

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
	// A property name is a key of the config's server object, and every name in the E2B schema
	// is a word ([A-Za-z0-9_]): a space in one is a catalog author's typo, one a config written
	// to the schema would never match and a {name} template could not refer to.
	if name == "" || strings.ContainsFunc(name, isSpaceOrControl) {
		return Property{}, errors.New("invalid property name (empty, or with a space or control character)")
	}
	if slices.Contains(reservedKeys(), name) {
		return Property{}, fmt.Errorf("name is reserved (%s)", strings.Join(reservedKeys(), ", "))
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
		case "public":
			p.Public, err = decodeBool(m.Value)
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
	if p.Header != "" && (!validToken(p.Header) || slices.Contains(transportHeaders(), textproto.CanonicalMIMEHeaderKey(p.Header))) {
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
