#!/usr/bin/env node
// Tasks the CLIENT runs (protocol 2025-11-25, the client-side tasks capability), through the gateway: the official
// TypeScript SDK client as the task receiver (its task store answers tasks/get, tasks/result, tasks/list and
// tasks/cancel), calling the fixture's client_task tool (internal/fixture/clienttasks.go), which asks the client to run
// sampling or elicitation as a task and then drives the task as a server would. Used by TestClientTasks*.
//
// Usage:
//   node clienttasks.mjs http <url> <token>     two sessions, A and B, plus C whose client declares no tasks
//   node clienttasks.mjs stdio <command> [args...]   one session, A
//
// Both task stores make ids from a counter ("1", "2", ...), as a simple client might, so that A's and B's ids are
// equal. Prints one JSON object: {"<step>": <the tool's report, parsed, or {"error": ...}>, ...}.

import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { InMemoryTaskStore } from '@modelcontextprotocol/sdk/experimental/tasks/stores/in-memory.js';
import { CreateMessageRequestSchema, ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';

const [mode, target, ...rest] = process.argv.slice(2);
if (!['http', 'stdio'].includes(mode) || !target) {
    process.stderr.write('usage: node clienttasks.mjs http <url> <token> | stdio <command> [args...]\n');
    process.exit(2);
}

// CountingTaskStore makes task ids "1", "2", ... per client.
class CountingTaskStore extends InMemoryTaskStore {
    n = 0;
    generateTaskId() {
        this.n++;
        return String(this.n);
    }
}

const tasksCapability = { list: {}, cancel: {}, requests: { sampling: { createMessage: {} }, elicitation: { create: {} } } };

// answer runs a request as a task when asked to (params.task): completed at once, unless the request's _meta says
// "fixture/keep-working", which leaves it working (to be cancelled).
async function answer(request, extra, result) {
    if (!request.params.task) return result;
    const task = await extra.taskStore.createTask({ ttl: request.params.task.ttl ?? 60000 });
    if (!request.params._meta?.['fixture/keep-working']) {
        await extra.taskStore.storeTaskResult(task.taskId, 'completed', result);
    }
    return { task };
}

async function connect(name, withTasks) {
    const client = new Client({ name, version: '1.0.0' }, {
        capabilities: {
            sampling: {},
            elicitation: { form: {} },
            ...(withTasks ? { tasks: tasksCapability } : {}),
        },
        ...(withTasks ? { taskStore: new CountingTaskStore() } : {}),
    });
    client.setRequestHandler(CreateMessageRequestSchema, (request, extra) =>
        answer(request, extra, { role: 'assistant', content: { type: 'text', text: `${name} sampled` }, model: name }));
    client.setRequestHandler(ElicitRequestSchema, (request, extra) =>
        answer(request, extra, { action: 'accept', content: { name } }));
    const transport = mode === 'stdio'
        ? new StdioClientTransport({ command: target, args: rest, stderr: 'inherit', env: process.env })
        : new StreamableHTTPClientTransport(new URL(target), { requestInit: { headers: { Authorization: `Bearer ${rest[0]}` } } });
    await client.connect(transport);
    return client;
}

async function run(client, args) {
    try {
        const res = await client.callTool({ name: 'client_task', arguments: args }, undefined, { timeout: 60000 });
        return JSON.parse(res.content[0].text);
    } catch (err) {
        return { error: String(err?.message ?? err) };
    }
}

const out = {};
const a = await connect('A', true);
out['A sampling'] = await run(a, { method: 'sampling/createMessage' });
if (mode === 'http') {
    // B's task store makes the same ids as A's; A's task is still alive (ttl 60 s), and A still connected.
    const b = await connect('B', true);
    out['B elicitation'] = await run(b, { method: 'elicitation/create' });
    const c = await connect('C', false);
    out['C sampling'] = await run(c, { method: 'sampling/createMessage' });
    await b.close();
    await c.close();
}
out['A elicitation cancelled'] = await run(a, { method: 'elicitation/create', cancel: true });
await a.close();
// The task stores' cleanup timers (ttl 60 s) would keep the process alive.
process.stdout.write(JSON.stringify(out) + '\n', () => process.exit(0));
