package main

import (
	"fmt"
	"runtime/debug"
	"strings"
)

// version overrides the module version when set at build time with
// -ldflags "-X main.version=v1.2.3"; empty means: take it from the build
// info that the go command embeds (a tag for `go install ...@v1.2.3`,
// "(devel)" for a build from a checkout).
var version = ""

// buildInfo is what the binary knows about its own build.
type buildInfo struct {
	Version  string // module version: a tag, a pseudo-version or "(devel)"
	Revision string // VCS revision ("" when built without VCS stamping)
	Time     string // commit time of Revision, RFC 3339
	Modified bool   // the work tree had uncommitted changes
	Go       string // the Go toolchain, e.g. go1.26.8
}

// readBuildInfo reads the build info embedded by the go command; read is
// debug.ReadBuildInfo, a parameter so that tests can give their own.
func readBuildInfo(read func() (*debug.BuildInfo, bool)) buildInfo {
	b := buildInfo{Version: "(devel)"}
	bi, ok := read()
	if ok {
		b.Go = bi.GoVersion
		if v := bi.Main.Version; v != "" {
			b.Version = v
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				b.Revision = s.Value
			case "vcs.time":
				b.Time = s.Value
			case "vcs.modified":
				b.Modified = s.Value == "true"
			}
		}
	}
	if version != "" {
		b.Version = version
	}
	return b
}

// String is the `mcp-gateway version` line: "mcp-gateway v1.2.3 (rev
// 0123456789ab, 2026-12-01T10:00:00Z, modified; go1.26.8)".
func (b buildInfo) String() string {
	var parts []string
	if b.Revision != "" {
		parts = append(parts, "rev "+b.Revision)
	} else {
		parts = append(parts, "no VCS revision")
	}
	if b.Time != "" {
		parts = append(parts, b.Time)
	}
	if b.Modified {
		parts = append(parts, "modified")
	}
	s := fmt.Sprintf("mcp-gateway %s (%s", b.Version, strings.Join(parts, ", "))
	if b.Go != "" {
		s += "; " + b.Go
	}
	return s + ")"
}

// serverVersion is the version the gateway announces in serverInfo: the
// module version when it is a release, else "dev" (a checkout's revision is
// for `mcp-gateway version`, not for every client's initialize answer).
func (b buildInfo) serverVersion() string {
	if b.Version == "" || b.Version == "(devel)" {
		return "dev"
	}
	return b.Version
}
