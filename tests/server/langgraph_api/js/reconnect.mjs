// useStream's reconnect through LangGraph's JavaScript SDK, unchanged: node reconnect.mjs API_URL API_KEY
// Streams the "counter" graph; prints the events and values it got (across any reconnect) as JSON.
import { Client } from "@langchain/langgraph-sdk";

const [apiUrl, apiKey] = process.argv.slice(2);
const client = new Client({ apiUrl, apiKey });
const thread = await client.threads.create();
const parts = [];
for await (const part of client.runs.stream(thread.thread_id, "counter", {
  input: { n: 0 },
  streamMode: "values",
  streamResumable: true,
})) parts.push(part);
console.log(
  JSON.stringify({
    threadId: thread.thread_id,
    events: parts.map((p) => p.event),
    values: parts.filter((p) => p.event === "values").map((p) => p.data),
  }),
);
