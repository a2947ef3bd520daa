package toolsearch

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
)

// The gateway's own tools in the search view, by the names they take when
// no server's tool has them (the caller applies the naming rule).
const (
	SearchToolName = "search_tools"
	CallToolName   = "call_tool"
)

// Limits of search_tools' limit argument.
const (
	DefaultLimit = 5
	MaxLimit     = 20
)

// ListResult is the tools/list result of the search view: search_tools and
// call_tool under the names given, and nothing else, whatever the number
// of servers. It is small on purpose: it is what the model reads each turn.
func ListResult(searchName, callName string) json.RawMessage {
	search := fmt.Sprintf(`{"name":%q,"title":"Search tools","description":"Find the tools that fit a task among every tool of this gateway's servers. Returns the best matches first, each with its name, server, description and inputSchema; call one with %s (or directly by its name).","inputSchema":{"type":"object","properties":{"query":{"type":"string","description":"The task or the kind of tool wanted, in plain words."},"limit":{"type":"integer","minimum":1,"maximum":%d,"default":%d,"description":"How many tools to return."},"server":{"type":"string","description":"Only this server's tools (its key)."}},"required":["query"]},"outputSchema":{"type":"object","properties":{"tools":{"type":"array","items":{"type":"object"}}},"required":["tools"]},"annotations":{"readOnlyHint":true,"openWorldHint":false}}`,
		searchName, callName, MaxLimit, DefaultLimit)
	call := fmt.Sprintf(`{"name":%q,"title":"Call a tool","description":"Call a tool that %s found, by its name, with its arguments: the same call as calling that tool directly.","inputSchema":{"type":"object","properties":{"name":{"type":"string","description":"The tool's name, as %s returned it."},"arguments":{"type":"object","description":"The tool's arguments, as its inputSchema says."}},"required":["name"]}}`,
		callName, searchName, searchName)
	return json.RawMessage(`{"tools":[` + search + `,` + call + `]}`)
}

// ErrArguments is the error of arguments a gateway tool cannot take; the
// caller answers it as a tool error (isError), which the model reads.
var ErrArguments = errors.New("invalid arguments")

// SearchArgs are search_tools' arguments.
type SearchArgs struct {
	Query  string
	Limit  int    // 1 to MaxLimit
	Server string // "": every server
}

// ParseSearchArgs reads search_tools' arguments (a JSON object or null):
// query required and not blank, limit an integer from 1 (default
// DefaultLimit; above MaxLimit it is MaxLimit), server a string.
func ParseSearchArgs(raw json.RawMessage) (SearchArgs, error) {
	var a struct {
		Query  *string      `json:"query"`
		Limit  *json.Number `json:"limit"`
		Server *string      `json:"server"`
	}
	if err := decodeArgs(raw, &a); err != nil {
		return SearchArgs{}, err
	}
	out := SearchArgs{Limit: DefaultLimit}
	if a.Query == nil || strings.TrimSpace(*a.Query) == "" {
		return out, fmt.Errorf("%w: query is required: the task or the kind of tool wanted, in plain words", ErrArguments)
	}
	out.Query = *a.Query
	if a.Limit != nil {
		n, err := a.Limit.Int64()
		if err != nil || n < 1 {
			return out, fmt.Errorf("%w: limit must be an integer from 1 to %d", ErrArguments, MaxLimit)
		}
		out.Limit = int(min(n, MaxLimit))
	}
	if a.Server != nil {
		out.Server = *a.Server
	}
	return out, nil
}

// CallArgs are call_tool's arguments.
type CallArgs struct {
	Name      string
	Arguments json.RawMessage // an object, or nil for none
}

// ParseCallArgs reads call_tool's arguments: name required, arguments an
// object or absent (null counts as absent).
func ParseCallArgs(raw json.RawMessage) (CallArgs, error) {
	var a struct {
		Name      *string         `json:"name"`
		Arguments json.RawMessage `json:"arguments"`
	}
	if err := decodeArgs(raw, &a); err != nil {
		return CallArgs{}, err
	}
	if a.Name == nil || *a.Name == "" {
		return CallArgs{}, fmt.Errorf("%w: name is required: a tool's name as search results give it", ErrArguments)
	}
	out := CallArgs{Name: *a.Name}
	if args := bytes.TrimSpace(a.Arguments); len(args) > 0 && !bytes.Equal(args, []byte("null")) {
		if args[0] != '{' {
			return CallArgs{}, fmt.Errorf("%w: arguments must be an object", ErrArguments)
		}
		out.Arguments = args
	}
	return out, nil
}

func decodeArgs(raw json.RawMessage, v any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || bytes.Equal(raw, []byte("null")) {
		raw = []byte("{}")
	}
	if raw[0] != '{' {
		return fmt.Errorf("%w: arguments must be an object", ErrArguments)
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(v); err != nil {
		return fmt.Errorf("%w: %v", ErrArguments, err)
	}
	return nil
}

// Found is one tool of a search's answer, as the agent gets it: all it
// needs to call the tool in its next step.
type Found struct {
	Name        string          `json:"name"`
	Server      string          `json:"server"`
	Title       string          `json:"title,omitempty"`
	Description string          `json:"description,omitempty"`
	InputSchema json.RawMessage `json:"inputSchema"`
}

// SearchResult is search_tools' CallToolResult: a short text for the
// model (one line per tool, best first) and structuredContent
// {"tools": [Found...]} for the client.
func SearchResult(query string, found []Found) (json.RawMessage, error) {
	var text strings.Builder
	if len(found) == 0 {
		fmt.Fprintf(&text, "No tool matches %q. Try other words, or no server filter.", query)
	} else {
		fmt.Fprintf(&text, "%d tools for %q, best first:\n", len(found), query)
		for i, f := range found {
			fmt.Fprintf(&text, "%d. %s (server %s)", i+1, f.Name, f.Server)
			if d := firstLine(f.Description); d != "" {
				fmt.Fprintf(&text, ": %s", d)
			}
			text.WriteByte('\n')
		}
		text.WriteString("Each tool's inputSchema is in structuredContent. Call one by its name, directly or with call_tool.")
	}
	if found == nil {
		found = []Found{}
	}
	for i := range found {
		if len(found[i].InputSchema) == 0 {
			found[i].InputSchema = json.RawMessage(`{"type":"object"}`)
		}
	}
	return json.Marshal(struct {
		Content []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		} `json:"content"`
		Structured struct {
			Tools []Found `json:"tools"`
		} `json:"structuredContent"`
	}{
		Content: []struct {
			Type string `json:"type"`
			Text string `json:"text"`
		}{{"text", text.String()}},
		Structured: struct {
			Tools []Found `json:"tools"`
		}{found},
	})
}

// ErrorResult is a gateway tool's CallToolResult for err: isError, with
// the message for the model to read and correct its call.
func ErrorResult(err error) json.RawMessage {
	b, _ := json.Marshal(err.Error())
	return json.RawMessage(`{"content":[{"type":"text","text":` + string(b) + `}],"isError":true}`)
}

// firstLine is a description's first line, cut at 160 bytes.
func firstLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = strings.TrimSpace(s[:i])
	}
	if len(s) > 160 {
		cut := 157
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		s = s[:cut] + "..."
	}
	return s
}

// ParamsOf reads the properties of a tool's input schema (the bytes a
// server listed, or a decoded map): their names and descriptions, in name
// order. Anything it cannot read gives none.
func ParamsOf(schema any) []Param {
	var raw []byte
	switch s := schema.(type) {
	case nil:
		return nil
	case json.RawMessage:
		raw = s
	case []byte:
		raw = s
	default:
		b, err := json.Marshal(s)
		if err != nil {
			return nil
		}
		raw = b
	}
	var sch struct {
		Properties map[string]struct {
			Description string `json:"description"`
			Title       string `json:"title"`
		} `json:"properties"`
	}
	if json.Unmarshal(raw, &sch) != nil {
		return nil
	}
	out := make([]Param, 0, len(sch.Properties))
	for name, p := range sch.Properties {
		d := p.Description
		if d == "" {
			d = p.Title
		}
		out = append(out, Param{Name: name, Description: d})
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
