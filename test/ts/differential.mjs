#!/usr/bin/env node
// The client half of the differential test (cmd/mcp-gateway/differential_test.go): one script, one fixed plan, run
// against a server connected directly and against the same server behind the gateway, so that the Go test can compare
// what the client received in each case.
//
// Usage:
//   node differential.mjs everything|filesystem stdio <command> [args...]
//   node differential.mjs everything|filesystem http <url> [token]
//
// The client is the official TypeScript SDK client with every client capability a real agent may declare (sampling,
// elicitation in form and URL mode, roots with listChanged, tasks for sampling and elicitation) and handlers that
// answer. It records every message it RECEIVES, as parsed from the wire by the transport (before the SDK's schemas
// see it), grouped by step of the plan, and prints ONE JSON object to stdout:
//   {"<step>": {"result": <result or error>, "progress": [...], "requests": [...], "notifications": [...]}, ...}
// result is the raw result (or {"error": ...}) of the step's request, requestId the JSON-RPC id the client gave it,
// progress the notifications/progress received during the step, requests the server-to-client requests received
// during the step (method and params) and notifications every other notification received during the step. notifications/*/list_changed are
// left out of every step: when they come depends on when the server registered its items relative to this client's
// connection (server-everything adds tools after initialize), not on what is relayed; the lists themselves are
// compared after they have settled. Nothing is normalised here: the Go test does that, and says why.
//
// Environment: DIFF_ROOT (filesystem: the directory the server was started with; its "sub" directory is offered as
// the client's root, so that a server that takes the client's roots shows it), DIFF_ROOTS_URI (everything: the root
// offered). On a failure of the plan itself (not of a step: a step's error is recorded) the message goes to stderr
// and the exit code is 1.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js';
import {
    CreateMessageRequestSchema,
    ElicitRequestSchema,
    ListRootsRequestSchema,
    LoggingMessageNotificationSchema,
} from '@modelcontextprotocol/sdk/types.js';
import { z } from 'zod';

const [profile, mode, target, ...rest] = process.argv.slice(2);
if (!['everything', 'filesystem'].includes(profile) || !['stdio', 'http'].includes(mode) || !target) {
    process.stderr.write('usage: node differential.mjs everything|filesystem stdio <command> [args...] | http <url> [token]\n');
    process.exit(2);
}

// Every message received, in arrival order, with the step that was running when it came.
const received = [];
let currentStep = 'initialize';
const waiters = new Set();
// The id of the last request the client sent in each step: the SDK uses it as the request's progress token.
const requestIds = new Map();

// RecordingTransport hands every message the real transport parsed to the recorder first, then to the client.
class RecordingTransport {
    constructor(inner) {
        this.inner = inner;
    }
    async start() {
        this.inner.onmessage = (message, extra) => {
            received.push({ step: currentStep, message: JSON.parse(JSON.stringify(message)) });
            for (const w of [...waiters]) w();
            this.onmessage?.(message, extra);
        };
        this.inner.onclose = () => this.onclose?.();
        this.inner.onerror = err => this.onerror?.(err);
        return this.inner.start();
    }
    send(message, options) {
        if (message.method !== undefined && message.id !== undefined && message.method !== 'ping') {
            requestIds.set(currentStep, message.id);
        }
        return this.inner.send(message, options);
    }
    close() {
        return this.inner.close();
    }
    get sessionId() {
        return this.inner.sessionId;
    }
    setProtocolVersion(v) {
        this.inner.setProtocolVersion?.(v);
    }
}

// PATIENCE_MS bounds every wait for something a server does by itself (a message it sends outside any request, a
// state it reaches): each wait ends as soon as what it waits for comes, so the bound costs nothing when it comes;
// it is long because on a loaded machine (tens of runnable processes per core) a few hops between processes can
// take seconds, and a wait that ended early would put the message in another step and show a difference that is
// only the machine's speed. A message that never comes still shows, after the bound.
const PATIENCE_MS = 30000;

// waitUntil resolves with cond()'s value once it is truthy (checked now and at each message received), or rejects
// after ms.
function waitUntil(cond, ms, what) {
    return new Promise((resolve, reject) => {
        const check = () => {
            const hit = cond();
            if (hit) {
                waiters.delete(check);
                clearTimeout(timer);
                resolve(hit);
            }
        };
        const timer = setTimeout(() => {
            waiters.delete(check);
            reject(new Error(`timed out after ${ms} ms waiting for ${what}`));
        }, ms);
        waiters.add(check);
        check();
    });
}

// waitFor resolves once pred holds for a message received (from the from-th on), or rejects after ms.
function waitFor(pred, ms, what, from = 0) {
    return waitUntil(() => received.slice(from).find(r => pred(r.message))?.message, ms, what);
}

const rootDir = process.env.DIFF_ROOT;
const roots = profile === 'filesystem'
    ? [{ uri: `file://${rootDir}/sub`, name: 'sub' }]
    : [{ uri: process.env.DIFF_ROOTS_URI || 'file:///differential/root', name: 'differential root' }];

const taskStore = new InMemoryTaskStore();
const client = new Client({ name: 'mcp-gateway-differential', version: '1.0.0' }, {
    capabilities: {
        sampling: {},
        elicitation: { form: {}, url: {} },
        roots: { listChanged: true },
        tasks: { list: {}, cancel: {}, requests: { sampling: { createMessage: {} }, elicitation: { create: {} } } },
    },
    taskStore,
});

// A deterministic answer to a form: the first enum value, else a value of the declared type and format.
function fillForm(schema) {
    const content = {};
    for (const [name, prop] of Object.entries(schema?.properties ?? {})) {
        if (prop.type === 'array') {
            const items = prop.items ?? {};
            const first = Array.isArray(items.enum) ? items.enum[0] : (items.anyOf ?? items.oneOf)?.[0]?.const;
            content[name] = first === undefined ? [] : [first];
        } else if (Array.isArray(prop.enum)) content[name] = prop.enum[0];
        else if (Array.isArray(prop.oneOf)) content[name] = prop.oneOf[0].const;
        else if (prop.type === 'boolean') content[name] = true;
        else if (prop.type === 'integer') content[name] = prop.minimum ?? 1;
        else if (prop.type === 'number') content[name] = prop.minimum ?? 1.5;
        else if (prop.format === 'email') content[name] = 'agent@example.com';
        else if (prop.format === 'uri') content[name] = 'https://example.com/agent';
        else if (prop.format === 'date') content[name] = '2026-01-02';
        else if (prop.format === 'date-time') content[name] = '2026-01-02T03:04:05Z';
        else content[name] = `value of ${name}`;
    }
    return content;
}

// answerAsTask turns an answer into a client-side task when the server asked for one (params.task).
async function answerMaybeAsTask(request, extra, result) {
    if (!request.params.task) return result;
    const task = await extra.taskStore.createTask({ ttl: request.params.task.ttl ?? 60000 });
    await extra.taskStore.storeTaskResult(task.taskId, 'completed', result);
    return { task };
}

client.setRequestHandler(CreateMessageRequestSchema, async (request, extra) => {
    const last = request.params.messages.at(-1);
    const prompt = last?.content?.type === 'text' ? last.content.text : '';
    return answerMaybeAsTask(request, extra, {
        role: 'assistant',
        content: { type: 'text', text: `sampled answer to: ${prompt}` },
        model: 'differential-model',
        stopReason: 'endTurn',
    });
});
client.setRequestHandler(ElicitRequestSchema, async (request, extra) => {
    if (request.params.mode === 'url') {
        return answerMaybeAsTask(request, extra, { action: 'accept' });
    }
    return answerMaybeAsTask(request, extra, { action: 'accept', content: fillForm(request.params.requestedSchema) });
});
client.setRequestHandler(ListRootsRequestSchema, async () => ({ roots }));
client.setNotificationHandler(LoggingMessageNotificationSchema, () => {});

let inner;
if (mode === 'stdio') {
    inner = new StdioClientTransport({ command: target, args: rest, stderr: 'inherit', env: process.env });
} else {
    const headers = rest[0] ? { Authorization: `Bearer ${rest[0]}` } : {};
    inner = new StreamableHTTPClientTransport(new URL(target), { requestInit: { headers } });
}
const transport = new RecordingTransport(inner);

const out = {};
const anyResult = z.object({}).passthrough();
const requestOptions = { timeout: 30000 };

// step runs one request of the plan and records what came back for it.
async function step(name, method, params, { progress = false, onProgress, signal } = {}) {
    currentStep = name;
    const opts = { ...requestOptions, signal };
    if (progress) {
        opts.onprogress = p => onProgress?.(p);
        opts.resetTimeoutOnProgress = true;
    }
    const before = received.length;
    try {
        await client.request({ method, params }, anyResult, opts);
    } catch (err) {
        // The error is recorded from the wire below; a local one (timeout, abort) as such.
        if (!received.slice(before).some(r => r.message.error !== undefined && r.message.id !== undefined)) {
            out[name] = { localError: String(err?.message ?? err) };
        }
    }
    collect(name);
    return out[name];
}

// collect sorts what arrived during step name into its record.
function collect(name) {
    const rec = out[name]?.localError !== undefined ? { localError: out[name].localError } : {};
    if (requestIds.has(name)) rec.requestId = requestIds.get(name);
    const mine = received.filter(r => r.step === name);
    for (const { message } of mine) {
        if (message.id !== undefined && message.method === undefined) {
            // A response: ours for this step (the client's ids are its own, one request per step, except tasks/*
            // polling, which records the last).
            rec.result = message.error !== undefined ? { error: message.error } : message.result;
        } else if (message.id !== undefined) {
            (rec.requests ??= []).push({ method: message.method, params: message.params });
        } else if (message.method === 'notifications/progress') {
            (rec.progress ??= []).push(message.params);
        } else if (message.method === 'notifications/tasks/status') {
            // Collected for the whole task below: which poll they fall in is timing.
        } else if (!/^notifications\/.*list_changed$/.test(message.method)) {
            (rec.notifications ??= []).push({ method: message.method, params: message.params });
        }
    }
    // Members in one order, whatever came first (the record's shape is this script's, not the wire's).
    const ordered = {};
    for (const k of ['localError', 'requestId', 'result', 'progress', 'requests', 'notifications']) {
        if (rec[k] !== undefined) ordered[k] = rec[k];
    }
    out[name] = ordered;
}

async function listAll(name, method, key) {
    currentStep = name;
    const pages = [];
    let cursor;
    do {
        const page = await client.request({ method, params: cursor === undefined ? {} : { cursor } }, anyResult, requestOptions);
        pages.push(page);
        cursor = page.nextCursor;
    } while (cursor !== undefined);
    out[name] = { result: { [key]: pages.flatMap(p => p[key]), pages: pages.length } };
    return out[name].result[key];
}

async function runEverything() {
    // server-everything registers the tools that depend on the client's capabilities after initialize: wait until
    // the listing has them (the task tool is the last one registered), PATIENCE_MS at most.
    const deadline = Date.now() + PATIENCE_MS;
    let tools;
    for (;;) {
        tools = await listAll('tools/list', 'tools/list', 'tools');
        if (tools.some(t => t.name === 'trigger-elicitation-request-async') || Date.now() > deadline) break;
        await new Promise(r => setTimeout(r, 200));
    }
    // It also asks for the client's roots 350 ms after initialize, outside any call, and logs what it got (through
    // a gateway, whose server was initialized long before this client came, it asks when the gateway tells it that
    // this client's roots changed): wait for that, and for the log of every roots/list that came by then (a server
    // may ask twice, see the Go test), PATIENCE_MS at most.
    currentStep = 'server requests after initialize';
    const rootsLog = m => m.method === 'notifications/message' && /Roots updated|no roots/.test(String(m.params?.data));
    await waitUntil(() => {
        const logs = received.filter(r => rootsLog(r.message)).length;
        return logs > 0 && logs >= received.filter(r => r.message.method === 'roots/list').length;
    }, PATIENCE_MS, 'the roots sync').catch(() => {});
    // When the server asks is its own choice (directly: 350 ms after initialize; through a gateway: as soon as this
    // client can be asked, which may be while the tools are listed): what it sent since initialize, other than
    // answers, belongs to this step whichever step was running.
    for (const r of received) {
        const answer = r.message.id !== undefined && r.message.method === undefined;
        if (!answer && (r.step === 'initialize' || r.step === 'tools/list')) r.step = 'server requests after initialize';
    }
    collect('server requests after initialize');
    await listAll('prompts/list', 'prompts/list', 'prompts');
    await listAll('resources/list', 'resources/list', 'resources');
    await listAll('resources/templates/list', 'resources/templates/list', 'resourceTemplates');

    await step('logging/setLevel', 'logging/setLevel', { level: 'debug' });

    const call = (tool, args, extra, label = `tools/call ${tool}`) => step(label, 'tools/call', { name: tool, arguments: args }, extra);
    await call('echo', { message: 'hello from the differential test' });
    await call('get-annotated-message', { messageType: 'success', includeImage: true });
    await call('get-annotated-message', { messageType: 'error' }, {}, 'tools/call get-annotated-message error');
    await call('get-env', {});
    await call('get-resource-links', { count: 3 });
    await call('get-resource-reference', { resourceType: 'Text', resourceId: 2 });
    await call('get-structured-content', { location: 'Chicago' });
    await call('get-sum', { a: 2, b: 40.5 });
    await call('get-tiny-image', {});
    await call('gzip-file-as-resource', { name: 'hello.txt.gz', data: 'data:text/plain;base64,aGVsbG8gZ2F0ZXdheQ==', outputType: 'resource' });
    await call('trigger-long-running-operation', { duration: 1, steps: 3 }, { progress: true });
    await call('get-roots-list', {});
    await call('trigger-sampling-request', { prompt: 'What is 2+2?', maxTokens: 20 });
    await call('trigger-elicitation-request', {});
    await call('trigger-url-elicitation', { url: 'https://example.com/consent', elicitationId: 'differential-elicitation' });
    await call('trigger-sampling-request-async', { prompt: 'Async: what is 3+3?', maxTokens: 20 });
    await call('trigger-elicitation-request-async', {});
    await call('get-sum', { a: 'not a number' }, {}, 'tools/call get-sum bad arguments');
    await step('tools/call unknown tool', 'tools/call', { name: 'no-such-tool', arguments: {} });

    // Logging: the simulated logger sends one message at once, then every 5 s; the first is the one compared.
    currentStep = 'tools/call toggle-simulated-logging';
    await call('toggle-simulated-logging', {});
    await waitFor(m => m.method === 'notifications/message' && /-level message| level-message/.test(String(m.params?.data)), PATIENCE_MS, 'a simulated log message');
    collect('tools/call toggle-simulated-logging');
    await step('tools/call toggle-simulated-logging (off)', 'tools/call', { name: 'toggle-simulated-logging', arguments: {} });

    // Cancel: a long operation cancelled after its first progress; a direct server does not answer it (the spec: the
    // receiver SHOULD NOT respond). The ping after the cancel and a call after it show whether an answer came.
    {
        const name = 'tools/call trigger-long-running-operation (cancelled)';
        const ac = new AbortController();
        let firstProgress;
        const gotProgress = new Promise(r => { firstProgress = r; });
        currentStep = name;
        const pending = client.request({ method: 'tools/call', params: { name: 'trigger-long-running-operation', arguments: { duration: 3, steps: 3 } } },
            anyResult, { ...requestOptions, signal: ac.signal, onprogress: () => firstProgress(), resetTimeoutOnProgress: true })
            .then(() => 'answered', err => String(err?.message ?? err));
        await gotProgress;
        ac.abort('differential test cancels');
        const local = await pending;
        // The server goes on to the operation's end (3 s): wait for its last progress (3 of 3), then a ping, so that
        // the later progress and a late answer, if any, arrive in this step.
        const token = requestIds.get(name);
        await waitFor(m => m.method === 'notifications/progress' && m.params?.progressToken === token &&
            m.params.progress === m.params.total, PATIENCE_MS, 'the cancelled operation\'s last progress').catch(() => {});
        await client.request({ method: 'ping' }, anyResult, requestOptions);
        collect(name);
        // The ping's answer is not the cancelled call's: keep only an answer to the call itself.
        const id = requestIds.get(name);
        const answer = received.find(r => r.message.id === id && r.message.method === undefined);
        out[name].result = answer === undefined ? 'no answer' : (answer.message.error !== undefined ? { error: answer.message.error } : answer.message.result);
        out[name].localOutcome = local.includes('differential test cancels') ? 'aborted by the client' : local;
    }

    // Prompts.
    await step('prompts/get simple-prompt', 'prompts/get', { name: 'simple-prompt' });
    await step('prompts/get args-prompt', 'prompts/get', { name: 'args-prompt', arguments: { city: 'Lyon', state: 'Rhône' } });
    await step('prompts/get completable-prompt', 'prompts/get', { name: 'completable-prompt', arguments: { department: 'Engineering', name: 'Alice' } });
    await step('prompts/get resource-prompt', 'prompts/get', { name: 'resource-prompt', arguments: { resourceType: 'Text', resourceId: '3' } });
    await step('prompts/get unknown prompt', 'prompts/get', { name: 'no-such-prompt' });

    // Resources.
    await step('resources/read static', 'resources/read', { uri: 'demo://resource/static/document/features.md' });
    await step('resources/read text template', 'resources/read', { uri: 'demo://resource/dynamic/text/7' });
    await step('resources/read blob template', 'resources/read', { uri: 'demo://resource/dynamic/blob/8' });
    await step('resources/read unknown', 'resources/read', { uri: 'demo://resource/no/such/thing' });

    // Completion.
    await step('completion/complete prompt', 'completion/complete', { ref: { type: 'ref/prompt', name: 'completable-prompt' }, argument: { name: 'department', value: 'E' } });
    await step('completion/complete prompt with context', 'completion/complete', {
        ref: { type: 'ref/prompt', name: 'completable-prompt' }, argument: { name: 'name', value: '' }, context: { arguments: { department: 'Engineering' } },
    });
    await step('completion/complete template', 'completion/complete', { ref: { type: 'ref/resource', uri: 'demo://resource/dynamic/text/{resourceId}' }, argument: { name: 'resourceId', value: '1' } });

    // Subscriptions: subscribe, let the simulated updates send one resources/updated, unsubscribe.
    const uri = 'demo://resource/dynamic/text/1';
    // The server logs each (un)subscribe. Over streamable HTTP that message goes on the standalone GET stream, in no
    // order with the answer on the POST's: wait for it (PATIENCE_MS at most), so that it is recorded in its step
    // either way.
    const logged = async (name, re) => {
        currentStep = name;
        await waitFor(m => m.method === 'notifications/message' && re.test(String(m.params?.data)), PATIENCE_MS, `a log message ${re}`).catch(() => {});
        collect(name);
    };
    await step('resources/subscribe', 'resources/subscribe', { uri });
    await logged('resources/subscribe', /^Received Subscribe Resource request/);
    {
        const name = 'tools/call toggle-subscriber-updates';
        await call('toggle-subscriber-updates', {});
        await waitFor(m => m.method === 'notifications/resources/updated', PATIENCE_MS, 'notifications/resources/updated');
        collect(name);
    }
    await step('resources/unsubscribe', 'resources/unsubscribe', { uri });
    await logged('resources/unsubscribe', /^Received Unsubscribe Resource request/);
    await call('toggle-subscriber-updates', {}, {}, 'tools/call toggle-subscriber-updates (off)');

    // Tasks: the task-augmented tool, called with `task`, polled with tasks/get until it completes, its result
    // fetched with tasks/result; tasks/list and tasks/cancel of a finished task around it.
    {
        const created = await step('tools/call simulate-research-query (task)', 'tools/call', {
            name: 'simulate-research-query', arguments: { topic: 'gateways' }, task: { ttl: 60000 },
        });
        const taskId = created?.result?.task?.taskId;
        if (taskId !== undefined) {
            const statuses = [];
            const until = Date.now() + 2 * PATIENCE_MS; // the task itself takes about 4 s
            for (;;) {
                const got = await step('tasks/get', 'tasks/get', { taskId });
                const status = got?.result?.status;
                if (statuses.at(-1) !== status) statuses.push(status);
                if (status === undefined || ['completed', 'failed', 'cancelled'].includes(status) || Date.now() > until) break;
                await new Promise(r => setTimeout(r, 250));
            }
            out['tasks/get'].statuses = statuses;
            await step('tasks/result', 'tasks/result', { taskId });
            await step('tasks/list', 'tasks/list', {});
            await step('tasks/cancel (finished task)', 'tasks/cancel', { taskId });
        }
        out['notifications/tasks/status'] = {
            notifications: received.filter(r => r.message.method === 'notifications/tasks/status').map(r => r.message),
        };
        await step('tasks/get unknown', 'tasks/get', { taskId: 'no-such-task' });
    }

    // Roots change: the server asks for the new roots and logs how many it got.
    await rootsChanged([...roots, { uri: 'file:///differential/second', name: 'second root' }],
        m => m.method === 'notifications/message' && /Roots updated: 2/.test(String(m.params?.data)));
    await call('get-roots-list', {}, {}, 'tools/call get-roots-list after roots/list_changed');

    await step('ping', 'ping', {});
}

async function runFilesystem() {
    // The server takes the client's roots after initialize: wait until list_allowed_directories shows them,
    // PATIENCE_MS at most (a server that never asks keeps its command-line directory, which is the difference shown).
    await listAll('tools/list', 'tools/list', 'tools');
    await listAll('prompts/list', 'prompts/list', 'prompts').catch(err => { out['prompts/list'] = { localError: String(err.message) }; });
    await listAll('resources/list', 'resources/list', 'resources').catch(err => { out['resources/list'] = { localError: String(err.message) }; });
    await listAll('resources/templates/list', 'resources/templates/list', 'resourceTemplates').catch(err => { out['resources/templates/list'] = { localError: String(err.message) }; });

    const call = (tool, args, label = `tools/call ${tool}`) => step(label, 'tools/call', { name: tool, arguments: args });
    const until = Date.now() + PATIENCE_MS;
    for (;;) {
        const r = await call('list_allowed_directories', {});
        if (JSON.stringify(r).includes(`${rootDir}/sub`) || Date.now() > until) break;
        await new Promise(res => setTimeout(res, 200));
    }
    const sub = `${rootDir}/sub`;
    await call('read_text_file', { path: `${sub}/notes.txt` });
    await call('read_text_file', { path: `${sub}/notes.txt`, head: 1 }, 'tools/call read_text_file head');
    await call('read_media_file', { path: `${sub}/pixel.png` });
    await call('read_multiple_files', { paths: [`${sub}/notes.txt`, `${sub}/missing.txt`] });
    await call('write_file', { path: `${sub}/written.txt`, content: 'written through the client\n' });
    await call('edit_file', { path: `${sub}/written.txt`, edits: [{ oldText: 'through', newText: 'by' }], dryRun: false });
    await call('create_directory', { path: `${sub}/made/deeper` });
    await call('list_directory', { path: sub });
    await call('list_directory_with_sizes', { path: sub, sortBy: 'name' });
    await call('directory_tree', { path: sub });
    await call('move_file', { source: `${sub}/written.txt`, destination: `${sub}/made/moved.txt` });
    await call('search_files', { path: sub, pattern: '**/*.txt' });
    await call('get_file_info', { path: `${sub}/notes.txt` });
    await call('read_text_file', { path: `${rootDir}/outside.txt` }, 'tools/call read_text_file outside the roots');

    // Roots change to sub/nested: the server asks for them and allows only that directory from then on (when it has
    // processed the answer: poll, PATIENCE_MS at most).
    const nested = `${sub}/nested`;
    await rootsChanged([{ uri: `file://${nested}`, name: 'nested' }], m => m.method === 'roots/list');
    const until2 = Date.now() + PATIENCE_MS;
    for (;;) {
        const r = await call('list_allowed_directories', {}, 'tools/call list_allowed_directories after roots/list_changed');
        if (r?.result?.content?.[0]?.text === `Allowed directories:\n${nested}` || Date.now() > until2) break;
        await new Promise(res => setTimeout(res, 100));
    }
    await call('read_text_file', { path: `${sub}/notes.txt` }, 'tools/call read_text_file outside the new roots');
    await step('ping', 'ping', {});
}

// rootsChanged replaces the client's roots, tells the server (notifications/roots/list_changed) and waits for what
// the server does about it (PATIENCE_MS at most: a gateway that did not relay it shows as the difference).
async function rootsChanged(newRoots, serverReacted) {
    const name = 'notifications/roots/list_changed';
    currentStep = name;
    roots.splice(0, roots.length, ...newRoots);
    const before = received.length;
    await client.sendRootsListChanged();
    await waitFor(serverReacted, PATIENCE_MS, 'the server to take the new roots', before)
        .catch(() => {});
    collect(name);
}

try {
    await client.connect(transport, requestOptions);
    out.initialize = { result: received.find(r => r.message.id !== undefined && r.message.result?.protocolVersion)?.message.result };
    if (profile === 'everything') await runEverything(); else await runFilesystem();
    currentStep = 'closing';
    if (mode === 'http') await inner.terminateSession().catch(() => {});
    await client.close();
    await new Promise(resolve => process.stdout.write(JSON.stringify(out) + '\n', resolve));
    process.exit(0);
} catch (err) {
    process.stderr.write(`differential.mjs (${currentStep}): ${err?.stack ?? err}\n`);
    process.exit(1);
}
