// The service process's environment as a plain object (issue 16, docs/runs.md "Performance").
//
// Node's process.env is an exotic object: every read and every enumeration goes through the C++
// environment. The Inngest SDK (4.24.0) enumerates all of it several times per call it handles
// (inngest/helpers/env.js getProcessEnv: Object.entries(process.env), once per request and once per
// response header set), which the embedded executor pays at every run step: about 1 ms of CPU per step in
// the runs benchmark's profile, the SDK's largest cost. A plain copy answers the same values at the cost of
// an ordinary object.
//
// What changes: only writes. A value assigned afterwards is kept as given (the real object turns it into a
// string) and reaches child processes (child_process reads process.env when no env is passed) but not the
// C environment of this process (getenv in native code). The service never assigns environment variables
// after it starts; its configuration is read once by loadEnv().
export function useEnvSnapshot(): void {
  const copy: Record<string, string> = {};
  for (const [k, v] of Object.entries(process.env)) if (typeof v === "string") copy[k] = v;
  process.env = copy as NodeJS.ProcessEnv;
}
