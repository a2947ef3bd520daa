#!/usr/bin/env node
// Lists the tools of real MCP servers started from npm, for the tool search benchmark
// (internal/toolsearch/testdata/servers; docs/tool-search.md says how it was made).
//
// Usage: node dump-tools.mjs <out dir> '<servers json>'
//   servers: [{"key": "github", "package": "@modelcontextprotocol/server-github", "version": "2025.4.8",
//              "command": "/path/to/bin", "args": [...], "env": {...}}, ...]
// Writes <out dir>/<key>.json: {"key", "package", "version", "instructions", "tools": [{name, title, description,
// inputSchema}]} for each server that starts and lists within 60 s; reports the others on stderr.

import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';

// dump speaks raw JSON-RPC over the server's stdio rather than through the SDK's Client: the Client refuses a
// listing whose schemas lack "type": "object" (server-gitlab's), and the benchmark takes tools as servers list them.
async function dump(outDir, s) {
    const transport = new StdioClientTransport({
        command: s.command, args: s.args ?? [], env: { ...process.env, ...(s.env ?? {}) }, stderr: 'ignore',
    });
    const pending = new Map();
    let nextId = 1;
    transport.onmessage = msg => {
        if (msg.id !== undefined && pending.has(msg.id)) {
            pending.get(msg.id)(msg);
            pending.delete(msg.id);
        }
    };
    const request = (method, params) => new Promise((resolve, reject) => {
        const id = nextId++;
        const timer = setTimeout(() => reject(new Error(`${method}: no answer in 60 s`)), 60000);
        pending.set(id, msg => {
            clearTimeout(timer);
            msg.error ? reject(new Error(`${method}: ${msg.error.message}`)) : resolve(msg.result);
        });
        transport.send({ jsonrpc: '2.0', id, method, params }).catch(reject);
    });
    await transport.start();
    const init = await request('initialize', {
        protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'tool-dump', version: '1.0.0' },
    });
    await transport.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    const tools = [];
    let cursor;
    do {
        const page = await request('tools/list', cursor ? { cursor } : {});
        tools.push(...page.tools.map(t => ({
            name: t.name, title: t.title ?? t.annotations?.title, description: t.description, inputSchema: t.inputSchema,
        })));
        cursor = page.nextCursor;
    } while (cursor);
    const out = { key: s.key, package: s.package, version: s.version, instructions: init.instructions, tools };
    writeFileSync(join(outDir, `${s.key}.json`), JSON.stringify(out, null, 1) + '\n');
    await transport.close();
    return tools.length;
}

const [outDir, raw] = process.argv.slice(2);
let total = 0;
for (const s of JSON.parse(raw)) {
    try {
        const n = await dump(outDir, s);
        total += n;
        process.stderr.write(`${s.key}: ${n} tools\n`);
    } catch (err) {
        process.stderr.write(`${s.key}: FAILED ${err?.message ?? err}\n`);
    }
}
process.stderr.write(`total: ${total} tools\n`);
process.exit(0);
