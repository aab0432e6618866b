// The external-machine driver protocol, version 1 (SPEC.md "External machines"; DECISIONS.md
// "External machines"). Four routes authenticated by the machine's device token:
//   GET  commands?after&limit&wait_seconds  long poll; at-least-once delivery of outstanding commands
//   POST observations                       one frame; sequence = last_sequence + 1
//   POST commands/{command_id}/results      terminal result; echoes fencing token and frame precondition
//   POST heartbeat                          last_sequence, last_frame_id, fencing_token, server_time

import { CoreError, validationError } from "@cua/base/errors";
import type { Machine } from "@cua/db/generated";
import type { HeartbeatBody, ObservationBody, ResultBody } from "@cua/machines/driver-wire";
import { PROTOCOL_VERSION } from "@cua/machines/driver-wire";
import type { z } from "zod";
import { canonicalJson } from "../idempotency/idempotency.ts";
import { hashDeviceToken, sameHash } from "./device-token.ts";
import {
  OUTSTANDING,
  type QueuedSignal,
  type ResultSignal,
  TERMINAL_COMMAND_STATUSES,
  type WireCommand,
} from "./external-dispatch.ts";
import { decodeFrame, FRAME_RETENTION_SECONDS, sealFrame, sha256Hex } from "./frames.ts";
import { newFrameId } from "./ids.ts";
import type { MachinesDeps } from "./runtime.ts";

const invalidToken = () =>
  new CoreError("INVALID_DEVICE_TOKEN", "The device token is missing, invalid, revoked, or not this machine's.");

/** 401 INVALID_DEVICE_TOKEN unless the token is the live token of exactly this machine. */
export async function authenticateDevice(deps: MachinesDeps, rawToken: string, machineId: string): Promise<Machine> {
  const hash = hashDeviceToken(rawToken);
  const m = await deps.db.machine.findUnique({ where: { deviceTokenHash: hash } });
  if (!m?.deviceTokenHash || !sameHash(m.deviceTokenHash, hash)) throw invalidToken();
  if (m.deviceTokenRevokedAt || m.status === "terminated" || m.kind !== "external") throw invalidToken();
  if (m.id !== machineId.toLowerCase() && m.id !== machineId) throw invalidToken();
  return m;
}

export interface PollQuery {
  after?: string | undefined;
  limit?: string | number | undefined;
  wait_seconds?: string | number | undefined;
}

function parsePoll(q: PollQuery): { after: number; limit: number; waitMs: number } {
  let after = 0;
  if (q.after !== undefined && q.after !== "") {
    if (!/^\d{1,15}$/.test(String(q.after)))
      throw new CoreError("INVALID_CURSOR", "after must be a next_cursor returned earlier.");
    after = Number(q.after);
  }
  let limit = 10;
  if (q.limit !== undefined && q.limit !== "") {
    limit = Number(q.limit);
    if (!Number.isInteger(limit) || limit < 1 || limit > 50)
      throw new CoreError("INVALID_LIMIT", "limit must be an integer from 1 to 50.");
  }
  let wait = 0;
  if (q.wait_seconds !== undefined && q.wait_seconds !== "") {
    wait = Number(q.wait_seconds);
    if (!Number.isFinite(wait) || wait < 0 || wait > 30)
      throw validationError("query.wait_seconds", "must be from 0 to 30");
  }
  return { after, limit, waitMs: Math.round(wait * 1000) };
}

/**
 * The long poll. A command queued by this process while the poll waits is handed over from the notification
 * (its row was committed first); otherwise the outstanding rows after the cursor are read, as they are when
 * another API process queued them (re-checked every pollIntervalMs).
 */
export async function pollCommands(deps: MachinesDeps, machine: Machine, q: PollQuery, signal?: AbortSignal) {
  const { after, limit, waitMs } = parsePoll(q);
  const until = Date.now() + waitMs;
  const seen = deps.clock.now();
  if (!machine.lastHeartbeatAt || seen.getTime() - machine.lastHeartbeatAt.getTime() > 5000) {
    // bookkeeping: the poll does not wait for it
    deps.machines.track(
      deps.db.machine.update({ where: { id: machine.id }, data: { lastHeartbeatAt: seen } }).catch(() => {}),
    );
  }
  for (;;) {
    const wake = deps.machines.signals.arm(machine.id, "commands");
    const now = deps.clock.now();
    // one read; a row past its deadline (rare: the dispatcher expires its own) is marked expired, not delivered
    const found = await deps.db.machineCommand.findMany({
      where: { machineId: machine.id, status: { in: [...OUTSTANDING] }, seq: { gt: after } },
      orderBy: { seq: "asc" },
      take: limit,
    });
    const rows = found.filter((c) => c.deadline >= now);
    if (rows.length < found.length) {
      await deps.db.machineCommand.updateMany({
        where: { machineId: machine.id, status: { in: [...OUTSTANDING] }, deadline: { lt: now } },
        data: { status: "expired", completedAt: now },
      });
    }
    const remaining = until - Date.now();
    if (rows.length > 0 || remaining <= 0 || signal?.aborted || deps.machines.isClosed) {
      wake.cancel();
      const commands = rows.map(
        (c): WireCommand => ({
          id: c.id,
          seq: c.seq,
          command: c.command,
          parameters: c.parameters as Record<string, unknown>,
          capability: c.capability,
          fencing_token: c.fencingToken,
          precondition_frame_id: c.preconditionFrameId,
          deadline: c.deadline.toISOString(),
          protocol_version: PROTOCOL_VERSION,
        }),
      );
      // an outstanding row carries the machine's current fence (a fence bump cancels every outstanding
      // command in the same transaction); an empty answer reads it
      const fence =
        commands.length > 0
          ? Math.max(...commands.map((c) => c.fencing_token))
          : (await deps.db.machine.findUniqueOrThrow({ where: { id: machine.id }, select: { fencingToken: true } }))
              .fencingToken;
      return delivered(deps, commands, after, fence);
    }
    const handed = (await wake.wait(Math.min(remaining, deps.machines.pollIntervalMs), signal)) as
      | QueuedSignal
      | undefined;
    if (handed?.command && handed.command.seq > after && !signal?.aborted) {
      return delivered(deps, [handed.command], after, handed.command.fencing_token);
    }
  }
}

/** The poll's answer; the delivery is recorded alongside (status, delivered_at, delivery_count). */
function delivered(deps: MachinesDeps, commands: WireCommand[], after: number, fence: number) {
  if (commands.length > 0) {
    const now = deps.clock.now();
    // bookkeeping only (queued and delivered are both outstanding): the answer does not wait for it, and a
    // result recorded first keeps its status (the update only touches outstanding rows)
    deps.machines.track(
      deps.db.machineCommand
        .updateMany({
          where: { id: { in: commands.map((c) => c.id) }, status: { in: [...OUTSTANDING] } },
          data: { status: "delivered", deliveredAt: now, deliveryCount: { increment: 1 } },
        })
        .catch((e) => deps.logger.warn("recording a delivery failed", { err: String(e) })),
    );
  }
  const last = commands[commands.length - 1];
  return {
    commands,
    next_cursor: String(last ? last.seq : after),
    fencing_token: fence,
  };
}

export async function postObservation(deps: MachinesDeps, machine: Machine, body: z.output<typeof ObservationBody>) {
  const frame = decodeFrame(body.mime_type, body.data);
  const requestDigest = sha256Hex(frame.bytes);
  const digest = sha256Hex(frame.normalized);
  const now = deps.clock.now();
  const frameId = newFrameId();
  const sealed = sealFrame(deps.kek, machine.id, frameId, frame.normalized);
  const out = await deps.db.$transaction(async (tx) => {
    const rows = await tx.$queryRaw<{ last_sequence: number }[]>`
      SELECT last_sequence FROM machines WHERE id = ${machine.id} FOR UPDATE`;
    const last = rows[0]?.last_sequence ?? 0;
    if (body.sequence === last && last > 0) {
      // a repeated sequence is 409 SEQUENCE_CONFLICT, never a second 201 (issue 12). When it repeats the newest
      // frame exactly (the driver lost our answer), the conflict names that frame so the driver can go on.
      const prev = await tx.machineFrame.findFirst({ where: { machineId: machine.id, sequence: last } });
      throw new CoreError("SEQUENCE_CONFLICT", `sequence ${last} was already stored; send ${last + 1}.`, {
        last_sequence: last,
        ...(prev && prev.requestDigest === requestDigest
          ? { frame_id: prev.id, duplicate: true }
          : { duplicate: false }),
      });
    }
    if (body.sequence !== last + 1) {
      throw new CoreError("SEQUENCE_CONFLICT", `sequence must be ${last + 1} (last_sequence + 1).`, {
        last_sequence: last,
      });
    }
    const f = await tx.machineFrame.create({
      data: {
        id: frameId,
        machineId: machine.id,
        sequence: body.sequence,
        mimeType: frame.mime,
        width: frame.width,
        height: frame.height,
        ciphertext: sealed.ciphertext,
        iv: sealed.iv,
        tag: sealed.tag,
        requestDigest,
        digest,
        storedAt: now,
        expiresAt: new Date(now.getTime() + FRAME_RETENTION_SECONDS * 1000),
      },
    });
    await tx.machine.update({ where: { id: machine.id }, data: { lastSequence: body.sequence, lastFrameId: f.id } });
    return {
      frame_id: f.id,
      sequence: f.sequence,
      request_digest: requestDigest,
      digest,
      stored_at: f.storedAt.toISOString(),
    };
  });
  // committed: the owner's next answers take it from memory (frame-store.ts readFrame)
  deps.machines.frames.set(machine.id, {
    frameId: out.frame_id,
    png: frame.normalized,
    mime: frame.mime,
    width: frame.width,
    height: frame.height,
    storedAt: now,
    expiresAt: new Date(now.getTime() + FRAME_RETENTION_SECONDS * 1000),
  });
  return out;
}

export async function postResult(
  deps: MachinesDeps,
  machine: Machine,
  commandId: string,
  body: z.output<typeof ResultBody>,
) {
  const resultHash = sha256Hex(canonicalJson(body));
  const stored = { result: body.result, error: body.error, duration_ms: body.duration_ms };
  // the common case in one statement: an outstanding command whose fence and precondition the result echoes
  // (a delivery not recorded yet is counted here); anything else takes the checks below, which name the error
  const now = deps.clock.now();
  const recorded = await deps.db.$queryRaw<{ last_frame_id: string | null }[]>`
    UPDATE machine_commands AS c
       SET status = ${body.status}, result = ${JSON.stringify(stored)}::jsonb, result_hash = ${resultHash},
           completed_at = ${now}, delivered_at = COALESCE(c.delivered_at, ${now}),
           delivery_count = GREATEST(c.delivery_count, 1)
      FROM machines AS m
     WHERE c.id = ${commandId} AND c.machine_id = ${machine.id} AND m.id = c.machine_id
       AND c.status IN ('queued', 'delivered') AND c.fencing_token = ${body.fencing_token}
       AND c.precondition_frame_id IS NOT DISTINCT FROM ${body.precondition_frame_id}
    RETURNING m.last_frame_id`;
  if (recorded.length === 1) {
    deps.machines.signals.notify(machine.id, "results", {
      commandId,
      status: body.status,
      result: stored,
      lastFrameId: recorded[0]!.last_frame_id,
    } satisfies ResultSignal);
    return { accepted: true as const, duplicate: false };
  }
  const c = await deps.db.machineCommand.findFirst({ where: { id: commandId, machineId: machine.id } });
  if (!c) throw new CoreError("NOT_FOUND", "No such command for this machine.");
  if (body.fencing_token !== c.fencingToken || body.precondition_frame_id !== c.preconditionFrameId) {
    throw new CoreError(
      "FENCING_TOKEN_MISMATCH",
      "The result must echo the command's fencing_token and precondition_frame_id exactly.",
      {
        fencing_token: c.fencingToken,
        precondition_frame_id: c.preconditionFrameId,
      },
    );
  }
  for (let attempt = 0; attempt < 2; attempt++) {
    const cur = attempt === 0 ? c : await deps.db.machineCommand.findUniqueOrThrow({ where: { id: c.id } });
    if (cur.status === "cancelled") {
      const m = await deps.db.machine.findUniqueOrThrow({ where: { id: machine.id }, select: { fencingToken: true } });
      throw new CoreError(
        "FENCING_TOKEN_MISMATCH",
        "The command was cancelled by a newer fence (start, stop or restart).",
        {
          fencing_token: m.fencingToken,
        },
      );
    }
    if (cur.status === "expired")
      throw new CoreError("RESULT_CONFLICT", "The command's deadline passed; it is expired.");
    if ((TERMINAL_COMMAND_STATUSES as readonly string[]).includes(cur.status)) {
      if (cur.resultHash && sameHash(cur.resultHash, resultHash)) return { accepted: true as const, duplicate: true };
      throw new CoreError("RESULT_CONFLICT", "A different result was already recorded for this command.");
    }
    const done = await deps.db.machineCommand.updateMany({
      where: { id: c.id, status: { in: [...OUTSTANDING] } },
      data: {
        status: body.status,
        result: stored as object,
        resultHash,
        completedAt: deps.clock.now(),
      },
    });
    if (done.count === 1) {
      deps.machines.signals.notify(machine.id, "results"); // no payload: the waiter reads the row
      return { accepted: true as const, duplicate: false };
    }
  }
  throw new CoreError("RESULT_CONFLICT", "The command changed state while the result was recorded.");
}

export async function heartbeat(deps: MachinesDeps, machine: Machine, body: z.output<typeof HeartbeatBody>) {
  const now = deps.clock.now();
  const m = await deps.db.machine.update({
    where: { id: machine.id },
    data: { lastHeartbeatAt: now, ...(body?.status ? { driverStatus: body.status as object } : {}) },
  });
  return {
    last_sequence: m.lastSequence,
    last_frame_id: m.lastFrameId,
    fencing_token: m.fencingToken,
    server_time: now.toISOString(),
  };
}
