// The Inngest client. The app's events (one typed definition each) are in events.ts.
//
// Production: the SDK reads INNGEST_EVENT_KEY, INNGEST_SIGNING_KEY and INNGEST_BASE_URL (a
// self-hosted `inngest start`) from the environment, or apps/api passes them explicitly through
// createInngestClient(). Embedded (the default): the executor (@cua/executor) runs these same
// functions, and `executor.client` / `executor.send()` deliver events to it. See docs/executor.md.
import { Inngest } from "inngest";

export const APP_ID = "cua";

export interface InngestClientOptions {
  eventKey?: string;
  signingKey?: string;
  signingKeyFallback?: string;
  /** a self-hosted Inngest server, e.g. http://inngest:8288 */
  baseUrl?: string;
  /** talk to an Inngest dev server (no signatures) */
  isDev?: boolean;
  /** where the SDK logs (e.g. function errors); default: the SDK's console logger */
  logger?: {
    info(...a: unknown[]): void;
    warn(...a: unknown[]): void;
    error(...a: unknown[]): void;
    debug(...a: unknown[]): void;
  };
}

export function createInngestClient(opts: InngestClientOptions = {}): Inngest {
  return new Inngest({
    id: APP_ID,
    ...(opts.eventKey !== undefined ? { eventKey: opts.eventKey } : {}),
    ...(opts.signingKey !== undefined ? { signingKey: opts.signingKey } : {}),
    ...(opts.signingKeyFallback !== undefined ? { signingKeyFallback: opts.signingKeyFallback } : {}),
    ...(opts.baseUrl !== undefined ? { baseUrl: opts.baseUrl } : {}),
    ...(opts.isDev !== undefined ? { isDev: opts.isDev } : {}),
    ...(opts.logger !== undefined ? { logger: opts.logger } : {}),
  });
}

/** The client functions are created with. Whoever serves or executes them supplies the configured one. */
export const inngest = createInngestClient();
