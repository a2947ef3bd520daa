package catalog

import (
	"slices"
	"strings"
)

// Kind says where a server in the mcp config comes from.
type Kind string

const (
	// KindCatalog servers are catalog entries: Command is set.
	KindCatalog Kind = "catalog"
	// KindGitHub servers are keyed github/<owner>/<repo>: the supervisor clones the repository,
	// runs Install in it, then Shell.
	KindGitHub Kind = "github"
	// KindLocal servers are any other key with a runCmd: Shell (and Install) run in Dir.
	KindLocal Kind = "local"
	// KindRemote servers are any key with a url: a streamable-HTTP MCP server the gateway
	// connects to with Headers. Nothing is started; Command and Shell are empty.
	KindRemote Kind = "remote"
)

// ServerSpec is one server to start, resolved from the mcp config: plain data with no JSON left
// in it, so the supervisor never re-validates. Exactly one of Command and Shell is set, except
// for remote servers, which have URL instead.
type ServerSpec struct {
	Name string // the key in the mcp object, e.g. "time" or "github/acme/x"
	Kind Kind
	// Command is exec'd directly (catalog servers); empty when Shell is set.
	Command []string
	// Shell is the runCmd of github and local servers, run by the supervisor as /bin/sh -c Shell.
	Shell string
	// Install is the installCmd, run via /bin/sh -c before the first start; "" for none.
	Install string
	// Dir is the working directory: the absolute "cwd" of a local server (optional, "" means the
	// gateway's own); for github servers the supervisor sets it to the clone.
	Dir string
	// Owner and Repo are set for github servers only.
	Owner, Repo string
	// Env holds this server's own variables, from "envs" and env-mapped properties, added to the
	// gateway's environment (minus GATEWAY_ACCESS_TOKEN) for this server only. The values are
	// secrets: never log them, except those named in PublicEnv. nil when there are none.
	Env map[string]string
	// PublicEnv names the Env variables whose values are not secrets: catalog constants
	// (BRAVE_MCP_TRANSPORT=stdio) and Public properties (a directory). Masking "stdio" would
	// garble every log line that says it; masking a directory hides which one is missing.
	PublicEnv []string
	// ArgSecrets are config values that Command carries as arguments (a catalog property whose
	// server reads it nowhere else): secrets like Env values, to be masked the same way. Public
	// properties' values are not among them.
	ArgSecrets []string
	// URL is the streamable-HTTP endpoint of a remote server: absolute http or https, without
	// credentials. Set for KindRemote only.
	URL string
	// Headers are sent with every request to a remote server, keyed by canonical header name,
	// with ${VAR} references already replaced from the gateway's environment. The values are
	// secrets (they usually hold an API key): never log them. nil when there are none.
	Headers map[string]string
	// Tools filters the tools the agent is offered (the entry's ToolsKey);
	// nil offers them all.
	Tools *ToolFilter
	// Protocol pins the era the gateway speaks to the server (the entry's
	// ProtocolKey): Protocol2025, or "" to learn it from the server.
	Protocol string
}

// Secrets returns the values of spec that must never reach a log or an error message: its env
// values (but PublicEnv's), property values passed as arguments, and header values, and for a
// header such as "Authorization: Bearer <key>" the bare <key> too, since a server that echoes a credential rarely echoes its scheme with it.
func (s ServerSpec) Secrets() []string {
	out := make([]string, 0, len(s.Env)+2*len(s.Headers)+len(s.ArgSecrets))
	for k, v := range s.Env {
		if !slices.Contains(s.PublicEnv, k) {
			out = append(out, v)
		}
	}
	out = append(out, s.ArgSecrets...)
	for _, v := range s.Headers {
		out = append(out, v)
		if _, cred, ok := strings.Cut(strings.TrimSpace(v), " "); ok {
			out = append(out, strings.TrimSpace(cred))
		}
	}
	return out
}
