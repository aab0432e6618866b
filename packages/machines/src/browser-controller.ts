// The sixteen browser ops of SPEC.md (plus browser_execute) on a desktop's Chromium, over the
// DevTools protocol. Tabs are page targets; tab_id is the target id.
// Page-side helpers are plain JavaScript strings (not TS functions) so no transpiler output leaks in.

import { CdpConnection, CdpError } from "./cdp-client.ts";
import type { ParsedBrowserOp } from "./commands.ts";
import { pngSize } from "./png.ts";
import type { OpResult } from "./provider.ts";
import { opFail, opOk } from "./provider.ts";

export interface BrowserHost {
  /** DevTools port of the machine's Chromium */
  devtoolsPort(): number;
  /** address the DevTools port is reached at (default 127.0.0.1; an isolated machine's veth address) */
  devtoolsHost?(): string;
  /** starts Chromium when it is not running; true when it had to start it */
  ensureRunning(): Promise<boolean>;
  /** ends the Chromium process group */
  stopBrowser(): Promise<void>;
}

class OpFailure extends Error {
  constructor(
    readonly code: string,
    message: string,
    readonly result: Record<string, unknown> = {},
  ) {
    super(message);
  }
}

interface TargetInfo {
  targetId: string;
  type: string;
  url: string;
  title: string;
}

const FIND = `(sel) => { try { return document.querySelector(sel); } catch (e) { throw new Error("INVALID_SELECTOR: " + sel); } }`;

const JS = {
  rectOf: `({ selector }) => {
    const el = (${FIND})(selector);
    if (!el) return null;
    el.scrollIntoView({ block: "center", inline: "center" });
    const r = el.getBoundingClientRect();
    return { x: r.left + r.width / 2, y: r.top + r.height / 2, width: r.width, height: r.height, tag: el.tagName.toLowerCase() };
  }`,
  focus: `({ selector, clear }) => {
    const el = selector ? (${FIND})(selector) : document.activeElement;
    if (!el) return null;
    if (selector) { el.scrollIntoView({ block: "center" }); el.focus(); }
    if (clear) {
      if ("value" in el) { el.value = ""; el.dispatchEvent(new Event("input", { bubbles: true })); }
      else if (el.isContentEditable) { el.textContent = ""; }
    }
    return { tag: el.tagName.toLowerCase(), focused: document.activeElement === el };
  }`,
  valueOf: `({ selector }) => {
    const el = selector ? (${FIND})(selector) : document.activeElement;
    if (!el) return null;
    return "value" in el ? String(el.value) : (el.isContentEditable ? el.textContent : null);
  }`,
  dom: `({ selector, max }) => {
    const el = selector ? (${FIND})(selector) : document.documentElement;
    if (!el) return null;
    const html = el.outerHTML;
    const text = (el.innerText ?? el.textContent ?? "");
    return { url: location.href, title: document.title, html: html.slice(0, max), text: text.slice(0, max), length: html.length, truncated: html.length > max };
  }`,
  clickables: `({ max }) => {
    const sel = 'a[href],button,input:not([type=hidden]),select,textarea,summary,label[for],[role=button],[role=link],[role=checkbox],[role=menuitem],[role=tab],[onclick],[contenteditable=""],[contenteditable=true],[tabindex]:not([tabindex="-1"])';
    const one = (s) => { try { return document.querySelectorAll(s).length === 1; } catch { return false; } };
    const cssPath = (el) => {
      if (el.id && one("#" + CSS.escape(el.id))) return "#" + CSS.escape(el.id);
      const parts = [];
      let e = el;
      while (e && e.nodeType === 1 && e !== document.documentElement) {
        if (e.id && one("#" + CSS.escape(e.id))) { parts.unshift("#" + CSS.escape(e.id)); break; }
        let p = e.tagName.toLowerCase();
        const parent = e.parentElement;
        if (parent) {
          const sibs = [...parent.children].filter((c) => c.tagName === e.tagName);
          if (sibs.length > 1) p += ":nth-of-type(" + (sibs.indexOf(e) + 1) + ")";
        }
        parts.unshift(p);
        e = parent;
      }
      return parts.join(" > ");
    };
    const offX = window.screenX + (window.outerWidth - window.innerWidth) / 2;
    const offY = window.screenY + (window.outerHeight - window.innerHeight);
    const out = [];
    let total = 0;
    for (const el of document.querySelectorAll(sel)) {
      const r = el.getBoundingClientRect();
      if (r.width <= 0 || r.height <= 0) continue;
      const cs = getComputedStyle(el);
      if (cs.visibility === "hidden" || cs.display === "none") continue;
      total++;
      if (out.length >= max) continue;
      const x = Math.round(r.left + r.width / 2);
      const y = Math.round(r.top + r.height / 2);
      const label = (el.innerText || el.value || el.getAttribute("aria-label") || el.getAttribute("placeholder") || el.title || "");
      out.push({
        index: out.length, tag: el.tagName.toLowerCase(), role: el.getAttribute("role"),
        text: String(label).trim().replace(/\\s+/g, " ").slice(0, 100), selector: cssPath(el),
        type: el.getAttribute("type"), href: el.href || null, name: el.getAttribute("name"),
        x, y, width: Math.round(r.width), height: Math.round(r.height),
        in_viewport: r.bottom > 0 && r.right > 0 && r.top < innerHeight && r.left < innerWidth,
        screen_x: Math.round(offX + x), screen_y: Math.round(offY + y), disabled: !!el.disabled,
      });
    }
    return { url: location.href, elements: out, truncated: total > out.length };
  }`,
  state: `() => {
    const a = document.activeElement;
    return {
      url: location.href, title: document.title, ready_state: document.readyState,
      scroll: { x: Math.round(scrollX), y: Math.round(scrollY) },
      viewport: { width: innerWidth, height: innerHeight },
      document: { width: document.documentElement.scrollWidth, height: document.documentElement.scrollHeight },
      window: { screen_x: window.screenX, screen_y: window.screenY, outer_width: outerWidth, outer_height: outerHeight },
      focused: a && a !== document.body ? { tag: a.tagName.toLowerCase(), id: a.id || null, name: a.getAttribute("name"), value: "value" in a ? String(a.value).slice(0, 1000) : null } : null,
    };
  }`,
  scroll: `({ selector, dx, dy, to }) => {
    if (selector) { const el = (${FIND})(selector); if (!el) return null; el.scrollIntoView({ block: "center" }); }
    else if (to === "top") window.scrollTo(0, 0);
    else if (to === "bottom") window.scrollTo(0, document.documentElement.scrollHeight);
    else window.scrollBy(dx, dy);
    return { scroll_x: Math.round(scrollX), scroll_y: Math.round(scrollY) };
  }`,
  waitState: `({ selector, state }) => {
    const el = (${FIND})(selector);
    if (state === "attached") return !!el;
    if (state === "detached") return !el;
    const visible = !!el && (() => { const r = el.getBoundingClientRect(); const cs = getComputedStyle(el); return r.width > 0 && r.height > 0 && cs.visibility !== "hidden" && cs.display !== "none"; })();
    return state === "visible" ? visible : !visible;
  }`,
  navStatus: `() => { const e = performance.getEntriesByType("navigation")[0]; return { title: document.title, url: location.href, status: e && e.responseStatus ? e.responseStatus : null }; }`,
};

function jpegSize(buf: Buffer): { width: number; height: number } {
  let i = 2;
  while (i + 9 < buf.length) {
    if (buf[i] !== 0xff) break;
    const marker = buf[i + 1]!;
    const len = buf.readUInt16BE(i + 2);
    if (marker >= 0xc0 && marker <= 0xcf && marker !== 0xc4 && marker !== 0xc8 && marker !== 0xcc) {
      return { height: buf.readUInt16BE(i + 5), width: buf.readUInt16BE(i + 7) };
    }
    i += 2 + len;
  }
  return { width: 0, height: 0 };
}

export class ChromiumBrowser {
  private conn: CdpConnection | null = null;
  private readonly sessions = new Map<string, string>();
  private activeTarget: string | null = null;
  private connecting: Promise<CdpConnection> | null = null;

  constructor(private readonly host: BrowserHost) {}

  private connection(): Promise<CdpConnection> {
    if (this.conn && !this.conn.closed) return Promise.resolve(this.conn);
    // one connection attempt at a time; concurrent ops share it
    this.connecting ??= this.connect().finally(() => {
      this.connecting = null;
    });
    return this.connecting;
  }

  private async connect(): Promise<CdpConnection> {
    await this.host.ensureRunning();
    this.sessions.clear();
    const conn = await CdpConnection.connectToPort(
      this.host.devtoolsPort(),
      5000,
      this.host.devtoolsHost?.() ?? "127.0.0.1",
    );
    conn.on((e) => {
      if (e.method === "Target.detachedFromTarget") {
        for (const [t, s] of this.sessions) if (s === e.params.sessionId) this.sessions.delete(t);
      } else if (e.method === "Target.targetDestroyed" && e.params.targetId === this.activeTarget) {
        this.activeTarget = null;
      }
    });
    await conn.send("Target.setDiscoverTargets", { discover: true });
    this.conn = conn;
    return conn;
  }

  private async pages(): Promise<TargetInfo[]> {
    const conn = await this.connection();
    const r = await conn.send<{ targetInfos: TargetInfo[] }>("Target.getTargets");
    return r.targetInfos.filter((t) => t.type === "page" && !t.url.startsWith("devtools://"));
  }

  private async activeTargetId(): Promise<string> {
    const pages = await this.pages();
    if (this.activeTarget && pages.some((p) => p.targetId === this.activeTarget)) return this.activeTarget;
    const first = pages[0];
    if (first) {
      this.activeTarget = first.targetId;
      return first.targetId;
    }
    const conn = await this.connection();
    const created = await conn.send<{ targetId: string }>("Target.createTarget", { url: "about:blank" });
    this.activeTarget = created.targetId;
    return created.targetId;
  }

  private async session(targetId: string): Promise<string> {
    const cached = this.sessions.get(targetId);
    if (cached) return cached;
    const conn = await this.connection();
    const { sessionId } = await conn.send<{ sessionId: string }>("Target.attachToTarget", { targetId, flatten: true });
    await conn.send("Page.enable", {}, sessionId);
    this.sessions.set(targetId, sessionId);
    return sessionId;
  }

  private async evaluate<T = any>(sessionId: string, fn: string, arg: unknown = {}, timeoutMs = 30_000): Promise<T> {
    const conn = await this.connection();
    const r = await conn.send<any>(
      "Runtime.evaluate",
      { expression: `(${fn})(${JSON.stringify(arg)})`, returnByValue: true, awaitPromise: true },
      sessionId,
      timeoutMs,
    );
    if (r.exceptionDetails) {
      const msg: string = r.exceptionDetails.exception?.description ?? r.exceptionDetails.text ?? "script error";
      const m = msg.match(/INVALID_SELECTOR: (.*)/);
      if (m) throw new OpFailure("INVALID_SELECTOR", `Not a valid CSS selector: ${m[1]?.split("\n")[0]}`);
      throw new OpFailure("SCRIPT_ERROR", msg.split("\n")[0] ?? msg);
    }
    return r.result?.value as T;
  }

  private async tabInfo(targetId: string): Promise<{ tab_id: string; url: string; title: string; active: boolean }> {
    const pages = await this.pages();
    const t = pages.find((p) => p.targetId === targetId);
    return { tab_id: targetId, url: t?.url ?? "", title: t?.title ?? "", active: targetId === this.activeTarget };
  }

  private async navigate(
    targetId: string,
    url: string,
    waitUntil: "load" | "domcontentloaded" | "none",
    timeoutMs: number,
  ) {
    const conn = await this.connection();
    const sessionId = await this.session(targetId);
    const event = waitUntil === "domcontentloaded" ? "Page.domContentEventFired" : "Page.loadEventFired";
    const waiter = conn.waitFor(event, sessionId, timeoutMs);
    const nav = await conn.send<{ frameId: string; loaderId?: string; errorText?: string }>(
      "Page.navigate",
      { url },
      sessionId,
      timeoutMs,
    );
    if (nav.errorText) {
      waiter.cancel();
      throw new OpFailure("NAVIGATION_FAILED", `${url}: ${nav.errorText}`, { url });
    }
    if (waitUntil !== "none" && nav.loaderId) {
      try {
        await waiter.promise;
      } catch {
        throw new OpFailure("TIMEOUT", `The page did not finish loading within ${timeoutMs} ms.`, { url });
      }
    } else waiter.cancel();
    const st = await this.evaluate<{ title: string; url: string; status: number | null }>(sessionId, JS.navStatus);
    return { tab_id: targetId, url: st.url, title: st.title, status: st.status };
  }

  private async mouseClick(sessionId: string, x: number, y: number, button: string, clicks: number): Promise<void> {
    const conn = await this.connection();
    await conn.send("Input.dispatchMouseEvent", { type: "mouseMoved", x, y }, sessionId);
    for (let i = 1; i <= clicks; i++) {
      await conn.send("Input.dispatchMouseEvent", { type: "mousePressed", x, y, button, clickCount: i }, sessionId);
      await conn.send("Input.dispatchMouseEvent", { type: "mouseReleased", x, y, button, clickCount: i }, sessionId);
    }
  }

  /** Runs one op; failures of the page (no element, navigation error, deadline) are success: false. */
  async run(op: ParsedBrowserOp, timeoutMs: number): Promise<OpResult> {
    let timer: NodeJS.Timeout | undefined;
    const deadline = new Promise<OpResult>((resolve) => {
      timer = setTimeout(
        () => resolve(opFail("TIMEOUT", `The browser op did not finish within ${timeoutMs} ms.`)),
        timeoutMs,
      );
    });
    try {
      return await Promise.race([this.runInner(op, timeoutMs).catch((e) => this.failure(e)), deadline]);
    } finally {
      clearTimeout(timer);
    }
  }

  private failure(e: unknown): OpResult {
    if (e instanceof OpFailure) return opFail(e.code, e.message, e.result);
    if (e instanceof CdpError) {
      if (e.cdpCode === -1) {
        this.conn = null;
        return opFail("BROWSER_UNAVAILABLE", "The browser closed during the operation.");
      }
      return opFail("BROWSER_ERROR", e.message);
    }
    return opFail("BROWSER_UNAVAILABLE", e instanceof Error ? e.message : String(e));
  }

  private async runInner({ op, params }: ParsedBrowserOp, timeoutMs: number): Promise<OpResult> {
    if (op === "close") {
      await this.dispose();
      await this.host.stopBrowser();
      return opOk({ closed: true });
    }
    const started = op === "open" ? await this.host.ensureRunning() : false;
    const conn = await this.connection();
    switch (op) {
      case "open": {
        const target = await this.activeTargetId();
        await conn.send("Target.activateTarget", { targetId: target });
        if (params.url) {
          const r = await this.navigate(target, params.url, "load", timeoutMs);
          return opOk({ ...r, active: true, started });
        }
        return opOk({ ...(await this.tabInfo(target)), started });
      }
      case "navigate": {
        const target = await this.activeTargetId();
        return opOk(await this.navigate(target, params.url, params.wait_until, timeoutMs));
      }
      case "click": {
        const target = await this.activeTargetId();
        const sessionId = await this.session(target);
        let x = params.x;
        let y = params.y;
        if (params.selector !== undefined) {
          const rect = await this.evaluate<{ x: number; y: number } | null>(sessionId, JS.rectOf, {
            selector: params.selector,
          });
          if (!rect) throw new OpFailure("ELEMENT_NOT_FOUND", `No element matches ${params.selector}.`);
          x = Math.round(rect.x);
          y = Math.round(rect.y);
        }
        await this.mouseClick(sessionId, x!, y!, params.button, params.clicks);
        return opOk({
          ...(params.selector !== undefined ? { selector: params.selector } : {}),
          x,
          y,
          button: params.button,
          clicks: params.clicks,
        });
      }
      case "type": {
        const target = await this.activeTargetId();
        const sessionId = await this.session(target);
        const f = await this.evaluate(sessionId, JS.focus, { selector: params.selector ?? null, clear: params.clear });
        if (!f)
          throw new OpFailure(
            "ELEMENT_NOT_FOUND",
            params.selector ? `No element matches ${params.selector}.` : "Nothing has focus.",
          );
        if (params.text.length > 0) await conn.send("Input.insertText", { text: params.text }, sessionId);
        if (params.submit) {
          const key = { key: "Enter", code: "Enter", windowsVirtualKeyCode: 13, nativeVirtualKeyCode: 13 };
          await conn.send("Input.dispatchKeyEvent", { type: "keyDown", text: "\r", ...key }, sessionId);
          await conn.send("Input.dispatchKeyEvent", { type: "keyUp", ...key }, sessionId);
        }
        const value = params.submit
          ? null
          : await this.evaluate(sessionId, JS.valueOf, { selector: params.selector ?? null });
        return opOk({
          ...(params.selector ? { selector: params.selector } : {}),
          typed: params.text.length,
          value,
          submitted: params.submit,
        });
      }
      case "dom": {
        const target = await this.activeTargetId();
        const r = await this.evaluate(await this.session(target), JS.dom, {
          selector: params.selector ?? null,
          max: params.max_length,
        });
        if (!r) throw new OpFailure("ELEMENT_NOT_FOUND", `No element matches ${params.selector}.`);
        return opOk({ tab_id: target, ...r });
      }
      case "clickables": {
        const target = await this.activeTargetId();
        const r = await this.evaluate(await this.session(target), JS.clickables, { max: params.max });
        return opOk({ tab_id: target, ...r });
      }
      case "state": {
        const target = await this.activeTargetId();
        const r = await this.evaluate(await this.session(target), JS.state);
        return opOk({ tab_id: target, ...r });
      }
      case "info": {
        const v = await conn.send<any>("Browser.getVersion");
        const pages = await this.pages();
        return opOk({
          browser: v.product,
          protocol_version: v.protocolVersion,
          user_agent: v.userAgent,
          js_version: v.jsVersion,
          tabs: pages.length,
          active_tab_id: await this.activeTargetId(),
        });
      }
      case "scroll": {
        const target = await this.activeTargetId();
        const noDelta = params.delta_x === undefined && params.delta_y === undefined;
        const r = await this.evaluate(await this.session(target), JS.scroll, {
          selector: params.selector ?? null,
          dx: params.delta_x ?? 0,
          dy: params.delta_y ?? (noDelta && !params.to && !params.selector ? 500 : 0),
          to: params.to ?? null,
        });
        if (!r) throw new OpFailure("ELEMENT_NOT_FOUND", `No element matches ${params.selector}.`);
        return opOk(r);
      }
      case "screenshot": {
        const target = await this.activeTargetId();
        const sessionId = await this.session(target);
        const shotParams: Record<string, unknown> = { format: params.format };
        if (params.format === "jpeg") shotParams.quality = params.quality ?? 80;
        if (params.full_page) {
          const m = await conn.send<any>("Page.getLayoutMetrics", {}, sessionId);
          const size = m.cssContentSize ?? m.contentSize;
          shotParams.captureBeyondViewport = true;
          shotParams.clip = {
            x: 0,
            y: 0,
            width: Math.min(size.width, 16_384),
            height: Math.min(size.height, 16_384),
            scale: 1,
          };
        }
        const r = await conn.send<{ data: string }>("Page.captureScreenshot", shotParams, sessionId, timeoutMs);
        const buf = Buffer.from(r.data, "base64");
        const dims = params.format === "png" ? pngSize(buf) : jpegSize(buf);
        return opOk({
          tab_id: target,
          image_b64: r.data,
          mime_type: `image/${params.format}`,
          width: dims.width,
          height: dims.height,
        });
      }
      case "wait": {
        const target = await this.activeTargetId();
        const sessionId = await this.session(target);
        const t0 = Date.now();
        if (params.selector === undefined) {
          if (params.ms !== undefined) {
            await new Promise((r) => setTimeout(r, Math.min(params.ms!, timeoutMs)));
            return opOk({ waited_ms: Date.now() - t0 });
          }
          while (Date.now() - t0 < timeoutMs) {
            const st = await this.evaluate<{ ready_state: string }>(sessionId, JS.state);
            if (st.ready_state === "complete") return opOk({ ready_state: "complete", waited_ms: Date.now() - t0 });
            await new Promise((r) => setTimeout(r, 100));
          }
          throw new OpFailure("TIMEOUT", "The page did not finish loading in time.");
        }
        const limit = params.ms ?? timeoutMs;
        while (Date.now() - t0 <= limit) {
          if (
            await this.evaluate<boolean>(sessionId, JS.waitState, { selector: params.selector, state: params.state })
          ) {
            return opOk({
              selector: params.selector,
              state: params.state,
              found: params.state !== "detached",
              elapsed_ms: Date.now() - t0,
            });
          }
          await new Promise((r) => setTimeout(r, 100));
        }
        throw new OpFailure("TIMEOUT", `${params.selector} did not become ${params.state} within ${limit} ms.`, {
          selector: params.selector,
          found: false,
        });
      }
      case "list-tabs": {
        const active = await this.activeTargetId();
        const pages = await this.pages();
        return opOk({
          tabs: pages.map((p) => ({ tab_id: p.targetId, url: p.url, title: p.title, active: p.targetId === active })),
          active_tab_id: active,
        });
      }
      case "open-tab": {
        const created = await conn.send<{ targetId: string }>("Target.createTarget", { url: "about:blank" });
        this.activeTarget = created.targetId;
        await conn.send("Target.activateTarget", { targetId: created.targetId });
        if (params.url)
          return opOk({ ...(await this.navigate(created.targetId, params.url, "load", timeoutMs)), active: true });
        return opOk(await this.tabInfo(created.targetId));
      }
      case "close-tab": {
        const pages = await this.pages();
        const id = params.tab_id ?? (await this.activeTargetId());
        if (!pages.some((p) => p.targetId === id)) throw new OpFailure("TAB_NOT_FOUND", `No tab ${id}.`);
        if (pages.length === 1) {
          // keep the browser alive: a window without tabs would quit Chromium
          await conn.send("Target.createTarget", { url: "about:blank" });
        }
        await conn.send("Target.closeTarget", { targetId: id });
        this.sessions.delete(id);
        // closeTarget answers before the tab is gone from the target list
        for (let i = 0; i < 100 && (await this.pages()).some((p) => p.targetId === id); i++) {
          await new Promise((r) => setTimeout(r, 50));
        }
        if (this.activeTarget === id) this.activeTarget = null;
        const remaining = (await this.pages()).filter((p) => p.targetId !== id);
        const next = this.activeTarget ?? remaining[remaining.length - 1]?.targetId ?? null;
        if (next) {
          this.activeTarget = next;
          await conn.send("Target.activateTarget", { targetId: next });
        }
        return opOk({ closed_tab_id: id, active_tab_id: next });
      }
      case "switch-tab": {
        const pages = await this.pages();
        if (!pages.some((p) => p.targetId === params.tab_id))
          throw new OpFailure("TAB_NOT_FOUND", `No tab ${params.tab_id}.`);
        this.activeTarget = params.tab_id;
        await conn.send("Target.activateTarget", { targetId: params.tab_id });
        return opOk(await this.tabInfo(params.tab_id));
      }
    }
  }

  /** browser_execute: evaluates a script in the active tab (await supported) and returns its value. */
  async execute(script: string, timeoutMs: number): Promise<OpResult> {
    try {
      const conn = await this.connection();
      const target = await this.activeTargetId();
      const sessionId = await this.session(target);
      const r = await conn.send<any>(
        "Runtime.evaluate",
        {
          expression: script,
          returnByValue: true,
          awaitPromise: true,
          replMode: true,
          userGesture: true,
          timeout: timeoutMs,
        },
        sessionId,
        timeoutMs,
      );
      if (r.exceptionDetails) {
        const msg: string = r.exceptionDetails.exception?.description ?? r.exceptionDetails.text ?? "script error";
        return opFail("SCRIPT_ERROR", msg.split("\n")[0] ?? msg, { tab_id: target });
      }
      const res = r.result ?? {};
      let value = res.value ?? null;
      if (res.value === undefined && res.type !== "undefined") value = res.description ?? null;
      const json = JSON.stringify(value) ?? "null";
      if (json.length > 1_000_000)
        return opFail("RESULT_TOO_LARGE", "The script's value is larger than 1,000,000 characters of JSON.");
      return opOk({ tab_id: target, value, type: res.subtype ?? res.type ?? "undefined" });
    } catch (e) {
      return this.failure(e);
    }
  }

  async dispose(): Promise<void> {
    this.conn?.close();
    this.conn = null;
    this.sessions.clear();
    this.activeTarget = null;
  }
}
