// bench/mcp_screenshot.py's figures through the official TypeScript MCP client (the SDK most MCP hosts use), with
// the baseline from this same runtime: `node client.mjs URL N` prints {label: [ms, ...]} as JSON.
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { SSEClientTransport } from "@modelcontextprotocol/sdk/client/sse.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const [url, n] = [process.argv[2], Number(process.argv[3] ?? 100)];

async function connect(transport) {
  const client = new Client({ name: "deskpilot-bench", version: "1" });
  await client.connect(transport);
  return client;
}

const sse = await connect(new SSEClientTransport(new URL(`${url}/mcp`)));
const streamable = await connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`)));
const over = (client) => async () => (await client.callTool({ name: "computer_screenshot", arguments: {} })).content[0].data;
const shots = {
  "POST /computer-use (baseline)": async () => {
    const r = await fetch(`${url}/computer-use`, {
      method: "POST", headers: { "content-type": "application/json" }, body: '{"action":"screenshot"}',
    });
    return (await r.json()).data.image;
  },
  "MCP over SSE": over(sse),
  "MCP streamable HTTP": over(streamable),
};
const order = Object.entries(shots);
for (const [, shot] of order) for (let i = 0; i < 10; i++) await shot();
const times = Object.fromEntries(order.map(([label]) => [label, []]));
for (let i = 0; i < n; i++) {
  const k = i % order.length;
  for (const [label, shot] of [...order.slice(k), ...order.slice(0, k)]) {
    const t = performance.now();
    if ((await shot()).length < 100000) throw new Error(`${label}: no image`);
    times[label].push(performance.now() - t);
  }
}
await sse.close();
await streamable.close();
console.log(JSON.stringify(times));
