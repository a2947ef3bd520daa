#!/usr/bin/env node
// The TypeScript SDK client in the gateway's search view: runs a list of steps and prints what came back, so that
// the Go e2e tests (cmd/mcp-gateway/search_e2e_test.go) judge it.
//
// Usage:
//   node search.mjs http <url> <token> '<steps json>'
//   node search.mjs stdio <command> '<args json>' '<steps json>'
//
// Steps are run in order; each is one of
//   {"list": true}                                       tools/list, every page: {"tools": [names]}
//   {"call": <tool>, "args": {...}, "progress": true}    tools/call: {"result": <CallToolResult>, "progress": [n...]}
//   {"waitToolsChanged": true}                           waits for notifications/tools/list_changed since the last wait
// The client declares elicitation and accepts every request with {"answer": "yes"}; the output's "elicitations"
// counts them. One JSON line is printed: {"steps": [...], "elicitations": n}. Errors: message on stderr, exit 1.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { CallToolResultSchema, ElicitRequestSchema, ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

async function main() {
    const [mode, a, b, rawSteps] = process.argv.slice(2);
    const steps = JSON.parse(rawSteps);
    let transport;
    if (mode === 'http') {
        transport = new StreamableHTTPClientTransport(new URL(a), { requestInit: { headers: { Authorization: `Bearer ${b}` } } });
    } else if (mode === 'stdio') {
        transport = new StdioClientTransport({ command: a, args: JSON.parse(b), stderr: 'inherit' });
    } else {
        throw new Error(`unknown mode ${mode}`);
    }
    const client = new Client({ name: 'ts-search-agent', version: '1.0.0' }, { capabilities: { elicitation: {} } });
    let elicitations = 0;
    client.setRequestHandler(ElicitRequestSchema, async () => {
        elicitations++;
        return { action: 'accept', content: { answer: 'yes' } };
    });
    let changed = 0;
    let wake = null;
    client.setNotificationHandler(ToolListChangedNotificationSchema, async () => {
        changed++;
        if (wake) wake();
    });
    await client.connect(transport);
    const out = [];
    for (const step of steps) {
        if (step.list) {
            const tools = [];
            let cursor;
            do {
                const page = await client.listTools(cursor ? { cursor } : {});
                tools.push(...page.tools.map(t => t.name));
                cursor = page.nextCursor;
            } while (cursor);
            out.push({ tools });
        } else if (step.call) {
            changed = 0;
            const progress = [];
            const opts = step.progress ? { onprogress: p => progress.push(p.progress) } : {};
            const result = await client.callTool({ name: step.call, arguments: step.args ?? {} }, CallToolResultSchema, opts);
            out.push({ result, progress });
        } else if (step.waitToolsChanged) {
            if (changed === 0) {
                await new Promise(resolve => { wake = resolve; });
                wake = null;
            }
            changed = 0;
            out.push({ changed: true });
        } else {
            throw new Error(`unknown step ${JSON.stringify(step)}`);
        }
    }
    process.stdout.write(JSON.stringify({ steps: out, elicitations }) + '\n');
    await client.close();
}

main().catch(err => {
    process.stderr.write(`search.mjs: ${err?.stack ?? err}\n`);
    process.exit(1);
});
