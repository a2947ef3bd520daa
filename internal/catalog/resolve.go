package catalog

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
)

// MaxServers is the most servers one config may ask for, the same limit CubeAPI enforces.
const MaxServers = 64

// ResolveOptions tunes Resolve. The zero value works.
type ResolveOptions struct {
	// Self is the gateway's own executable, run as `<Self> builtin <name>` for builtin entries.
	// "" means os.Executable().
	Self string
	// LookPath reports whether an executable is on PATH; it decides between an installed
	// package bin and its runner (npx, uvx). nil means exec.LookPath.
	LookPath func(string) (string, error)
	// LookupEnv returns the gateway's environment variables, for ${VAR} in the headers of
	// remote servers. nil means os.LookupEnv.
	LookupEnv func(string) (string, bool)
}

// Resolved is a validated config.
type Resolved struct {
	Servers  []ServerSpec // sorted by Name, at most MaxServers
	Warnings []string     // things ignored, for the gateway log; never contain config values
}

// Resolve validates the mcp config (the JSON object given to `mcp-gateway --config`) against
// the catalog in one pass, before anything starts, and returns one ServerSpec per key. Servers
// are checked in sorted key order and the first problem is returned, so the same config always
// gives the same error.
//
// Each key is, in this order of precedence:
//   - any key whose entry has url: a remote streamable-HTTP server (with optional headers);
//     url together with runCmd, or on a github/ key, is an error. Except a catalog name whose
//     entry has a property called url: there url is that property (a server's API address).
//   - "github/<owner>/<repo>": a GitHub server; runCmd is required.
//   - any other key whose entry has runCmd (or run_cmd): a local server. This holds even when
//     the key is also a catalog name: an explicit command is what the user asked for.
//   - a catalog name: the entry's other fields are the entry's properties. An unavailable
//     entry (one that needs Docker) is an error saying why and how to run it anyway; a remote
//     entry becomes a remote server with headers filled from the properties.
//
// Errors are *ConfigError, *UnknownServerError or *UnavailableError (all match
// ErrInvalidConfig), or an error matching ErrNotInstalled. Neither errors nor warnings ever contain a value from the config.
func Resolve(raw []byte, cat *Catalog, opts ResolveOptions) (*Resolved, error) {
	if t := jsonType(raw); t != "object" {
		return nil, &ConfigError{Err: fmt.Errorf("config must be a JSON object keyed by server name, got %s", t)}
	}
	members, err := readObject(raw)
	if err != nil {
		return nil, &ConfigError{Err: fmt.Errorf("config: %w", err)}
	}
	if len(members) > MaxServers {
		return nil, &ConfigError{Err: fmt.Errorf("config asks for %d servers; at most %d are allowed", len(members), MaxServers)}
	}
	slices.SortFunc(members, func(a, b member) int { return strings.Compare(a.Key, b.Key) })
	r := &resolver{cat: cat, opts: opts, out: &Resolved{}}
	if len(members) == 0 {
		r.warn("config has no servers: the gateway serves no tools")
	}
	var errs []error
	for _, m := range members {
		spec, err := r.server(m.Key, m.Value)
		if err != nil {
			errs = append(errs, err) // and on: every server's problems at once
			continue
		}
		r.out.Servers = append(r.out.Servers, spec)
	}
	if len(errs) > 0 {
		return nil, joinProblems(errs)
	}
	return r.out, nil
}

// resolver carries what every server needs during one Resolve call.
type resolver struct {
	cat  *Catalog
	opts ResolveOptions
	out  *Resolved
}

func (r *resolver) warn(format string, args ...any) {
	r.out.Warnings = append(r.out.Warnings, fmt.Sprintf(format, args...))
}

func (r *resolver) server(name string, raw json.RawMessage) (ServerSpec, error) {
	fail := func(field string, err error) (ServerSpec, error) {
		return ServerSpec{}, &ConfigError{Server: name, Field: field, Err: err}
	}
	if name == "" {
		return ServerSpec{}, &ConfigError{Err: errors.New("config has a server with an empty name")}
	}
	if strings.ContainsFunc(name, func(r rune) bool { return r < ' ' || r == 0x7f || r == '\uFFFD' }) {
		return ServerSpec{}, &ConfigError{Err: fmt.Errorf("server name %q contains control characters or invalid UTF-8", name)}
	}
	if t := jsonType(raw); t != "object" {
		return fail("", fmt.Errorf("must be a JSON object, got %s", t))
	}
	members, err := readObject(raw)
	if err != nil {
		return fail("", err)
	}
	fields := fieldMap(members)
	filter, err := takeToolFilter(name, fields)
	if err != nil {
		return ServerSpec{}, err
	}
	protocol, err := takeProtocol(name, fields)
	if err != nil {
		return ServerSpec{}, err
	}
	spec, err := r.serverFields(name, fields)
	spec.Tools, spec.Protocol = filter, protocol
	return spec, err
}

// serverFields resolves a server's entry by its kind (see Resolve).
func (r *resolver) serverFields(name string, fields map[string]json.RawMessage) (ServerSpec, error) {
	if _, ok := fields["url"]; ok && !r.urlIsProperty(name) {
		return r.remote(name, fields)
	}
	runCmd, hasRun, err := aliased(name, fields, "runCmd", "run_cmd")
	if err != nil {
		return ServerSpec{}, err
	}
	switch {
	case strings.HasPrefix(name, "github/"):
		return r.github(name, fields, runCmd, hasRun)
	case hasRun:
		return r.local(name, fields, runCmd)
	}
	entry, ok := r.cat.Lookup(name)
	if !ok {
		known := r.cat.Names()
		return ServerSpec{}, &UnknownServerError{Server: name, Known: known, Suggest: suggest(name, known)}
	}
	return r.catalogServer(entry, fields)
}

// urlIsProperty reports whether name is a catalog entry with a property called url (a CircleCI
// or GitLab server's API address): its url is that property, not a remote MCP endpoint.
func (r *resolver) urlIsProperty(name string) bool {
	e, ok := r.cat.Lookup(name)
	if !ok {
		return false
	}
	_, ok = e.Properties["url"]
	return ok
}

// github resolves a github/<owner>/<repo> key. Owner and repo become path components of the
// clone directory, so they are held to GitHub's own character sets, and a repo may not start
// with '.', which rules out "." and "..".
func (r *resolver) github(name string, fields map[string]json.RawMessage, runCmd string, hasRun bool) (ServerSpec, error) {
	fail := func(field string, err error) (ServerSpec, error) {
		return ServerSpec{}, &ConfigError{Server: name, Field: field, Err: err}
	}
	parts := strings.Split(name, "/")
	if len(parts) != 3 {
		return fail("", errors.New("a GitHub server key must be github/<owner>/<repo>"))
	}
	owner, repo := parts[1], parts[2]
	if !validGitHubOwner(owner) {
		return fail("", fmt.Errorf("owner %q is not a valid GitHub user or organization name", owner))
	}
	if !validGitHubRepo(repo) || strings.HasPrefix(repo, ".") {
		return fail("", fmt.Errorf("repo %q is not a valid GitHub repository name", repo))
	}
	if !hasRun {
		return fail("runCmd", errors.New("is required for a GitHub server"))
	}
	spec := ServerSpec{Name: name, Kind: KindGitHub, Shell: runCmd, Owner: owner, Repo: repo}
	if err := r.shellFields(&spec, fields, false); err != nil {
		return ServerSpec{}, err
	}
	return spec, nil
}

// local resolves a key with runCmd that is not a GitHub key.
func (r *resolver) local(name string, fields map[string]json.RawMessage, runCmd string) (ServerSpec, error) {
	spec := ServerSpec{Name: name, Kind: KindLocal, Shell: runCmd}
	if _, ok := r.cat.Lookup(name); ok {
		r.warn("server %q: runCmd given, so the catalog entry of the same name is not used", name)
	}
	if err := r.shellFields(&spec, fields, true); err != nil {
		return ServerSpec{}, err
	}
	return spec, nil
}

// shellFields fills the fields shared by github and local servers (runCmd is already in Shell)
// and warns about any others.
func (r *resolver) shellFields(spec *ServerSpec, fields map[string]json.RawMessage, allowCwd bool) error {
	fail := func(field string, err error) error {
		return &ConfigError{Server: spec.Name, Field: field, Err: err}
	}
	if strings.TrimSpace(spec.Shell) == "" {
		return fail("runCmd", errors.New("is empty"))
	}
	if strings.ContainsRune(spec.Shell, 0) {
		return fail("runCmd", errors.New("contains a NUL byte"))
	}
	install, _, err := aliased(spec.Name, fields, "installCmd", "install_cmd")
	if err != nil {
		return err
	}
	if strings.ContainsRune(install, 0) {
		return fail("installCmd", errors.New("contains a NUL byte"))
	}
	spec.Install = install
	known := []string{"runCmd", "run_cmd", "installCmd", "install_cmd", "envs"}
	if allowCwd {
		known = append(known, "cwd")
		if raw, ok := fields["cwd"]; ok {
			dir, err := decodeString(raw)
			switch {
			case err != nil:
				return fail("cwd", err)
			case !filepath.IsAbs(dir) || strings.ContainsRune(dir, 0):
				return fail("cwd", errors.New("must be an absolute path"))
			}
			spec.Dir = filepath.Clean(dir)
		}
	}
	if spec.Env, err = envs(spec.Name, fields, nil); err != nil {
		return err
	}
	for _, k := range sortedKeys(fields) {
		if !slices.Contains(known, k) {
			r.warn("server %q: unknown field %q ignored", spec.Name, k)
		}
	}
	return nil
}

// aliased reads a string field spelled camelCase (JS SDK) or snake_case (Python SDK). Both
// spellings may appear only with the same value. ok reports whether either was present.
func aliased(server string, fields map[string]json.RawMessage, camel, snake string) (val string, ok bool, err error) {
	fail := func(field string, err error) (string, bool, error) {
		return "", true, &ConfigError{Server: server, Field: field, Err: err}
	}
	c, hasC := fields[camel]
	s, hasS := fields[snake]
	if hasC {
		if val, err = decodeString(c); err != nil {
			return fail(camel, err)
		}
	}
	if hasS {
		sv, err := decodeString(s)
		if err != nil {
			return fail(snake, err)
		}
		if hasC && sv != val {
			return fail(camel, fmt.Errorf("given as both %s and %s with different values", camel, snake))
		}
		val = sv
	}
	return val, hasC || hasS, nil
}

// envs reads the optional "envs" object and merges it into fromProps (the env-mapped
// properties), refusing a variable set both ways. Messages name variables, never values.
func envs(server string, fields map[string]json.RawMessage, fromProps map[string]string) (map[string]string, error) {
	fail := func(err error) (map[string]string, error) {
		return nil, &ConfigError{Server: server, Field: "envs", Err: err}
	}
	raw, ok := fields["envs"]
	if !ok {
		return fromProps, nil
	}
	if t := jsonType(raw); t != "object" {
		return fail(fmt.Errorf("must be an object of NAME: \"value\" strings, got %s", t))
	}
	members, err := readObject(raw)
	if err != nil {
		return fail(err)
	}
	out := fromProps
	for _, m := range members {
		switch {
		case m.Key == tokenEnv:
			return fail(fmt.Errorf("variable %s is reserved for the gateway", tokenEnv))
		case !validEnvName(m.Key):
			return fail(fmt.Errorf("variable %q: invalid name (letters, digits and _, not starting with a digit)", m.Key))
		}
		v, err := decodeString(m.Value)
		if err != nil {
			return fail(fmt.Errorf("variable %q: value %w", m.Key, err))
		}
		if strings.ContainsRune(v, 0) {
			return fail(fmt.Errorf("variable %q: value contains a NUL byte", m.Key))
		}
		if _, dup := out[m.Key]; dup {
			return fail(fmt.Errorf("variable %q is also set by a property", m.Key))
		}
		if out == nil {
			out = make(map[string]string)
		}
		out[m.Key] = v
	}
	return out, nil
}

// catalogServer resolves a catalog key: the entry's fields are its properties (plus "envs" for
// entries that start a process).
func (r *resolver) catalogServer(e Entry, fields map[string]json.RawMessage) (ServerSpec, error) {
	if u := e.Unavailable; u != nil {
		return ServerSpec{}, &UnavailableError{Server: e.Name, Reason: u.Reason, HowTo: u.HowTo}
	}
	a, err := applyProperties(e, fields)
	if err != nil {
		return ServerSpec{}, err
	}
	for _, k := range sortedKeys(fields) {
		_, known := e.Properties[k]
		switch {
		case known:
			if p := e.Properties[k]; p.Unused != "" {
				r.warn("server %q: property %q accepted but not passed on: %s", e.Name, k, p.Unused)
			}
		case k == "envs" && e.Remote == nil:
		default:
			r.warn("server %q: unknown property %q ignored", e.Name, k)
		}
	}
	if e.Remote != nil {
		return ServerSpec{Name: e.Name, Kind: KindRemote, URL: e.Remote.URL, Headers: a.headers}, nil
	}
	env, err := envs(e.Name, fields, a.env)
	if err != nil {
		return ServerSpec{}, err
	}
	public := a.publicEnv
	for _, k := range slices.Sorted(maps.Keys(e.Env)) {
		v, ok := fill(e.Env[k], a.values)
		if !ok {
			continue // names a property the config left out
		}
		constant := len(placeholders(e.Env[k])) == 0
		if _, dup := env[k]; dup {
			if constant {
				continue // the user's own envs override a catalog default
			}
			return ServerSpec{}, &ConfigError{Server: e.Name, Field: "envs", Err: fmt.Errorf("variable %q is set by the catalog entry from a property", k)}
		}
		if env == nil {
			env = make(map[string]string)
		}
		env[k] = v
		if constant || fromPublic(e, e.Env[k]) {
			public = append(public, k)
		}
	}
	argv, err := r.command(e)
	if err != nil {
		return ServerSpec{}, err
	}
	return ServerSpec{Name: e.Name, Kind: KindCatalog, Command: append(argv, a.args...), Env: env,
		PublicEnv: public, ArgSecrets: a.argValues}, nil
}

// fromPublic reports whether template, a value of e.Env, is made only of Public properties.
func fromPublic(e Entry, template string) bool {
	for _, name := range placeholders(template) {
		if !e.Properties[name].Public {
			return false
		}
	}
	return true
}

// command is the argv that starts entry e, before property arguments: the installed bin when
// `mcp-gateway pull` (or the template) put it on PATH, else the package runner, which downloads
// the package on first start. When neither is available the server cannot start at all, and
// saying so now beats a supervisor error later.
func (r *resolver) command(e Entry) ([]string, error) {
	lookPath := r.opts.LookPath
	if lookPath == nil {
		lookPath = exec.LookPath
	}
	found := func(name string) bool { _, err := lookPath(name); return err == nil }
	notInstalled := func(runner string) error {
		return fmt.Errorf("server %q: %w: %s is not on PATH and neither is %s; %s, or pre-install the server in the template with `mcp-gateway pull %s` (which needs it too)",
			e.Name, ErrNotInstalled, e.Package.Bin, runner, ToolHint(runner), e.Name)
	}
	var argv []string
	switch p := e.Package; p.Manager {
	case ManagerNPM:
		switch {
		case found(p.Bin):
			argv = []string{p.Bin}
		case found("npx"):
			argv = []string{"npx", "-y", p.npmSpec()}
		default:
			return nil, notInstalled("npx")
		}
	case ManagerPyPI:
		switch {
		case found(p.Bin):
			argv = []string{p.Bin}
		case !found("uvx"):
			return nil, notInstalled("uvx")
		case p.Bin == p.Name && p.Version != "":
			argv = []string{"uvx", p.Name + "@" + p.Version} // uvx's own spelling for a pinned tool
		case p.Bin == p.Name:
			argv = []string{"uvx", p.Name}
		default:
			argv = []string{"uvx", "--from", p.pypiSpec(), p.Bin}
		}
	case ManagerBuiltin:
		self := r.opts.Self
		if self == "" {
			var err error
			if self, err = os.Executable(); err != nil {
				return nil, fmt.Errorf("server %q: find the gateway executable: %w", e.Name, err)
			}
		}
		argv = []string{self, "builtin", p.Name}
	case ManagerCommand:
		argv = slices.Clone(e.Command)
	case ManagerRemote, ManagerUnavailable:
		return nil, fmt.Errorf("server %q: a %s entry has no command", e.Name, p.Manager)
	default:
		return nil, fmt.Errorf("server %q: unknown package manager %q", e.Name, p.Manager)
	}
	return append(argv, e.Args...), nil
}

func sortedKeys(m map[string]json.RawMessage) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// npmSpec is the package as npx and npm install take it: name@version when pinned.
func (p Package) npmSpec() string {
	if p.Version == "" {
		return p.Name
	}
	return p.Name + "@" + p.Version
}

// pypiSpec is the package as uvx and uv tool install take it: name==version when pinned.
func (p Package) pypiSpec() string {
	if p.Version == "" {
		return p.Name
	}
	return p.Name + "==" + p.Version
}
