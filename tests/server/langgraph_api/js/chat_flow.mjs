// agent-chat-ui's calls through LangGraph's JavaScript SDK, unchanged: node chat_flow.mjs API_URL API_KEY
// Prints one JSON object with what the test checks.
import { Client } from "@langchain/langgraph-sdk";

const [apiUrl, apiKey] = process.argv.slice(2);
const client = new Client({ apiUrl, apiKey });
const say = (text) => ({ messages: [{ role: "user", content: text }] });
const modes = ["values", "messages-tuple"];

async function collect(stream) {
  const parts = [];
  for await (const part of stream) parts.push(part);
  return parts;
}
const lastValues = (parts) =>
  parts.filter((p) => p.event === "values" && !("__interrupt__" in p.data)).at(-1).data;

const out = {};
const thread = await client.threads.create({ metadata: { ui: "js" } });
const tid = thread.thread_id;
const created = [];
let parts = await collect(
  client.runs.stream(tid, "chat-agent", {
    input: say("hello"),
    streamMode: modes,
    streamSubgraphs: true,
    streamResumable: true,
    onDisconnect: "continue",
    onRunCreated: (meta) => created.push(meta),
  }),
);
out.threadId = tid;
out.events = parts.map((p) => p.event);
out.runId = parts[0].data.run_id;
out.created = created[0];
out.reply = lastValues(parts).messages.at(-1).content;
out.streamedMessages = parts.filter((p) => p.event === "messages").map((p) => p.data[0].id);

parts = await collect(client.runs.stream(tid, "chat-agent", { input: say("batch please"), streamMode: modes }));
out.interrupt = parts.filter((p) => p.event === "values" && "__interrupt__" in p.data).at(-1).data.__interrupt__;
out.interruptedStatus = (await client.threads.get(tid)).status;

const decisions = [{ type: "approve" }, { type: "reject", message: "keep the log" }];
parts = await collect(client.runs.stream(tid, "chat-agent", { command: { resume: { decisions } }, streamMode: modes }));
out.tools = Object.fromEntries(
  lastValues(parts).messages.filter((m) => m.type === "tool").map((m) => [m.name, m.content]),
);
const after = await client.threads.get(tid);
out.status = after.status;
out.metadata = after.metadata;
out.searched = (await client.threads.search({ metadata: { ui: "js" }, limit: 100 })).map((t) => t.thread_id);
out.history = (await client.threads.getHistory(tid, { limit: 2 })).length;

// agent-chat-ui's edit: a run from the parent of the state the first message first appeared in
const states = await client.threads.getHistory(tid, { limit: 100 });
const firstSeen = states.filter((s) => (s.values.messages ?? []).some((m) => m.content === "hello")).at(-1);
parts = await collect(
  client.runs.stream(tid, "chat-agent", {
    input: say("hi"),
    checkpoint: firstSeen.parent_checkpoint,
    streamMode: modes,
  }),
);
out.edited = lastValues(parts).messages.map((m) => m.content);
out.editedThread = (await client.threads.get(tid)).values.messages.map((m) => m.content);
console.log(JSON.stringify(out));
