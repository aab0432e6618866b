// Per-minute metering (SPEC.md "Machines" pricing; DECISIONS.md "Machines"). Each machine has a billing
// cursor (billed_through): a charge covers the whole minutes between the cursor and now at the rate of
// the machine's status, and moves the cursor in the same transaction as the wallet debit, under a row
// lock, so ticks in several processes (or a tick racing a status change) never charge a minute twice.
// Every status change settles the meter first, so each minute is billed at the status it was spent in.
// When the wallet cannot pay, the machine is stopped (status suspended, status_reason
// suspended_for_billing), never destroyed; unpaid minutes are not carried as debt.

import type { Tx } from "@cua/db/client";
import type { Machine } from "@cua/db/generated";
import { addChargeTx, MACHINE_METERING_ENDPOINT } from "../usage/usage.ts";
import { isMetered, unitsPerMinute } from "./pricing.ts";
import type { MachinesDeps } from "./runtime.ts";

export interface MeterOutcome {
  machineId: string;
  minutes: number;
  charged: number;
  /** the wallet could not pay everything that was due */
  unpaid: boolean;
}

/** Settles one machine's meter inside a transaction that already holds its row lock. */
export async function settleMeterTx(tx: Tx, m: Machine, now: Date, minuteMs: number): Promise<MeterOutcome> {
  const minutes = Math.floor((now.getTime() - m.billedThrough.getTime()) / minuteMs);
  if (minutes <= 0 || !isMetered(m)) {
    if (minutes > 0) {
      await tx.machine.update({
        where: { id: m.id },
        data: { billedThrough: new Date(m.billedThrough.getTime() + minutes * minuteMs) },
      });
    }
    return { machineId: m.id, minutes: Math.max(0, minutes), charged: 0, unpaid: false };
  }
  const units = m.meterRemainder + minutes * unitsPerMinute(m);
  const due = Math.floor(units / 60);
  let remainder = units % 60;
  let charged = 0;
  if (due > 0) {
    const acct = await tx.$queryRaw<{ balance_credits: number }[]>`
      SELECT balance_credits FROM accounts WHERE id = ${m.accountId}::uuid FOR UPDATE`;
    charged = Math.max(0, Math.min(acct[0]?.balance_credits ?? 0, due));
    let balanceAfter = acct[0]?.balance_credits ?? 0;
    if (charged > 0) {
      const upd = await tx.$queryRaw<{ balance_credits: number }[]>`
        UPDATE accounts SET balance_credits = balance_credits - ${charged}
        WHERE id = ${m.accountId}::uuid RETURNING balance_credits`;
      balanceAfter = upd[0]!.balance_credits;
    }
    if (charged > 0) {
      await tx.walletEntry.create({
        data: {
          accountId: m.accountId,
          kind: "charge",
          delta: -charged,
          amount: charged,
          balanceAfter,
          note: `machine ${m.id}: ${minutes} min ${m.status}`,
        },
      });
      await addChargeTx(tx, { accountId: m.accountId, endpoint: MACHINE_METERING_ENDPOINT, credits: charged, at: now });
    }
    if (charged < due) remainder = 0;
  }
  await tx.machine.update({
    where: { id: m.id },
    data: {
      billedThrough: new Date(m.billedThrough.getTime() + minutes * minuteMs),
      meterRemainder: remainder,
      creditsCharged: { increment: charged },
    },
  });
  return { machineId: m.id, minutes, charged, unpaid: charged < due };
}

export async function lockMachineRow(tx: Tx, id: string): Promise<Machine | null> {
  const rows = await tx.$queryRaw<{ id: string }[]>`SELECT id FROM machines WHERE id = ${id} FOR UPDATE`;
  if (!rows[0]) return null;
  return tx.machine.findUnique({ where: { id } });
}

/** Settles one machine's meter now (called before every status change). */
export async function settleMeter(deps: MachinesDeps, machineId: string): Promise<MeterOutcome | null> {
  const now = deps.clock.now();
  return deps.db.$transaction(async (tx) => {
    const m = await lockMachineRow(tx, machineId);
    if (!m) return null;
    return settleMeterTx(tx, m, now, deps.machines.minuteMs);
  });
}
