#!/usr/bin/env node
// Checks the client.mjs harness itself against an in-process TypeScript SDK server, so a failing Go e2e
// test points at the gateway rather than at the harness. Run: node selftest.mjs (exit 0 = all passed).
//
// The server mimics what the gateway promises: streamable HTTP on 127.0.0.1, stateful sessions, and a
// bearer check answering 401. /open/mcp skips the check, to prove --expect-401 fails when nothing rejects.
// tools/list is paginated two tools per page, to prove the harness follows nextCursor.

import { spawn } from 'node:child_process';
import { randomUUID } from 'node:crypto';
import http from 'node:http';
import { fileURLToPath } from 'node:url';
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { ListToolsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

const TOKEN = 'selftest-token';
const CLIENT = fileURLToPath(new URL('./client.mjs', import.meta.url));
const TOOL_NAMES = ['echo', 'count', 'fail', 'filler_a', 'filler_b'];
const PAGE_SIZE = 2;

function newMcpServer() {
    const mcp = new McpServer({ name: 'selftest', version: '0.0.0' });
    mcp.registerTool('echo', { description: 'Returns text.', inputSchema: { text: z.string() } }, async ({ text }) => ({
        content: [{ type: 'text', text }]
    }));
    mcp.registerTool(
        'count',
        { description: 'Reports progress 1..steps.', inputSchema: { steps: z.number().int() } },
        async ({ steps }, extra) => {
            const progressToken = extra._meta?.progressToken;
            for (let i = 1; i <= steps; i++) {
                if (progressToken !== undefined) {
                    await extra.sendNotification({
                        method: 'notifications/progress',
                        params: { progressToken, progress: i, total: steps, message: `step ${i}` }
                    });
                }
            }
            return { content: [{ type: 'text', text: `counted ${steps}` }] };
        }
    );
    mcp.registerTool('fail', { description: 'Always fails.' }, async () => ({
        content: [{ type: 'text', text: 'tool failed on purpose' }],
        isError: true
    }));
    for (const name of ['filler_a', 'filler_b']) {
        mcp.registerTool(name, { description: 'Pads the tool list to three pages.' }, async () => ({ content: [] }));
    }
    // Replace McpServer's single-page tools/list with a paginated one over the same names.
    mcp.server.setRequestHandler(ListToolsRequestSchema, request => {
        const start = request.params?.cursor === undefined ? 0 : Number(request.params.cursor);
        const tools = TOOL_NAMES.slice(start, start + PAGE_SIZE).map(name => ({
            name,
            inputSchema: { type: 'object' }
        }));
        const next = start + PAGE_SIZE;
        return next < TOOL_NAMES.length ? { tools, nextCursor: String(next) } : { tools };
    });
    return mcp;
}

function startServer() {
    const sessions = new Map();
    const server = http.createServer(async (req, res) => {
        try {
            const path = new URL(req.url, 'http://127.0.0.1').pathname;
            if (path !== '/mcp' && path !== '/open/mcp') {
                res.writeHead(404).end();
                return;
            }
            if (path === '/mcp' && req.headers.authorization !== `Bearer ${TOKEN}`) {
                res.writeHead(401, { 'content-type': 'application/json', 'www-authenticate': 'Bearer' });
                res.end(JSON.stringify({ error: 'unauthorized' }));
                return;
            }
            const sid = req.headers['mcp-session-id'];
            let transport = sid === undefined ? undefined : sessions.get(sid);
            if (transport === undefined) {
                if (sid !== undefined) {
                    res.writeHead(404, { 'content-type': 'application/json' });
                    res.end(JSON.stringify({ error: 'unknown session' }));
                    return;
                }
                transport = new StreamableHTTPServerTransport({
                    sessionIdGenerator: () => randomUUID(),
                    onsessioninitialized: id => sessions.set(id, transport)
                });
                transport.onclose = () => sessions.delete(transport.sessionId);
                await newMcpServer().connect(transport);
            }
            await transport.handleRequest(req, res);
        } catch (err) {
            if (!res.headersSent) {
                res.writeHead(500).end(String(err));
            }
        }
    });
    return new Promise(resolve => {
        server.listen(0, '127.0.0.1', () => {
            resolve({
                url: `http://127.0.0.1:${server.address().port}`,
                sessions,
                close: async () => {
                    for (const t of sessions.values()) {
                        await t.close().catch(() => {});
                    }
                    server.closeAllConnections();
                    await new Promise(r => server.close(r));
                }
            });
        });
    });
}

// Runs client.mjs asynchronously (the server lives in this event loop) and collects its output.
function runClient(args) {
    return new Promise((resolve, reject) => {
        const child = spawn(process.execPath, [CLIENT, ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
        let stdout = '';
        let stderr = '';
        child.stdout.on('data', d => (stdout += d));
        child.stderr.on('data', d => (stderr += d));
        child.on('error', reject);
        child.on('close', code => resolve({ code, stdout, stderr }));
    });
}

function assert(cond, message) {
    if (!cond) {
        throw new Error(message);
    }
}

function parseOneLine(r) {
    assert(r.code === 0, `exit code ${r.code}, stderr: ${r.stderr}`);
    const lines = r.stdout.split('\n').filter(l => l !== '');
    assert(lines.length === 1, `want one stdout line, got ${JSON.stringify(r.stdout)}`);
    return JSON.parse(lines[0]);
}

const srv = await startServer();
const url = `${srv.url}/mcp`;
const checks = [
    [
        'lists every page and calls a tool',
        async () => {
            const out = parseOneLine(await runClient([url, TOKEN, 'echo', '{"text":"hello"}']));
            assert(JSON.stringify(out.tools) === JSON.stringify(TOOL_NAMES), `tools = ${JSON.stringify(out.tools)}`);
            assert(out.result.content[0].text === 'hello', `result = ${JSON.stringify(out.result)}`);
            assert(!('progress' in out), 'progress present without --progress');
        }
    ],
    [
        '--progress collects every notification in order',
        async () => {
            const out = parseOneLine(await runClient([url, TOKEN, 'count', '{"steps":3}', '--progress']));
            assert(JSON.stringify(out.progress.map(p => p.progress)) === '[1,2,3]', `progress = ${JSON.stringify(out.progress)}`);
            assert(out.progress[2].total === 3 && out.progress[2].message === 'step 3', `last = ${JSON.stringify(out.progress[2])}`);
            assert(out.result.content[0].text === 'counted 3', `result = ${JSON.stringify(out.result)}`);
        }
    ],
    [
        'a tool error is a printed result, exit 0',
        async () => {
            const out = parseOneLine(await runClient([url, TOKEN, 'fail']));
            assert(out.result.isError === true, `result = ${JSON.stringify(out.result)}`);
        }
    ],
    [
        '--expect-401 reports the rejection',
        async () => {
            const out = parseOneLine(await runClient([url, TOKEN, 'echo', '--expect-401']));
            assert(JSON.stringify(out) === '{"status":401}', `out = ${JSON.stringify(out)}`);
        }
    ],
    [
        '--expect-401 fails when the server accepts',
        async () => {
            const r = await runClient([`${srv.url}/open/mcp`, '', 'echo', '--expect-401']);
            assert(r.code === 1 && r.stdout === '', `code ${r.code}, stdout ${JSON.stringify(r.stdout)}`);
            assert(r.stderr.includes('expected HTTP 401'), `stderr = ${r.stderr}`);
        }
    ],
    [
        'a wrong token is an error on stderr, exit 1',
        async () => {
            const r = await runClient([url, 'wrong-token', 'echo', '{"text":"x"}']);
            assert(r.code === 1 && r.stdout === '', `code ${r.code}, stdout ${JSON.stringify(r.stdout)}`);
            assert(r.stderr.includes('unauthorized'), `stderr = ${r.stderr}`);
        }
    ],
    [
        'bad json-args is an error, exit 1',
        async () => {
            const r = await runClient([url, TOKEN, 'echo', '{not json']);
            assert(r.code === 1 && r.stderr.startsWith('json-args:'), `code ${r.code}, stderr ${r.stderr}`);
        }
    ],
    [
        'sessions are terminated on exit',
        async () => {
            assert(srv.sessions.size === 0, `${srv.sessions.size} sessions left open`);
        }
    ]
];

let passed = 0;
let failed = 0;
for (const [name, check] of checks) {
    try {
        await check();
        passed++;
        console.log(`ok   ${name}`);
    } catch (err) {
        failed++;
        console.log(`FAIL ${name}: ${err.message}`);
    }
}
await srv.close();
console.log(`selftest: ${passed} passed, ${failed} failed`);
process.exit(failed === 0 ? 0 : 1);
