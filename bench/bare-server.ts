// A bare Fastify handler for comparison: same JSON parsing, a static body, no auth, no database.

import { modelsCatalog } from "@cua/core/pricing/pricing";
import Fastify from "fastify";

const app = Fastify({ logger: false, bodyLimit: 15 * 1024 * 1024 });
const body = modelsCatalog();
app.get("/bare", async () => body);
app.post("/bare", async (req) => ({ ok: true, size: JSON.stringify(req.body ?? null).length }));
await app.listen({ port: Number(process.env.PORT ?? 0), host: "127.0.0.1" });
const a = app.server.address();
console.log(`BARE_LISTENING ${typeof a === "object" && a ? a.port : 0}`);
