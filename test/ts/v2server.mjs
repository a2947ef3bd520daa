#!/usr/bin/env node
// A server built on the official TypeScript SDK v2 (@modelcontextprotocol/server 2.4.0), which speaks both protocol
// eras: 2026-07-28 (stateless, server/discover, input requests as multi-round-trip results) and the 2025 era
// (initialize). The Go e2e tests and the 2026 work put it behind the gateway as a real 2026-capable upstream.
//
// Usage:
//   node v2server.mjs [--http=<port>] [--legacy=serve|reject]
//
//   (no --http)      stdio, through the SDK's serveStdio entry: the opening message picks the connection's era.
//   --http=<port>    streamable HTTP on 127.0.0.1:<port>/mcp through createMcpHandler (0 picks a free port); the
//                    first line on stdout is {"url": "http://127.0.0.1:<port>/mcp"} once it listens. Every request
//                    is served on its own (2026 era per request; the 2025 era in the SDK's stateless fallback,
//                    which has no session: a 2025-era client gets no input requests, no resources/updated and no
//                    GET stream over HTTP; over stdio it gets them all).
//   --legacy=reject  2026-only: a 2025-era opening (initialize) is refused with -32022 naming 2026-07-28.
//                    V2SERVER_LEGACY=reject in the environment does the same.
//
// What it serves (the same on both eras; the SDK's legacy shim turns input requests into server-to-client
// requests for a 2025-era client):
//   tools      echo {text}               the text back
//              ask {kinds: [...]}        input requests of the listed kinds, all in one round: "form"
//                                        (elicitation form), "url" (URL elicitation), "sampling", "roots"; the
//                                        first round carries requestState "v2server-round-1", and the retry must
//                                        echo it byte for byte; the result's text is JSON of the answers
//              askmore {rounds}          one form elicitation per round for that many rounds (requestState
//                                        "askmore-<n>" checked on each retry); then "answered <rounds>"
//              progress {steps}          a progress notification per step (when the call has a progressToken)
//                                        and an info log message per step; then "done <steps>"
//              touch {uri}               notifies resources/updated for uri (v2://counter bumps the counter)
//              slow {ms}                 waits ms, or until cancelled: "slept" / never answers when cancelled
//              add_tool {name}           adds a tool of that name (echoing "added <name>"): tools/list_changed
//   prompt     greet {name}              "Hello, <name>!"; name completes from a fixed list
//   resources  v2://counter              the counter (subscribable)
//              v2://item/{id}            a template; id completes from a fixed list
//   logging, completions, resources.subscribe and listChanged capabilities.
//
// Anything unexpected goes to stderr and exits 1.

import { createServer } from 'node:http';
import { Readable } from 'node:stream';
import { createMcpHandler, McpServer, ResourceTemplate, completable, inputRequired, inputResponse } from '@modelcontextprotocol/server';
import { serveStdio } from '@modelcontextprotocol/server/stdio';
import * as z from 'zod';

const REQUEST_STATE = 'v2server-round-1';
const NAMES = ['alice', 'albert', 'bob'];
const ITEMS = ['apple', 'apricot', 'banana'];

function parseArgs(argv) {
    const opts = { http: undefined, legacy: process.env.V2SERVER_LEGACY || 'serve' };
    for (const arg of argv) {
        if (arg.startsWith('--http=')) {
            opts.http = Number(arg.slice('--http='.length));
            if (!Number.isInteger(opts.http) || opts.http < 0 || opts.http > 65535) {
                throw new Error(`bad ${arg}: want a port number (0 picks one)`);
            }
        } else if (arg.startsWith('--legacy=')) {
            opts.legacy = arg.slice('--legacy='.length);
        } else {
            throw new Error(`unknown argument ${arg} (usage: v2server.mjs [--http=<port>] [--legacy=serve|reject])`);
        }
    }
    if (opts.legacy !== 'serve' && opts.legacy !== 'reject') {
        throw new Error(`bad legacy mode ${JSON.stringify(opts.legacy)}: want serve or reject`);
    }
    return opts;
}

// State shared by every instance the factory makes (one per connection on stdio, one per request over HTTP).
let counter = 0;
// notifyUpdated tells subscribers that uri changed; set once the serving entry is known.
let notifyUpdated = async () => {};

// answerOf describes one input response for the ask tool's result.
function answerOf(responses, key) {
    const view = inputResponse(responses, key);
    switch (view.kind) {
        case 'elicit':
            return { action: view.action, ...(view.content !== undefined && { content: view.content }) };
        case 'sampling': {
            const c = view.result.content;
            return { text: !Array.isArray(c) && c?.type === 'text' ? c.text : undefined, model: view.result.model };
        }
        case 'roots':
            return { roots: view.roots.map(r => r.uri) };
        default:
            return { missing: true };
    }
}

function inputRequestOf(kind) {
    switch (kind) {
        case 'form':
            return inputRequired.elicit({
                message: 'What is your name?',
                requestedSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] }
            });
        case 'url':
            return inputRequired.elicitUrl({ message: 'Sign in to continue', url: 'https://example.com/v2server/signin' });
        case 'sampling':
            return inputRequired.createMessage({
                messages: [{ role: 'user', content: { type: 'text', text: 'Say hello' } }],
                maxTokens: 20
            });
        case 'roots':
            return inputRequired.listRoots();
        default:
            throw new Error(`unknown input kind ${kind}`);
    }
}

function buildServer() {
    const server = new McpServer(
        { name: 'v2server', version: '2.4.0' },
        {
            capabilities: {
                tools: { listChanged: true },
                prompts: { listChanged: true },
                resources: { subscribe: true, listChanged: true },
                logging: {},
                completions: {}
            },
            instructions: 'A test server on the TypeScript SDK v2.'
        }
    );

    server.registerTool('echo', { description: 'Echoes text back', inputSchema: z.object({ text: z.string() }) }, async ({ text }) => ({
        content: [{ type: 'text', text }]
    }));

    server.registerTool(
        'ask',
        {
            description: 'Asks the client for input of the listed kinds (form, url, sampling, roots) in one round',
            inputSchema: z.object({ kinds: z.array(z.enum(['form', 'url', 'sampling', 'roots'])).min(1) })
        },
        async ({ kinds }, ctx) => {
            const responses = ctx.mcpReq.inputResponses;
            if (responses === undefined) {
                const inputRequests = {};
                for (const kind of kinds) inputRequests[kind] = inputRequestOf(kind);
                return inputRequired({ inputRequests, requestState: REQUEST_STATE });
            }
            const state = ctx.mcpReq.requestState();
            if (state !== REQUEST_STATE) {
                return { content: [{ type: 'text', text: `requestState came back as ${JSON.stringify(state)}, not ${REQUEST_STATE}` }], isError: true };
            }
            const answers = {};
            for (const kind of kinds) answers[kind] = answerOf(responses, kind);
            return { content: [{ type: 'text', text: JSON.stringify(answers) }] };
        }
    );

    server.registerTool(
        'askmore',
        {
            description: 'Asks one form question per round, for the given number of rounds',
            inputSchema: z.object({ rounds: z.number().int().min(1).max(20) })
        },
        async ({ rounds }, ctx) => {
            const responses = ctx.mcpReq.inputResponses;
            let done = 0;
            if (responses !== undefined) {
                const state = ctx.mcpReq.requestState();
                const m = /^askmore-(\d+)$/.exec(state ?? '');
                if (m === null || answerOf(responses, `q${m[1]}`).action !== 'accept') {
                    return { content: [{ type: 'text', text: `bad retry: requestState ${JSON.stringify(state)}` }], isError: true };
                }
                done = Number(m[1]);
            }
            if (done >= rounds) return { content: [{ type: 'text', text: `answered ${done}` }] };
            return inputRequired({ inputRequests: { [`q${done + 1}`]: inputRequestOf('form') }, requestState: `askmore-${done + 1}` });
        }
    );

    server.registerTool(
        'progress',
        { description: 'Reports progress and logs once per step', inputSchema: z.object({ steps: z.number().int().min(1).max(20) }) },
        async ({ steps }, ctx) => {
            const token = ctx.mcpReq._meta?.progressToken;
            for (let i = 1; i <= steps; i++) {
                await ctx.mcpReq.log('info', `step ${i} of ${steps}`, 'v2server');
                if (token !== undefined) {
                    await ctx.mcpReq.notify({ method: 'notifications/progress', params: { progressToken: token, progress: i, total: steps } });
                }
            }
            return { content: [{ type: 'text', text: `done ${steps}` }] };
        }
    );

    server.registerTool('touch', { description: 'Notifies that a resource changed', inputSchema: z.object({ uri: z.string() }) }, async ({ uri }) => {
        if (uri === 'v2://counter') counter++;
        await notifyUpdated(server, uri);
        return { content: [{ type: 'text', text: `touched ${uri}` }] };
    });

    server.registerTool('add_tool', { description: 'Adds a tool at run time', inputSchema: z.object({ name: z.string() }) }, async ({ name }) => {
        server.registerTool(name, { description: 'Added at run time', inputSchema: z.object({}) }, async () => ({
            content: [{ type: 'text', text: `added ${name}` }]
        }));
        return { content: [{ type: 'text', text: `added ${name}` }] };
    });

    server.registerTool('slow', { description: 'Waits, or until cancelled', inputSchema: z.object({ ms: z.number().int().min(0) }) }, async ({ ms }, ctx) => {
        await new Promise(resolve => {
            const timer = setTimeout(resolve, ms);
            ctx.mcpReq.signal.addEventListener('abort', () => {
                clearTimeout(timer);
                resolve();
            });
        });
        return { content: [{ type: 'text', text: ctx.mcpReq.signal.aborted ? 'cancelled' : 'slept' }] };
    });

    server.registerPrompt(
        'greet',
        {
            description: 'Greets someone',
            argsSchema: z.object({ name: completable(z.string(), value => NAMES.filter(n => n.startsWith(value))) })
        },
        ({ name }) => ({ messages: [{ role: 'user', content: { type: 'text', text: `Hello, ${name}!` } }] })
    );

    server.registerResource('counter', 'v2://counter', { mimeType: 'text/plain', description: 'A counter that touch bumps' }, async uri => ({
        contents: [{ uri: uri.href, mimeType: 'text/plain', text: String(counter) }]
    }));

    server.registerResource(
        'item',
        new ResourceTemplate('v2://item/{id}', {
            list: undefined,
            complete: { id: value => ITEMS.filter(i => i.startsWith(value)) }
        }),
        { mimeType: 'text/plain', description: 'An item by id' },
        async (uri, { id }) => ({ contents: [{ uri: uri.href, mimeType: 'text/plain', text: `item ${id}` }] })
    );

    // 2025-era subscriptions (the 2026 era subscribes with subscriptions/listen, which the entries serve).
    server.server.setRequestHandler('resources/subscribe', async () => ({}));
    server.server.setRequestHandler('resources/unsubscribe', async () => ({}));
    return server;
}

// serveHTTP serves handler on 127.0.0.1:port with node:http, turning each request into a web Request (the SDK's
// handler is fetch-shaped) and streaming the Response back. A client that goes away aborts the request, which is
// how the 2026 era cancels over HTTP.
function serveHTTP(handler, port) {
    const httpServer = createServer(async (req, res) => {
        const abort = new AbortController();
        res.on('close', () => abort.abort());
        try {
            if (new URL(req.url, 'http://x').pathname !== '/mcp') {
                res.writeHead(404).end('not found');
                return;
            }
            const chunks = [];
            for await (const chunk of req) chunks.push(chunk);
            const headers = new Headers();
            for (const [name, value] of Object.entries(req.headers)) {
                if (Array.isArray(value)) value.forEach(v => headers.append(name, v));
                else if (value !== undefined) headers.set(name, value);
            }
            const hasBody = req.method !== 'GET' && req.method !== 'HEAD' && chunks.length > 0;
            const request = new Request(`http://${req.headers.host ?? '127.0.0.1'}${req.url}`, {
                method: req.method,
                headers,
                body: hasBody ? Buffer.concat(chunks) : undefined,
                signal: abort.signal
            });
            const response = await handler.fetch(request);
            res.writeHead(response.status, Object.fromEntries(response.headers));
            if (response.body === null) {
                res.end();
                return;
            }
            const body = Readable.fromWeb(response.body);
            res.on('close', () => body.destroy());
            body.on('error', () => res.destroy());
            body.pipe(res);
        } catch (err) {
            process.stderr.write(`v2server: ${err?.stack ?? err}\n`);
            if (!res.headersSent) res.writeHead(500);
            res.end();
        }
    });
    httpServer.listen(port, '127.0.0.1', () => {
        const { port: bound } = httpServer.address();
        process.stdout.write(JSON.stringify({ url: `http://127.0.0.1:${bound}/mcp` }) + '\n');
    });
    const stop = () => {
        httpServer.closeAllConnections();
        httpServer.close(() => process.exit(0));
        handler.close().catch(() => {});
    };
    process.on('SIGTERM', stop);
    process.on('SIGINT', stop);
}

try {
    const opts = parseArgs(process.argv.slice(2));
    if (opts.http !== undefined) {
        const handler = createMcpHandler(() => buildServer(), {
            legacy: opts.legacy === 'reject' ? 'reject' : 'stateless',
            onerror: err => process.stderr.write(`v2server: ${err.message}\n`)
        });
        notifyUpdated = async (_server, uri) => handler.notify.resourceUpdated(uri);
        serveHTTP(handler, opts.http);
    } else {
        // On stdio one instance serves the connection: its own sendResourceUpdated reaches a 2025-era subscriber,
        // and serveStdio routes it onto the open subscriptions/listen streams of a 2026-era one.
        notifyUpdated = async (server, uri) => server.server.sendResourceUpdated({ uri });
        serveStdio(() => buildServer(), {
            legacy: opts.legacy,
            onerror: err => process.stderr.write(`v2server: ${err.message}\n`)
        });
    }
} catch (err) {
    process.stderr.write(`v2server: ${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
}
