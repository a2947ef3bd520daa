package aggregate

import (
	"context"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// listPrompts lists every prompt of an upstream, all pages.
func listPrompts(ctx context.Context, cs *mcp.ClientSession, caps *mcp.ServerCapabilities) ([]*mcp.Prompt, error) {
	if caps.Prompts == nil {
		return nil, nil
	}
	return collect(cs.Prompts(ctx, nil), "prompts")
}

func (g *Gateway) listPrompts(req *mcp.ListPromptsRequest) (*mcp.ListPromptsResult, error) {
	cursor := ""
	if req.Params != nil {
		cursor = req.Params.Cursor
	}
	items, next, err := servePage(&g.mu, &g.prompts.list, cursor, g.pageSize)
	if err != nil {
		return nil, err
	}
	return &mcp.ListPromptsResult{Prompts: items, NextCursor: next}, nil
}

// getPrompt routes prompts/get to the owning server under the prompt's
// original name.
func (g *Gateway) getPrompt(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	p := req.Params
	if p == nil {
		return nil, invalidParams("missing params")
	}
	g.mu.RLock()
	r, ok := g.prompts.routes[p.Name]
	g.mu.RUnlock()
	if !ok {
		return nil, invalidParams("unknown prompt %q", p.Name)
	}
	call, done := g.calls.begin(ctx, req.Session, r.up.Name())
	defer done()
	meta := g.progress.forward(p.Meta, call)
	defer g.progress.release(meta)
	var res *mcp.GetPromptResult
	err := r.up.Do(ctx, func(cs *mcp.ClientSession) error {
		var err error
		res, err = cs.GetPrompt(ctx, &mcp.GetPromptParams{Meta: meta, Name: r.name, Arguments: p.Arguments})
		return err
	})
	if err != nil {
		return nil, upstreamError(r.up.Name(), err)
	}
	return res, nil
}
