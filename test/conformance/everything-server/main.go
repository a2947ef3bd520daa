// Copyright 2025 The Go MCP SDK Authors. All rights reserved.
// Use of this source code is governed by an MIT-style
// license that can be found in the LICENSE file.

// Copied from the MCP Go SDK v1.8.0,
// github.com/modelcontextprotocol/go-sdk/conformance/everything-server/main.go;
// LICENSE beside this file is the SDK's. mcp-gateway uses it as the stdio
// upstream server that test/conformance/run.sh puts behind the gateway: it
// provides every tool, resource, prompt and completion the conformance
// suite's server scenarios expect. Update it together with the SDK version.
//
// The SDK's one file is split here by what it serves (the repository keeps
// its files under 600 lines): this file starts the server, tools.go registers
// the tools, toolhandlers.go and inputrequired.go (SEP-2322 multi-round-trip)
// answer them, resources.go and prompts.go hold the rest, media.go the test
// image and audio. Apart from that, and from the flags and the template
// pattern made local (no package-level variables), and the -legacy-only flag
// (the 2025 run behind the gateway), the code is the SDK's.

// The conformance server implements features required for MCP conformance testing.
// It mirrors the functionality of the TypeScript conformance server at
// https://github.com/modelcontextprotocol/conformance/blob/main/examples/servers/typescript/everything-server.ts
//
//lint:file-ignore SA1019 conformance server exercises deprecated SEP-2577 APIs (roots, sampling, logging).
package main

import (
	"context"
	"flag"
	"log"
	"net/http"
	"os"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

const watchedResourceURI = "test://watched-resource"

func main() {
	httpAddr := flag.String("http", "", "if set, use streamable HTTP at this address, instead of stdin/stdout")
	stateless := flag.Bool("stateless", true, "use stateless streamable HTTP mode")
	legacyOnly := flag.Bool("legacy-only", false, "serve the 2025 era only (refuse server/discover), as a 2025-era server")
	flag.Parse()

	opts := &mcp.ServerOptions{
		CompletionHandler:  completionHandler,
		SubscribeHandler:   subscribeHandler,
		UnsubscribeHandler: unsubscribeHandler,
	}
	if *legacyOnly {
		// mcp-gateway: the 2025 run behind the gateway. A client that
		// speaks the 2026 era to this server (the gateway does, to every
		// server that offers it) cannot be sent the sampling and
		// elicitation requests of test_sampling, test_elicitation and the
		// SEP-1034/1330 tools: the SDK forbids them on a 2026 session.
		for _, v := range mcp.SupportedProtocolVersions() {
			if v < "2026-07-28" {
				opts.SupportedProtocolVersions = append(opts.SupportedProtocolVersions, v)
			}
		}
	}

	server := mcp.NewServer(&mcp.Implementation{
		Name:    "mcp-conformance-test-server",
		Version: "1.0.0",
	}, opts)

	// Register server features.
	registerTools(server)
	registerResources(server)
	registerPrompts(server)

	// Start the watched resource auto-update goroutine.
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go watchedResourceUpdater(ctx, server)

	// Serve over stdio, or streamable HTTP if -http is set.
	if *httpAddr != "" {
		handler := mcp.NewStreamableHTTPHandler(func(*http.Request) *mcp.Server {
			return server
		}, &mcp.StreamableHTTPOptions{Stateless: *stateless})
		log.Printf("Conformance server listening at %s", *httpAddr)
		log.Fatal(http.ListenAndServe(*httpAddr, handler))
	} else {
		t := &mcp.StdioTransport{}
		if err := server.Run(ctx, t); err != nil {
			log.Printf("Server failed: %v", err)
			os.Exit(1)
		}
	}
}

// watchedResourceUpdater sends resource update notifications every 3 seconds.
func watchedResourceUpdater(ctx context.Context, server *mcp.Server) {
	ticker := time.NewTicker(3 * time.Second)
	defer ticker.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ticker.C:
			server.ResourceUpdated(ctx, &mcp.ResourceUpdatedNotificationParams{
				URI: watchedResourceURI,
			})
		}
	}
}

// =============================================================================
// Server handlers
// =============================================================================

func completionHandler(ctx context.Context, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	// Return empty completion - just acknowledging the capability
	return &mcp.CompleteResult{
		Completion: mcp.CompletionResultDetails{
			Values: []string{},
			Total:  0,
		},
	}, nil
}

func subscribeHandler(ctx context.Context, req *mcp.SubscribeRequest) error {
	// The SDK handles subscription tracking internally via Server.ResourceUpdated()
	return nil
}

func unsubscribeHandler(ctx context.Context, req *mcp.UnsubscribeRequest) error {
	// The SDK handles subscription tracking internally
	return nil
}
