package aggregate

import (
	"context"
	"encoding/json"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/mcp-gateway/mcp-gateway/internal/rawjson"
)

// listPrompts lists every prompt of an upstream, all pages: with raw
// requests when the upstream takes them (raw != nil), keeping each prompt's
// bytes by name, else through the SDK client.
func listPrompts(ctx context.Context, cs *mcp.ClientSession, caps *mcp.ServerCapabilities, raw RoundTrip) ([]*mcp.Prompt, map[string]json.RawMessage, error) {
	if caps.Prompts == nil {
		return nil, nil, nil
	}
	if raw != nil {
		return listRaw(ctx, raw, "prompts/list", "prompts", func(p *mcp.Prompt) string { return p.Name })
	}
	prompts, err := collect(cs.Prompts(ctx, nil), "prompts")
	return prompts, nil, err
}

func (g *Gateway) listPrompts(req *mcp.ListPromptsRequest) (mcp.Result, error) {
	cursor := ""
	if req.Params != nil {
		cursor = req.Params.Cursor
	}
	page, err := g.prompts.page(&g.mu, "prompts", cursor, g.pageSize)
	if err != nil {
		return nil, err
	}
	return &rawResult{raw: page}, nil
}

// getPrompt routes prompts/get to the owning server under the prompt's
// original name.
func (g *Gateway) getPrompt(ctx context.Context, req *mcp.GetPromptRequest) (mcp.Result, error) {
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
	ctx = call.ctx // ends when the server goes quiet (callTimer)
	// Set even when unchanged: see callToolAgentParams.
	rename := func(b json.RawMessage) (json.RawMessage, error) { return rawjson.SetString(b, "name", r.name) }
	res, sent, err := g.forwardAgentParams(ctx, r.up, call, "prompts/get", rawParams(req), rename)
	if !sent {
		meta := g.progress.forward(p.Meta, call)
		defer g.progress.release(meta)
		params := &mcp.GetPromptParams{Meta: meta, Name: r.name, Arguments: p.Arguments,
			RequestState: p.RequestState, InputResponses: p.InputResponses} // a retry's, as in callTool
		res, err = g.forward(ctx, call, r.up, "prompts/get", params, func(ctx context.Context, cs *mcp.ClientSession) (mcp.Result, error) {
			return cs.GetPrompt(ctx, params)
		})
	}
	if err != nil {
		return nil, serverError(r.up.Name(), call.expired(err))
	}
	return res, nil
}
