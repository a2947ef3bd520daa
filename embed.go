//go:generate go run ./internal/catalog/gen

// Package mcpgateway holds the files that ship inside the mcp-gateway binary.
package mcpgateway

import _ "embed"

// CatalogJSON is the default server catalog (catalog.json at the repository root, written by
// `go generate` from data/: see internal/catalog/gen), parsed with
// catalog.Parse and merged with the template's /etc/mcp-gateway/catalog.json by catalog.Load.
// It is shared by every caller: treat it as read-only and never modify its bytes.
//
//go:embed catalog.json
var CatalogJSON []byte
