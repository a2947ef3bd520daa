// Package tasktable holds the gateway's two task tables (MCP tasks,
// protocol 2025-11-25), behind a small API that knows sessions and server
// names, not how requests travel:
//
//   - ServerTasks: tasks servers run for agents. Each gets an id of the
//     gateway's own ("task-" and random hex), since two servers may use the
//     same ids and an agent must reach only its own tasks (servers see one
//     client, the gateway, for every agent session). Lookup maps an agent's
//     id to the server and its id; Exported maps back, for the server's
//     status notifications.
//   - AgentTasks: tasks agents run for servers (a task-augmented sampling or
//     elicitation request). The agent's id goes to the server unchanged
//     unless another live task of that server already has it.
//
// Both are bounded the same way (tasktable.go): a task is forgotten once
// its ttl has passed, when its agent session is gone, and beyond a cap per
// session, oldest first. A status can arrive before the answer that makes
// its task known; while a task-augmented request is in flight (Expect),
// such statuses are held (Hold) and handed back with the task (Export,
// Add).
//
// The tables are safe for concurrent use; they relay nothing themselves
// (internal/aggregate does).
package tasktable
