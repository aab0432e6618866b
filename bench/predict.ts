// Issue 3 benchmark: POST /v1/predict on the sandbox engine (test key) with a ~300 KB screenshot,
// next to a bare Fastify handler that parses the same body, measured in the same run.
//   npm run bench -- predict
import { randomBytes } from "node:crypto";
import { makePng } from "@cua/base/images/screenshot";
import { load, row, spawnAndWait, startBenchService } from "./lib.ts";

/** A PNG of about `bytes` bytes: random pixels do not compress. */
function screenshotOf(bytes: number): string {
  const side = Math.ceil(Math.sqrt(bytes / 4));
  const noise = randomBytes(side * side * 4);
  return makePng(side, side, (x, y) => {
    const i = (y * side + x) * 4;
    return [noise[i]!, noise[i + 1]!, noise[i + 2]!, 255];
  }).toString("base64");
}

export async function benchPredict() {
  const svc = await startBenchService();
  const bare = await spawnAndWait("bench/bare-server.ts", {}, /BARE_LISTENING (\d+)/);
  const shot = screenshotOf(300 * 1024);
  const body = JSON.stringify({ screenshot: shot, instruction: "click 10,20 then type 'hello'" });
  try {
    console.log(
      `\n== predict on the sandbox engine, ${(body.length / 1024).toFixed(0)} KB body (${(Buffer.from(shot, "base64").length / 1024).toFixed(0)} KB PNG), 10 connections, 8 s ==`,
    );
    const b = await load({
      url: `${bareUrl(bare.match[1]!)}/bare`,
      method: "POST",
      headers: { "content-type": "application/json" },
      body,
      connections: 10,
    });
    console.log(row("bare Fastify POST (parse the same body)", b));
    const p = await load({
      url: `${svc.url}/v1/predict`,
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": svc.account.test_key },
      body,
      connections: 10,
    });
    console.log(row("POST /v1/predict (test key, sandbox)", p, b));
  } finally {
    bare.child.kill("SIGTERM");
    await svc.stop();
  }
}

const bareUrl = (port: string) => `http://127.0.0.1:${port}`;
