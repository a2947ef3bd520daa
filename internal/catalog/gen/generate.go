package main

import (
	"fmt"
	"maps"
	"regexp"
	"slices"
	"strings"
)

// schema is the part of the E2B server schema the catalog follows.
type schema struct {
	Properties map[string]struct {
		Title       string                    `json:"title"`
		Description string                    `json:"description"`
		Required    []string                  `json:"required"`
		Properties  map[string]schemaProperty `json:"properties"`
	} `json:"properties"`
}

type schemaProperty struct {
	Type        string `json:"type"`
	Description string `json:"description"`
	Items       *struct {
		Type string `json:"type"`
	} `json:"items"`
}

// fact is one server of data/e2b-catalog-facts.json (its .md describes every field).
type fact struct {
	Title       string            `json:"title"`
	Description string            `json:"description"`
	SourceRepo  string            `json:"sourceRepo"`
	Properties  []factProperty    `json:"e2bProperties"`
	FixedEnv    map[string]string `json:"fixedEnv"`
	FixedArgs   []string          `json:"fixedArgs"`
	Notes       []string          `json:"notes"`
	Start       struct {
		NPM *struct {
			Package string   `json:"package"`
			Bin     string   `json:"bin"`
			Args    []string `json:"args"`
		} `json:"npm"`
		PyPI *struct {
			Package       string   `json:"package"`
			Script        string   `json:"script"`
			Args          []string `json:"args"`
			ListedVersion string   `json:"listedVersion"`
		} `json:"pypi"`
		Remote *struct {
			URL       string `json:"url"`
			Transport string `json:"transport"`
		} `json:"remote"`
		DockerOnly string `json:"dockerOnly"`
		GoModule   string `json:"goModule"`
		Crate      string `json:"crate"`
		FromSource *struct {
			Runtime string `json:"runtime"`
		} `json:"fromSource"`
		MavenArtifact string `json:"mavenArtifact"`
	} `json:"start"`
}

type factProperty struct {
	Name        string `json:"name"`
	MappingNote string `json:"mappingNote"`
	To          []struct {
		Env           string `json:"env"`
		ValueTemplate string `json:"valueTemplate"`
		Arg           string `json:"arg"`
		Header        string `json:"header"`
		Format        string `json:"format"`
		Volume        string `json:"volume"`
		DockerUser    bool   `json:"dockerUser"`
	} `json:"to"`
}

// The catalog.json shapes, as internal/catalog parses them.
type (
	catalogDoc struct {
		Servers map[string]*entry `json:"servers"`
	}
	entry struct {
		Title       string               `json:"title,omitempty"`
		Description string               `json:"description"`
		Package     *pkg                 `json:"package,omitempty"`
		Remote      *remote              `json:"remote,omitempty"`
		Unavailable *unavailable         `json:"unavailable,omitempty"`
		Args        []string             `json:"args,omitempty"`
		Env         map[string]string    `json:"env,omitempty"`
		Properties  map[string]*property `json:"properties,omitempty"`
		Source      string               `json:"source,omitempty"`
		Notes       []string             `json:"notes,omitempty"`
	}
	pkg struct {
		Manager    string `json:"manager"`
		Name       string `json:"name"`
		Version    string `json:"version,omitempty"`
		Bin        string `json:"bin,omitempty"`
		Unverified string `json:"unverified,omitempty"`
	}
	remote struct {
		URL string `json:"url"`
	}
	unavailable struct {
		Reason string `json:"reason"`
		HowTo  string `json:"howTo"`
	}
	property struct {
		Type        string `json:"type"`
		Items       string `json:"items,omitempty"`
		Required    bool   `json:"required,omitempty"`
		Description string `json:"description,omitempty"`
		Positional  bool   `json:"positional,omitempty"`
		Flag        string `json:"flag,omitempty"`
		Arg         string `json:"arg,omitempty"`
		Env         string `json:"env,omitempty"`
		Header      string `json:"header,omitempty"`
		Format      string `json:"format,omitempty"`
		Unused      string `json:"unused,omitempty"`
		Note        string `json:"note,omitempty"`
		Public      bool   `json:"public,omitempty"`
	}
)

const (
	pypiUnverified = "PyPI is not reachable where this catalog was made: package, script and version come from the server's source and a PyPI name list, unchecked"
	npmUnverified  = "not found in the npm registry reachable where this catalog was made: the name comes from the server's package.json; npx runs the latest version"
	sameMount      = "E2B only bind-mounts this path into the server's Docker container; started here, the server sees the sandbox's files directly"
	dockerUser     = "E2B only sets the Docker container user with it; meaningless for a process started here"
)

// generate builds catalog.json: one entry per E2B key, plus the gateway's own entries.
func generate(in inputs) ([]byte, error) {
	doc := catalogDoc{Servers: map[string]*entry{}}
	for _, key := range slices.Sorted(maps.Keys(in.schema.Properties)) {
		f, ok := in.facts[key]
		if !ok {
			return nil, fmt.Errorf("E2B key %q has no facts", key)
		}
		e, err := entryFor(key, in, f)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", key, err)
		}
		doc.Servers[key] = e
	}
	for key := range in.facts {
		if _, ok := in.schema.Properties[key]; !ok {
			return nil, fmt.Errorf("facts key %q is not in the E2B schema", key)
		}
	}
	for key, fix := range overrides() {
		e, ok := doc.Servers[key]
		if !ok {
			e = &entry{}
			doc.Servers[key] = e
		}
		if err := fix(e); err != nil {
			return nil, fmt.Errorf("override %s: %w", key, err)
		}
	}
	for _, e := range doc.Servers {
		for name, p := range e.Properties {
			p.Public = public(name, p)
		}
	}
	return marshal(doc)
}

func entryFor(key string, in inputs, f fact) (*entry, error) {
	s := in.schema.Properties[key]
	e := &entry{Title: f.Title, Description: f.Description, Source: f.SourceRepo, Notes: f.Notes}
	if e.Description == "" {
		e.Description = s.Description
	}
	st := f.Start
	switch {
	case st.NPM != nil:
		p := &pkg{Manager: "npm", Name: st.NPM.Package, Bin: st.NPM.Bin}
		if strings.Contains(p.Bin, "/") {
			// The facts give a scoped package's only bin its full name; npm names it after
			// the package without the scope.
			p.Bin = unscoped(p.Name)
		}
		if pin, ok := in.pins[p.Name]; ok {
			if !slices.Contains(pin.Bins, p.Bin) {
				return nil, fmt.Errorf("npm %s has bins %v, not %s", p.Name, pin.Bins, p.Bin)
			}
			p.Version = pin.Version
		} else {
			p.Unverified = npmUnverified
		}
		e.Package, e.Args = p, slices.Clone(st.NPM.Args)
	case st.PyPI != nil:
		e.Package = &pkg{Manager: "pypi", Name: st.PyPI.Package, Bin: st.PyPI.Script, Version: st.PyPI.ListedVersion, Unverified: pypiUnverified}
		e.Args = slices.Clone(st.PyPI.Args)
	case st.Remote != nil && st.Remote.Transport == "sse":
		e.Unavailable = &unavailable{
			Reason: "its hosted endpoint (" + st.Remote.URL + ") speaks the older HTTP+SSE transport; the gateway connects to streamable-HTTP servers only",
			HowTo:  `give this key a "runCmd" that bridges the endpoint to stdio`,
		}
	case st.Remote != nil:
		e.Remote = &remote{URL: st.Remote.URL}
	default:
		e.Unavailable = dockerOnly(key, f)
	}
	e.Properties = map[string]*property{}
	usedEnv := map[string]bool{} // fixed env values taken over by a property
	facts := map[string]factProperty{}
	for _, fp := range f.Properties {
		facts[fp.Name] = fp
	}
	for name, sp := range s.Properties {
		fp, ok := facts[name]
		if !ok {
			return nil, fmt.Errorf("property %q has no facts", name)
		}
		p := &property{Type: sp.Type, Required: slices.Contains(s.Required, name), Description: sp.Description}
		if sp.Items != nil {
			p.Items = sp.Items.Type
		}
		if err := destination(e, f, fp, p, usedEnv); err != nil {
			return nil, fmt.Errorf("property %q: %w", name, err)
		}
		e.Properties[name] = p
	}
	for k, v := range f.FixedEnv {
		if usedEnv[k] || e.Remote != nil {
			continue
		}
		if slices.ContainsFunc(slices.Collect(maps.Values(e.Properties)), func(p *property) bool { return p.Env == k }) {
			continue // a property sets it
		}
		if e.Env == nil {
			e.Env = map[string]string{}
		}
		e.Env[k] = v
	}
	// Fixed arguments that carry a property ("--auth-token", "{authToken}") are the property's
	// destination, decided above; the constant ones are the entry's args.
	for i := 0; i < len(f.FixedArgs) && e.Package != nil; i++ {
		a := f.FixedArgs[i]
		switch {
		case strings.Contains(a, "{"):
		case i+1 < len(f.FixedArgs) && strings.HasPrefix(a, "-") && strings.HasPrefix(f.FixedArgs[i+1], "{"):
			i++
		default:
			e.Args = append(e.Args, a)
		}
	}
	return e, nil
}

var (
	// {paths|volume-target|into}: each element as its own argument.
	eachPathArg = regexp.MustCompile(`^\{(\w+)\|volume-target\|into\}$`)
	// {paths|volume|into} or {data}:{data}: the same path inside the container.
	samePath = regexp.MustCompile(`^\{(\w+)(\|or:\[\])?\|volume\|into\}$|^\{(\w+)\}:\{(\w+)\}$`)
	// {kubeconfig}:/root/.kube: a host path mounted at a container path.
	mountAt = regexp.MustCompile(`^\{(\w+)\}:(/.*)$`)
	// filters inside a value template: {logPath|volume-target} is the path itself here.
	filter = regexp.MustCompile(`\{(\w+)\|[^}]*\}`)
)

// destination decides where a property's value goes when the server starts without Docker,
// from where the registry sends it (fp.To), in this order: a header of a remote server; an env
// var the server reads; a positional path list; an argument; a fixed env var that pointed at the
// container side of a bind mount (it gets the path itself); otherwise nowhere, with the reason.
func destination(e *entry, f fact, fp factProperty, p *property, usedEnv map[string]bool) error {
	for _, t := range fp.To {
		if t.Header != "" && e.Package == nil {
			p.Header = t.Header
			if t.Format != "" && t.Format != "{value}" {
				p.Format = strings.ReplaceAll(t.Format, "{value}", "{"+fp.Name+"}")
			}
			return nil
		}
	}
	for _, t := range fp.To {
		if t.Env != "" {
			p.Env = t.Env
			if t.ValueTemplate != "" {
				p.Format = filter.ReplaceAllString(t.ValueTemplate, "{$1}")
			} else if len(fp.To) == 1 {
				p.Note = fp.MappingNote
			}
			return nil
		}
	}
	for _, t := range fp.To {
		switch {
		case t.Arg == "":
		case eachPathArg.MatchString(t.Arg):
			p.Positional = true
			return nil
		default:
			if f, ok := strings.CutSuffix(t.Arg, " {"+fp.Name+"}"); ok && !strings.Contains(f, " ") {
				p.Flag = f
			} else {
				p.Arg = t.Arg
			}
			p.Note = "passed as an argument, as the registry's image does (visible to other processes in the sandbox): the server reads it nowhere else"
			return nil
		}
	}
	for _, t := range fp.To {
		if m := mountAt.FindStringSubmatch(t.Volume); m != nil && !samePath.MatchString(t.Volume) {
			for k, v := range f.FixedEnv {
				if v == m[2] || strings.HasPrefix(v, m[2]+"/") {
					p.Env, usedEnv[k] = k, true
					if v != m[2] {
						p.Format = "{" + fp.Name + "}" + strings.TrimPrefix(v, m[2])
					}
					p.Note = "the image mounts it at " + m[2] + " and points " + k + " there; here " + k + " gets the path itself"
					return nil
				}
			}
		}
	}
	for _, t := range fp.To {
		switch {
		case samePath.MatchString(t.Volume):
			p.Unused = sameMount
			return nil
		case t.Volume != "":
			p.Unused = "E2B only bind-mounts it into the server's Docker container (" + t.Volume + "); started here, the server looks for it at its own default location"
			return nil
		case t.DockerUser:
			p.Unused = dockerUser
			return nil
		}
	}
	if fp.MappingNote != "" {
		p.Unused = fp.MappingNote
		return nil
	}
	return fmt.Errorf("no destination in %+v", fp.To)
}

// dockerOnly says why a server needs Docker and how to run it from source instead.
func dockerOnly(key string, f fact) *unavailable {
	st := f.Start
	reason := "E2B runs it only as a Docker image and this sandbox has no Docker engine: " + strings.TrimSuffix(st.DockerOnly, ".")
	needs := ""
	switch {
	case st.GoModule != "":
		needs = "Go: go install " + st.GoModule + "/..."
	case st.Crate != "":
		needs = "Rust: cargo install " + st.Crate
	case st.MavenArtifact != "":
		needs = "Java and Maven"
	case st.FromSource != nil && st.FromSource.Runtime != "":
		needs = map[string]string{"python": "Python", "node": "Node.js"}[st.FromSource.Runtime]
		if needs == "" {
			needs = st.FromSource.Runtime
		}
	}
	how := `give "` + key + `" a "runCmd" that starts the server installed in the template`
	if repo, ok := strings.CutPrefix(f.SourceRepo, "https://github.com/"); ok {
		how = `run it from source as "github/` + strings.TrimSuffix(repo, ".git") + `" with "installCmd" and "runCmd"`
		if needs != "" {
			how += " (the template needs " + needs + ")"
		}
		how += `, or give "` + key + `" a "runCmd" that starts a copy installed in the template`
	}
	return &unavailable{Reason: reason, HowTo: how}
}
