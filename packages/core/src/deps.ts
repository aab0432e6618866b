// Ports the domain takes as arguments (trigger.dev's habit: a plain object of resources, no container).
import type { Db } from "@cua/db/client";

export interface Clock {
  now(): Date;
}

export interface Logger {
  debug(msg: string, fields?: Record<string, unknown>): void;
  info(msg: string, fields?: Record<string, unknown>): void;
  warn(msg: string, fields?: Record<string, unknown>): void;
  error(msg: string, fields?: Record<string, unknown>): void;
}

export interface CoreDeps {
  db: Db;
  clock: Clock;
  logger: Logger;
  /** 32-byte key-encryption key for secrets stored at rest */
  kek: Buffer;
}

export const systemClock: Clock = { now: () => new Date() };

export const silentLogger: Logger = { debug() {}, info() {}, warn() {}, error() {} };
