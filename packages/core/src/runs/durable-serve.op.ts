// The Inngest serve endpoint: the durable executor (a real Inngest server, or the embedded one) calls the
// run functions here with signed requests (raw bodies, the SDK's own protocol). Served by
// apps/api/src/http/inngest-serve.ts at `route`; internal, so not in the public OpenAPI document.
import { z } from "zod";
import { defineOperation } from "../operations/define.ts";

export const durableServeOp = defineOperation({
  id: "internal.inngest",
  method: "POST",
  path: null,
  route: "/api/inngest",
  auth: "signature",
  transport: "inngest",
  input: z.unknown().describe("the Inngest SDK's request (signed raw body)"),
  output: z.unknown().describe("the Inngest SDK's answer"),
  errors: ["INVALID_SIGNATURE"],
  docs: {
    tags: ["Internal"],
    summary: "Inngest serve endpoint",
    description:
      "GET, POST and PUT for the Inngest protocol (function registration and step calls), signed with the signing key.",
  },
});
