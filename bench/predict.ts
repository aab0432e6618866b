// Issue 3 benchmark: POST /v1/predict on the sandbox engine (test key) with a ~300 KB screenshot,
// next to a bare Fastify handler that parses the same body, measured in turns in the same run; reports issue 16's row.
//   npm run bench -- predict
import { randomBytes } from "node:crypto";
import { makePng } from "@cua/base/images/screenshot";
import { loadInterleaved, reportTarget, row, spawnAndWait, startBenchService } from "./lib.ts";

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
      `\n== predict on the sandbox engine, ${(body.length / 1024).toFixed(0)} KB body (${(Buffer.from(shot, "base64").length / 1024).toFixed(0)} KB PNG), 10 connections, the two in turns (4 rounds of 2 s) ==`,
    );
    // in turns, so that a change of load on a shared machine falls on both rows alike
    const [b, p] = await loadInterleaved([
      {
        url: `${bareUrl(bare.match[1]!)}/bare`,
        method: "POST",
        headers: { "content-type": "application/json" },
        body,
        connections: 10,
      },
      {
        url: `${svc.url}/v1/predict`,
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": svc.account.test_key },
        body,
        connections: 10,
      },
    ]);
    console.log(row("bare Fastify POST (parse the same body)", b!));
    console.log(row("POST /v1/predict (test key, sandbox)", p!, b));
    const ratio = p!.rps / b!.rps;
    reportTarget({
      row: "POST /v1/predict (sandbox, 300 KB image) vs a bare handler parsing the same body",
      value: `${ratio.toFixed(2)}x`,
      baseline: `${b!.rps.toFixed(0)} req/s`,
      target: ">= 0.85x",
      met: ratio >= 0.85 && p!.non2xx === 0 && p!.errors === 0,
    });
  } finally {
    bare.child.kill("SIGTERM");
    await svc.stop();
  }
}

const bareUrl = (port: string) => `http://127.0.0.1:${port}`;
