// The console's procedures are the /v1 operations with the operator as the caller in one mode at a time
// (the input's `mode`). Pages that show both modes ask once per mode and merge, newest first.
export const MODES = ["live", "test"] as const;
export type Mode = (typeof MODES)[number];

export function newestFirst<T extends { created_at: string }>(...lists: (T[] | undefined)[]): T[] {
  return lists.flatMap((l) => l ?? []).sort((a, b) => b.created_at.localeCompare(a.created_at));
}
