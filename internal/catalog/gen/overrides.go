package main

import (
	"errors"
	"strings"
)

// overrides are the corrections the facts cannot carry, applied after the facts, each with its
// reason. An override of a key that is not in the E2B schema adds an entry of the gateway's own.
func overrides() map[string]func(*entry) error {
	return map[string]func(*entry) error{
		// The gateway's contract documents storagePath as optional and passes it as --storage-path,
		// which the server reads. E2B marks it required (its Docker image needs a mount): every
		// config E2B accepts is accepted here too, and so are configs without it.
		"arxiv": func(e *entry) error {
			p := e.Properties["storagePath"]
			if p == nil {
				return errors.New("no storagePath")
			}
			*p = property{Type: p.Type, Description: p.Description, Flag: "--storage-path",
				Note: "optional here (E2B requires it for its Docker mount); passed as --storage-path"}
			e.Env = nil
			return nil
		},
		// The image points the server at host.docker.internal, Docker's name for the host. A server
		// started here reaches an Obsidian on this machine at 127.0.0.1.
		"obsidian": func(e *entry) error {
			if e.Env["OBSIDIAN_HOST"] != "host.docker.internal" {
				return errors.New("OBSIDIAN_HOST changed in the facts")
			}
			e.Env["OBSIDIAN_HOST"] = "127.0.0.1"
			return nil
		},
		// The image keeps the database in a Docker named volume at /mcp; here it lives in /tmp.
		"sqlite": func(e *entry) error {
			if len(e.Args) != 2 || e.Args[1] != "/mcp/db.sqlite" {
				return errors.New("sqlite args changed in the facts")
			}
			e.Args[1] = "/tmp/mcp-gateway-sqlite.db"
			e.Notes = append(e.Notes, "Without Docker the database is /tmp/mcp-gateway-sqlite.db.")
			return nil
		},
		// The registry sets SENTRY_AUTH_TOKEN only to fill its "--auth-token {authToken}" argument;
		// the server takes the token as that argument.
		"sentry": func(e *entry) error {
			p := e.Properties["authToken"]
			if p == nil || p.Env != "SENTRY_AUTH_TOKEN" {
				return errors.New("authToken changed in the facts")
			}
			p.Env, p.Flag = "", "--auth-token"
			p.Note = "passed as --auth-token, as the registry's image does (visible to other processes in the sandbox): the server reads it nowhere else"
			return nil
		},
		// The image mounts the kubeconfig where the Kubernetes client looks by default. Here the
		// client's standard KUBECONFIG variable points at it instead.
		"kubernetes": func(e *entry) error { return kubeconfig(e, "configPath", "") },
		"kubectl":    func(e *entry) error { return kubeconfig(e, "kubeconfig", "/config") },
		// The gateway's own entries, not in E2B's catalog.
		"everything": func(e *entry) error {
			*e = entry{
				Description: "Reference server that exercises every MCP feature, for testing clients",
				Package:     &pkg{Manager: "npm", Name: "@modelcontextprotocol/server-everything", Version: "2026.8.31", Bin: "mcp-server-everything"},
				Args:        []string{"stdio"},
				Source:      "https://github.com/modelcontextprotocol/servers",
			}
			return nil
		},
		"sandbox": func(e *entry) error {
			*e = entry{
				Description: "Run commands and read and write files in this sandbox (built into the gateway)",
				Package:     &pkg{Manager: "builtin", Name: "sandbox"},
			}
			return nil
		},
	}
}

// kubeconfig sends property name to KUBECONFIG; suffix turns a .kube directory into its file.
func kubeconfig(e *entry, name, suffix string) error {
	p := e.Properties[name]
	if p == nil || p.Unused == "" {
		return errors.New(name + " changed in the facts")
	}
	p.Unused, p.Env = "", "KUBECONFIG"
	if suffix != "" {
		p.Format = "{" + name + "}" + suffix
	}
	p.Note = "E2B bind-mounts it where the Kubernetes client looks by default; here KUBECONFIG points at it"
	return nil
}

// public decides which properties are not secrets, so that redaction leaves their values
// readable. The registry does not say; the rule reads the property's name and type:
//   - a boolean, integer or number is public: a switch, a port or a limit is no credential, and
//     masking "true" or "8080" would garble every message that contains it;
//   - a name ending in path, paths, dir, directory, directories, folder, keyfile, certfile or
//     kubeconfig names a place in the filesystem, public even when the file it names holds a
//     credential (credentialsPath, sslKeyfile): the path is not the key;
//   - everything else (keys, tokens, passwords, user names, URLs that may embed credentials)
//     stays secret.
//
// Values sent as HTTP headers always stay secret.
func public(name string, p *property) bool {
	if p.Header != "" {
		return false
	}
	switch p.Type {
	case "boolean", "integer", "number":
		return true
	}
	lower := strings.ToLower(name)
	for _, suffix := range []string{"path", "paths", "dir", "directory", "directories", "folder", "keyfile", "certfile", "kubeconfig"} {
		if strings.HasSuffix(lower, suffix) {
			return true
		}
	}
	return false
}
