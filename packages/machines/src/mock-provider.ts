// Mock machines for test keys (DECISIONS.md "Machines"): no processes, a generated PNG screenshot that
// shows the machine's state (cursor, last click, typed text, open page), and synthetic but
// shape-correct results for every command, browser op, terminal call and file op. Deterministic:
// the same calls on a machine with the same id give the same results.

import { createHash } from "node:crypto";
import path from "node:path";
import { CoreError } from "@cua/base/errors";
import type { CommandBackend, InputAction, ParsedBrowserOp, ParsedFileOp, TerminalInput } from "./commands.ts";
import {
  checkOnScreen,
  DEFAULT_TIMEOUT_MS,
  parseBatch,
  parseBrowserOp,
  parseCommand,
  parseFileOp,
  parseTerminal,
  parseTimeout,
  runBatch,
  runCommand,
  TERMINAL_OUTPUT_LIMIT,
} from "./commands.ts";
import { runFileOp } from "./file-ops.ts";
import { MockFs } from "./mock-fs.ts";
import { resolveInHome } from "./paths.ts";
import { RectCanvas } from "./png.ts";
import type {
  BatchResult,
  CommandResult,
  ConnectionInfo,
  ExecuteOptions,
  MachineHandle,
  MachineProvider,
  OpResult,
  ReconcileResult,
  Screenshot,
  SnapshotInfo,
  TerminateResult,
} from "./provider.ts";
import {
  assertDesktop,
  assertRunning,
  assertStatus,
  MachineHandleBase,
  nowIso,
  opFail,
  opOk,
  ProvisionInput,
} from "./provider.ts";

export const MOCK_HOME = "/home/user";
export const MOCK_USER = "user";

type Rgb = [number, number, number];

interface MockTab {
  id: string;
  url: string;
  values: Record<string, string>;
  clicks: number;
  scroll_y: number;
}

interface MockMachine {
  handle: MachineHandle;
  cursor: { x: number; y: number };
  lastClick: { x: number; y: number; button: string } | null;
  typed: string;
  keys: string[];
  fs: MockFs;
  browserOpen: boolean;
  tabs: MockTab[];
  activeTab: string;
  tabCounter: number;
  sessions: Map<string, { cwd: string; env: Record<string, string> }>;
}

function hashColor(s: string): Rgb {
  const h = createHash("sha256").update(s).digest();
  return [64 + (h[0]! % 128), 64 + (h[1]! % 128), 64 + (h[2]! % 128)];
}

function titleFor(url: string): string {
  if (url === "about:blank") return "about:blank";
  try {
    return `Mock page: ${new URL(url).hostname}`;
  } catch {
    return "Mock page";
  }
}

function escapeHtml(s: string): string {
  return s.replace(/[&<>"]/g, (c) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" })[c]!);
}

/** The fixed elements every mock page has. */
const MOCK_ELEMENTS = [
  { selector: "#q", tag: "input", text: "", x: 400, y: 200, width: 300, height: 30, type: "text" },
  { selector: "#submit", tag: "button", text: "Submit", x: 560, y: 250, width: 80, height: 30, type: "submit" },
  { selector: "#more", tag: "a", text: "More", x: 420, y: 300, width: 40, height: 20, type: null },
] as const;

function findElement(selector: string) {
  const s = selector.trim();
  return MOCK_ELEMENTS.find((e) => e.selector === s || e.tag === s || `${e.tag}${e.selector}` === s) ?? null;
}

function pageHtml(tab: MockTab): string {
  const title = titleFor(tab.url);
  if (tab.url === "about:blank") return "<html><head></head><body></body></html>";
  return `<html><head><title>${escapeHtml(title)}</title></head><body><h1>${escapeHtml(title)}</h1><p>Deterministic mock page for ${escapeHtml(tab.url)}.</p><input id="q" name="q" type="text" value="${escapeHtml(tab.values["#q"] ?? "")}"><button id="submit" type="submit">Submit</button><a id="more" href="${escapeHtml(tab.url)}#more">More</a><p id="clicks">clicks: ${tab.clicks}</p></body></html>`;
}

export interface MockProviderOptions {
  /** provider name stored in handles (default "mock") */
  name?: string;
}

export class MockMachineProvider implements MachineProvider {
  readonly name: string;
  private readonly machines = new Map<string, MockMachine>();
  private readonly snapshots = new Map<string, { info: SnapshotInfo; fs: MockFs }>();

  constructor(options: MockProviderOptions = {}) {
    this.name = options.name ?? "mock";
  }

  private fresh(handle: MachineHandle): MockMachine {
    return {
      handle,
      cursor: { x: Math.floor(handle.screen.width / 2), y: Math.floor(handle.screen.height / 2) },
      lastClick: null,
      typed: "",
      keys: [],
      fs: new MockFs(MOCK_HOME),
      browserOpen: false,
      tabs: [{ id: "tab-1", url: "about:blank", values: {}, clicks: 0, scroll_y: 0 }],
      activeTab: "tab-1",
      tabCounter: 1,
      sessions: new Map(),
    };
  }

  private get(handle: MachineHandle): MockMachine {
    const h = MachineHandleBase.parse(handle) as MachineHandle;
    let m = this.machines.get(h.machine_id);
    if (!m) {
      // a handle from before a restart: mock state is rebuilt (deterministically) from nothing
      m = this.fresh({ ...handle });
      this.machines.set(h.machine_id, m);
    }
    return m;
  }

  private running(handle: MachineHandle): MockMachine {
    const m = this.get(handle);
    assertRunning(m.handle);
    return m;
  }

  async provision(input: ProvisionInput): Promise<MachineHandle> {
    const p = ProvisionInput.parse(input);
    const existing = this.machines.get(p.machineId);
    if (existing) return { ...existing.handle };
    const now = nowIso();
    const handle: MachineHandle = {
      provider: this.name,
      machine_id: p.machineId,
      display_name: p.displayName,
      status: "running",
      screen: p.screen,
      desktop_enabled: p.desktopEnabled,
      created_at: now,
      updated_at: now,
      user: MOCK_USER,
      home_dir: MOCK_HOME,
    };
    this.machines.set(p.machineId, this.fresh(handle));
    return { ...handle };
  }

  private setStatus(m: MockMachine, status: "running" | "stopped"): MachineHandle {
    m.handle = { ...m.handle, status, updated_at: nowIso() };
    return { ...m.handle };
  }

  async start(handle: MachineHandle): Promise<MachineHandle> {
    const m = this.get(handle);
    assertStatus(m.handle, ["stopped"]);
    return this.setStatus(m, "running");
  }

  async stop(handle: MachineHandle): Promise<MachineHandle> {
    const m = this.get(handle);
    assertStatus(m.handle, ["running"]);
    m.sessions.clear();
    m.browserOpen = false;
    return this.setStatus(m, "stopped");
  }

  async restart(handle: MachineHandle): Promise<MachineHandle> {
    const m = this.get(handle);
    assertStatus(m.handle, ["running"]);
    m.sessions.clear();
    return this.setStatus(m, "running");
  }

  async terminate(handle: MachineHandle): Promise<TerminateResult> {
    const h = MachineHandleBase.parse(handle);
    this.machines.delete(h.machine_id);
    return { machine_id: h.machine_id, terminated: true, leftover_processes: 0 };
  }

  async reconcile(handles: MachineHandle[]): Promise<ReconcileResult[]> {
    return handles.map((h) => {
      const m = this.get(h);
      return {
        machine_id: h.machine_id,
        status: m.handle.status,
        handle: { ...m.handle },
        changed: false,
        detail: "mock machine",
      };
    });
  }

  async screenshot(handle: MachineHandle): Promise<Screenshot> {
    const m = this.running(handle);
    assertDesktop(m.handle);
    return this.render(m);
  }

  private render(m: MockMachine): Screenshot {
    const { width, height } = m.handle.screen;
    // rectangles only: RectCanvas encodes them without a full raster (an indexed-colour PNG, the pixels of Raster)
    const r = new RectCanvas(width, height, hashColor(m.handle.machine_id));
    // taskbar
    r.fillRect(0, height - 28, width, 28, [30, 30, 36]);
    r.fillRect(6, height - 22, 60, 16, [90, 140, 220]);
    // browser window with a page-coloured content area
    if (m.browserOpen) {
      const tab = m.tabs.find((t) => t.id === m.activeTab) ?? m.tabs[0]!;
      r.fillRect(40, 30, width - 80, height - 90, [222, 225, 230]);
      r.fillRect(40, 30, width - 80, 60, [200, 210, 228]);
      r.fillRect(48, 72, Math.min(width - 96, 12 + tab.url.length * 6), 12, [250, 250, 250]);
      r.fillRect(44, 94, width - 88, height - 158, tab.url === "about:blank" ? [255, 255, 255] : hashColor(tab.url));
      for (const [i, t] of m.tabs.entries()) {
        r.fillRect(48 + i * 110, 36, 100, 24, t.id === m.activeTab ? [250, 250, 250] : [170, 180, 200]);
      }
    }
    // typed text: one small block per character (wraps)
    const chars = [...m.typed].slice(-400);
    chars.forEach((ch, i) => {
      const col = i % 80;
      const row = Math.floor(i / 80);
      if (ch !== " ") r.fillRect(60 + col * 8, height - 140 + row * 12, 6, 9, [20, 20, 20]);
    });
    // last click: a ring
    if (m.lastClick) {
      const { x, y } = m.lastClick;
      const c: Rgb = m.lastClick.button === "right" ? [220, 60, 60] : [250, 200, 40];
      for (let a = 0; a < 64; a++) {
        const t = (a / 64) * Math.PI * 2;
        r.fillRect(x + Math.round(Math.cos(t) * 9) - 1, y + Math.round(Math.sin(t) * 9) - 1, 3, 3, c);
      }
    }
    // cursor: an arrow drawn as a stack of rows, outlined
    const { x, y } = m.cursor;
    for (let i = 0; i < 16; i++) r.fillRect(x - 1, y + i - 1, Math.floor(i * 0.6) + 3, 3, [0, 0, 0]);
    for (let i = 0; i < 16; i++) r.fillRect(x, y + i, Math.floor(i * 0.6) + 1, 1, [255, 255, 255]);
    return { png: r.toPng(3), mime_type: "image/png", width, height, captured_at: nowIso() };
  }

  private backend(m: MockMachine): CommandBackend {
    return {
      input: async (a: InputAction) => this.input(m, a),
      screenshot: async () => this.render(m),
      browser: async (op) => this.browserOp(m, op),
      browserExecute: async (script) => this.browserExecute(m, script),
      terminal: async (t) => this.terminalRun(m, t),
      file: async (op) => runFileOp(m.fs, op),
    };
  }

  private input(m: MockMachine, a: InputAction): void {
    switch (a.kind) {
      case "click":
        m.cursor = { x: a.x, y: a.y };
        m.lastClick = { x: a.x, y: a.y, button: a.button };
        break;
      case "move":
        m.cursor = { x: a.x, y: a.y };
        break;
      case "type":
        m.typed += a.text;
        break;
      case "keys":
        m.keys.push(a.chord ? a.keys.join("+") : a.keys.join(" "));
        if (!a.chord && a.keys.some((k) => k.toLowerCase() === "backspace")) m.typed = m.typed.slice(0, -1);
        break;
      case "scroll":
        if (a.x !== undefined && a.y !== undefined) m.cursor = { x: a.x, y: a.y };
        break;
      case "drag":
        m.cursor = { x: a.x2, y: a.y2 };
        m.lastClick = { x: a.x2, y: a.y2, button: a.button };
        break;
    }
  }

  async execute(
    handle: MachineHandle,
    command: string,
    parameters: unknown,
    options: ExecuteOptions = {},
  ): Promise<CommandResult> {
    const parsed = parseCommand(command, parameters);
    const timeoutMs = parseTimeout(options.timeoutMs);
    const m = this.running(handle);
    if (parsed.command !== "wait" && !parsed.command.startsWith("terminal") && !parsed.command.startsWith("file"))
      assertDesktop(m.handle);
    checkOnScreen(parsed, m.handle.screen);
    return runCommand(this.backend(m), parsed, timeoutMs);
  }

  async executeBatch(handle: MachineHandle, body: unknown): Promise<BatchResult> {
    const batch = parseBatch(body);
    const m = this.running(handle);
    for (const [i, s] of batch.steps.entries()) checkOnScreen(s.parsed, m.handle.screen, `body.steps.${i}.parameters`);
    return runBatch(batch, (parsed, timeoutMs) => {
      if (parsed.command !== "wait" && !parsed.command.startsWith("terminal") && !parsed.command.startsWith("file"))
        assertDesktop(m.handle);
      return runCommand(this.backend(m), parsed, timeoutMs);
    });
  }

  async browser(
    handle: MachineHandle,
    op: string,
    parameters: unknown,
    options: ExecuteOptions = {},
  ): Promise<OpResult> {
    const parsed = parseBrowserOp(op, parameters);
    parseTimeout(options.timeoutMs);
    const m = this.running(handle);
    assertDesktop(m.handle);
    return this.browserOp(m, parsed);
  }

  private activeTab(m: MockMachine): MockTab {
    return m.tabs.find((t) => t.id === m.activeTab) ?? m.tabs[0]!;
  }

  private tabInfo(m: MockMachine, t: MockTab) {
    return { tab_id: t.id, url: t.url, title: titleFor(t.url), active: t.id === m.activeTab };
  }

  private browserOp(m: MockMachine, { op, params }: ParsedBrowserOp): OpResult {
    const started = !m.browserOpen;
    m.browserOpen = op !== "close";
    const tab = this.activeTab(m);
    switch (op) {
      case "open":
        if (params.url) tab.url = params.url;
        return opOk({ ...this.tabInfo(m, tab), started });
      case "navigate":
        tab.url = params.url;
        tab.values = {};
        tab.clicks = 0;
        tab.scroll_y = 0;
        return opOk({ tab_id: tab.id, url: tab.url, title: titleFor(tab.url), status: 200 });
      case "click": {
        if (params.selector !== undefined) {
          const el = findElement(params.selector);
          if (!el || tab.url === "about:blank")
            return opFail("ELEMENT_NOT_FOUND", `No element matches ${params.selector}.`);
          tab.clicks += params.clicks;
          return opOk({
            selector: params.selector,
            x: el.x + el.width / 2,
            y: el.y + el.height / 2,
            button: params.button,
            clicks: params.clicks,
          });
        }
        tab.clicks += params.clicks;
        return opOk({ x: params.x, y: params.y, button: params.button, clicks: params.clicks });
      }
      case "type": {
        const sel = params.selector ?? "#q";
        const el = findElement(sel);
        if (el?.tag !== "input" || tab.url === "about:blank")
          return opFail("ELEMENT_NOT_FOUND", `No input matches ${sel}.`);
        tab.values[el.selector] = (params.clear ? "" : (tab.values[el.selector] ?? "")) + params.text;
        return opOk({
          selector: sel,
          typed: params.text.length,
          value: tab.values[el.selector],
          submitted: params.submit,
        });
      }
      case "dom": {
        const html = pageHtml(tab);
        const out = html.slice(0, params.max_length);
        return opOk({
          tab_id: tab.id,
          url: tab.url,
          title: titleFor(tab.url),
          html: out,
          text: out
            .replace(/<[^>]+>/g, " ")
            .replace(/\s+/g, " ")
            .trim(),
          length: html.length,
          truncated: html.length > params.max_length,
        });
      }
      case "clickables": {
        const elements = tab.url === "about:blank" ? [] : MOCK_ELEMENTS.slice(0, params.max);
        return opOk({
          tab_id: tab.id,
          url: tab.url,
          elements: elements.map((e, index) => ({
            index,
            tag: e.tag,
            role: null,
            text: e.text,
            selector: e.selector,
            type: e.type,
            href: e.tag === "a" ? `${tab.url}#more` : null,
            x: e.x + e.width / 2,
            y: e.y + e.height / 2,
            width: e.width,
            height: e.height,
            screen_x: e.x + e.width / 2 + 44,
            screen_y: e.y + e.height / 2 + 94,
            disabled: false,
          })),
          truncated: false,
        });
      }
      case "state":
        return opOk({
          tab_id: tab.id,
          url: tab.url,
          title: titleFor(tab.url),
          ready_state: "complete",
          scroll: { x: 0, y: tab.scroll_y },
          viewport: { width: m.handle.screen.width - 88, height: m.handle.screen.height - 158 },
          document: { width: m.handle.screen.width - 88, height: 2000 },
          focused: null,
        });
      case "info":
        return opOk({
          browser: "MockBrowser/1.0",
          protocol_version: "1.3",
          user_agent: "Mozilla/5.0 (X11; Linux x86_64) MockBrowser/1.0",
          tabs: m.tabs.length,
          active_tab_id: m.activeTab,
        });
      case "scroll": {
        if (params.to === "top") tab.scroll_y = 0;
        else if (params.to === "bottom") tab.scroll_y = 2000 - (m.handle.screen.height - 158);
        else if (params.selector !== undefined) {
          if (!findElement(params.selector))
            return opFail("ELEMENT_NOT_FOUND", `No element matches ${params.selector}.`);
        } else tab.scroll_y = Math.max(0, tab.scroll_y + (params.delta_y ?? (params.delta_x === undefined ? 500 : 0)));
        return opOk({ scroll_x: 0, scroll_y: tab.scroll_y });
      }
      case "close":
        return opOk({ closed: true });
      case "screenshot": {
        const shot = this.render(m);
        return opOk({
          image_b64: shot.png.toString("base64"),
          mime_type: "image/png",
          width: shot.width,
          height: shot.height,
          format: params.format === "jpeg" ? "png" : "png",
        });
      }
      case "wait": {
        if (params.selector !== undefined) {
          const present = tab.url !== "about:blank" && findElement(params.selector) !== null;
          const wantPresent = params.state === "attached" || params.state === "visible";
          if (present !== wantPresent)
            return opFail("TIMEOUT", `The selector did not reach state ${params.state}.`, { found: present });
          return opOk({ selector: params.selector, state: params.state, found: present, elapsed_ms: 0 });
        }
        return opOk({ waited_ms: params.ms ?? 0 });
      }
      case "list-tabs":
        return opOk({ tabs: m.tabs.map((t) => this.tabInfo(m, t)), active_tab_id: m.activeTab });
      case "open-tab": {
        m.tabCounter += 1;
        const t: MockTab = {
          id: `tab-${m.tabCounter}`,
          url: params.url ?? "about:blank",
          values: {},
          clicks: 0,
          scroll_y: 0,
        };
        m.tabs.push(t);
        m.activeTab = t.id;
        return opOk(this.tabInfo(m, t));
      }
      case "close-tab": {
        const id = params.tab_id ?? m.activeTab;
        const idx = m.tabs.findIndex((t) => t.id === id);
        if (idx < 0) return opFail("TAB_NOT_FOUND", `No tab ${id}.`);
        m.tabs.splice(idx, 1);
        if (m.tabs.length === 0) {
          m.tabCounter += 1;
          m.tabs.push({ id: `tab-${m.tabCounter}`, url: "about:blank", values: {}, clicks: 0, scroll_y: 0 });
        }
        if (m.activeTab === id) m.activeTab = m.tabs[Math.max(0, idx - 1)]!.id;
        return opOk({ closed_tab_id: id, active_tab_id: m.activeTab });
      }
      case "switch-tab": {
        const t = m.tabs.find((x) => x.id === params.tab_id);
        if (!t) return opFail("TAB_NOT_FOUND", `No tab ${params.tab_id}.`);
        m.activeTab = t.id;
        return opOk(this.tabInfo(m, t));
      }
    }
  }

  private browserExecute(m: MockMachine, script: string): OpResult {
    m.browserOpen = true;
    const tab = this.activeTab(m);
    const s = script.trim().replace(/;$/, "");
    if (s === "document.title") return opOk({ value: titleFor(tab.url), type: "string" });
    if (s === "location.href" || s === "window.location.href") return opOk({ value: tab.url, type: "string" });
    if (/^-?\d+(\.\d+)?$/.test(s)) return opOk({ value: Number(s), type: "number" });
    if (/^throw\b/.test(s)) return opFail("SCRIPT_ERROR", "Uncaught (mock)");
    return opOk({ value: null, type: "undefined" });
  }

  async terminal(handle: MachineHandle, input: unknown): Promise<OpResult> {
    const t = parseTerminal(input);
    const m = this.running(handle);
    return this.terminalRun(m, t);
  }

  private terminalRun(m: MockMachine, t: TerminalInput): OpResult {
    const session = t.session_id ? m.sessions.get(t.session_id) : undefined;
    const state = session ?? { cwd: MOCK_HOME, env: { HOME: MOCK_HOME, USER: MOCK_USER } };
    if (t.session_id && !session) {
      if (m.sessions.size >= 16) return opFail("TOO_MANY_SESSIONS", "At most 16 terminal sessions per machine.");
      m.sessions.set(t.session_id, state);
    }
    if (t.cwd) {
      // like bash: a cd that fails prints the error and the command does not run
      const dir = this.mockPath(state.cwd, t.cwd);
      if (!dir || !m.fs.isDirectory(dir)) {
        const output = `bash: cd: ${t.cwd}: No such file or directory\n`;
        return opOk({
          output,
          exit_code: 1,
          timed_out: false,
          truncated: false,
          output_length: output.length,
          session_id: t.session_id ?? null,
          cwd: state.cwd,
        });
      }
      state.cwd = dir;
    }
    let output = "";
    let code = 0;
    let elapsed = 0;
    for (const raw of t.command.split(/\s*(?:&&|;|\n)\s*/)) {
      const line = raw.trim().replace(/\$(\w+)|\$\{(\w+)\}/g, (_, a, b) => state.env[a ?? b] ?? "");
      if (!line) continue;
      const [cmd = "", ...args] = line.split(/\s+/);
      const argText = args.join(" ").replace(/^["']|["']$/g, "");
      if (cmd === "echo") output += `${argText}\n`;
      else if (cmd === "pwd") output += `${state.cwd}\n`;
      else if (cmd === "whoami") output += `${MOCK_USER}\n`;
      else if (cmd === "true") code = 0;
      else if (cmd === "false") code = 1;
      else if (cmd === "exit") {
        code = Number(args[0] ?? 0) || 0;
        if (t.session_id) m.sessions.delete(t.session_id);
        break;
      } else if (cmd === "export") {
        for (const a of args) {
          const eq = a.indexOf("=");
          if (eq > 0) state.env[a.slice(0, eq)] = a.slice(eq + 1).replace(/^["']|["']$/g, "");
        }
      } else if (cmd === "cd") {
        const dir = this.mockPath(state.cwd, args[0] ?? MOCK_HOME);
        if (!dir || !m.fs.isDirectory(dir)) {
          output += `bash: cd: ${args[0]}: No such file or directory\n`;
          code = 1;
        } else state.cwd = dir;
      } else if (cmd === "mkdir") {
        for (const a of args.filter((x) => !x.startsWith("-"))) {
          const dir = this.mockPath(state.cwd, a);
          if (dir) void m.fs.mkdirp(dir);
        }
      } else if (cmd === "seq") {
        const lo = args.length > 1 ? Number(args[0]) : 1;
        const hi = Number(args[args.length - 1] ?? 0);
        for (let i = lo; i <= Math.min(hi, 100_000); i++) output += `${i}\n`;
      } else if (cmd === "sleep") {
        elapsed += Number(args[0] ?? 0) * 1000;
        const limit = t.timeout_ms ?? DEFAULT_TIMEOUT_MS;
        if (elapsed >= limit) {
          if (t.session_id) m.sessions.delete(t.session_id);
          return opFail("TIMEOUT", `The command did not finish within ${limit} ms.`, {
            output: output.slice(0, TERMINAL_OUTPUT_LIMIT),
            exit_code: null,
            timed_out: true,
            truncated: output.length > TERMINAL_OUTPUT_LIMIT,
            session_id: t.session_id ?? null,
            cwd: state.cwd,
          });
        }
      } else {
        output += `mock: ran ${cmd}\n`;
      }
    }
    return opOk({
      output: output.slice(0, TERMINAL_OUTPUT_LIMIT),
      exit_code: code,
      timed_out: false,
      truncated: output.length > TERMINAL_OUTPUT_LIMIT,
      output_length: output.length,
      session_id: t.session_id ?? null,
      cwd: state.cwd,
    });
  }

  private mockPath(cwd: string, p: string): string | null {
    const abs = path.posix.resolve(cwd, p.replace(/^~(?=\/|$)/, MOCK_HOME));
    try {
      return resolveInHome(MOCK_HOME, abs).abs;
    } catch {
      return null;
    }
  }

  async files(handle: MachineHandle, op: string, parameters: unknown): Promise<OpResult> {
    const parsed: ParsedFileOp = parseFileOp(op, parameters);
    const m = this.running(handle);
    return runFileOp(m.fs, parsed);
  }

  async snapshot(handle: MachineHandle, name: string): Promise<SnapshotInfo> {
    const m = this.get(handle);
    const n = this.snapshots.size + 1;
    const snapshot_id = `snap_${createHash("sha256").update(`${m.handle.machine_id}:${n}:${name}`).digest("hex").slice(0, 24)}`;
    const info: SnapshotInfo = {
      snapshot_id,
      machine_id: m.handle.machine_id,
      name,
      size_bytes: m.fs.bytes(),
      created_at: nowIso(),
    };
    this.snapshots.set(snapshot_id, { info, fs: m.fs.clone() });
    return { ...info };
  }

  async restoreFromSnapshot(handle: MachineHandle, snapshotId: string): Promise<MachineHandle> {
    const m = this.get(handle);
    const snap = this.snapshots.get(snapshotId);
    if (!snap) throw new CoreError("NOT_FOUND", `Snapshot ${snapshotId} does not exist.`);
    m.fs = snap.fs.clone();
    m.sessions.clear();
    m.handle = { ...m.handle, updated_at: nowIso() };
    return { ...m.handle };
  }

  async connection(handle: MachineHandle): Promise<ConnectionInfo> {
    const m = this.running(handle);
    assertDesktop(m.handle);
    const pw = createHash("sha256").update(`vnc:${m.handle.machine_id}`).digest("hex").slice(0, 8);
    return {
      machine_id: m.handle.machine_id,
      host: "mock.invalid",
      ssh_port: null,
      ssh_username: null,
      ssh_private_key_pem: null,
      vnc_port: 5900,
      vnc_password: pw,
      websocket_url: `wss://mock.invalid/vnc/${encodeURIComponent(m.handle.machine_id)}`,
      novnc_url: null,
    };
  }

  async close(): Promise<void> {}
}
