// Generated HTML pages for the grounding benchmark: dashboards, marketing pages, settings forms,
// open menus and data tables, in light and dark themes, small to large fonts. Every element a case
// targets carries data-bench-id so the runner reads its ground-truth box from the DOM. Texts are
// unique within a page (so "the Save button" has one right answer) except where a case names an
// ordinal ("the second Edit link").
import { type Browser, chromium } from "playwright-core";

export type Category =
  | "button"
  | "link"
  | "menu"
  | "tab"
  | "table"
  | "heading"
  | "input-label"
  | "input-placeholder"
  | "checkbox"
  | "ordinal"
  | "negative";

/** Categories whose target is visible text itself. */
export const TEXT_CATEGORIES: Category[] = ["button", "link", "menu", "tab", "table", "heading", "ordinal"];

export interface BenchCase {
  /** data-bench-id of the element that must contain the answer; null for negative cases */
  targetId: string | null;
  category: Category;
  description: string;
}

export interface BenchPage {
  name: string;
  html: string;
  width: number;
  height: number;
  theme: "light" | "dark";
  fontPx: number;
  cases: BenchCase[];
}

// --- deterministic randomness -----------------------------------------------------------------

export function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 4294967296;
  };
}

class Picker {
  private used = new Set<string>();
  constructor(private readonly r: () => number) {}
  int(lo: number, hi: number): number {
    return lo + Math.floor(this.r() * (hi - lo + 1));
  }
  one<T>(xs: readonly T[]): T {
    const x = xs[Math.floor(this.r() * xs.length)];
    if (x === undefined) throw new Error("empty list");
    return x;
  }
  chance(p: number): boolean {
    return this.r() < p;
  }
  /** n distinct strings not used yet on this page (no shared words either) */
  take(pool: readonly string[], n: number): string[] {
    const out: string[] = [];
    const shuffled = [...pool].sort(() => this.r() - 0.5);
    for (const s of shuffled) {
      if (out.length >= n) break;
      const words = s.toLowerCase().split(/\s+/);
      if (this.used.has(s.toLowerCase()) || words.some((w) => w.length > 3 && this.used.has(`w:${w}`))) continue;
      this.used.add(s.toLowerCase());
      for (const w of words) this.used.add(`w:${w}`);
      out.push(s);
    }
    return out;
  }
}

// --- vocabulary ---------------------------------------------------------------------------------

const ACTIONS = [
  "Save changes",
  "Cancel",
  "Submit",
  "Delete",
  "Export CSV",
  "Import",
  "Refresh",
  "Upload file",
  "Download",
  "Share",
  "Archive",
  "Duplicate",
  "Publish",
  "Preview",
  "Continue",
  "Go back",
  "Next step",
  "Apply filters",
  "Reset",
  "Add item",
  "Create project",
  "Invite member",
  "Sign in",
  "Create account",
  "Log out",
  "Subscribe",
  "Checkout",
  "Add to cart",
  "Send message",
  "Save draft",
  "Schedule",
  "Approve",
  "Reject",
  "Assign",
  "Merge",
  "Compare",
  "Print",
  "Rename",
  "Move",
  "Copy link",
  "Generate report",
  "Start trial",
  "Book a demo",
  "Verify email",
  "Retry",
  "Confirm",
  "Dismiss",
  "Connect",
  "Disconnect",
  "Install",
  "Update now",
  "Learn more",
];
const NAV = [
  "Home",
  "Pricing",
  "Docs",
  "Blog",
  "About us",
  "Careers",
  "Contact sales",
  "Support",
  "Changelog",
  "Status",
  "Community",
  "Partners",
  "Security",
  "Integrations",
  "Customers",
  "Enterprise",
  "Resources",
  "Templates",
  "Marketplace",
  "Developers",
  "Press",
  "Events",
  "Solutions",
  "Showcase",
];
const MENU = [
  "Dashboard",
  "Projects",
  "Reports",
  "Analytics",
  "Settings",
  "Billing",
  "Team members",
  "Notifications",
  "Invoices",
  "Calendar",
  "Messages",
  "Tasks",
  "Files",
  "Audit log",
  "API keys",
  "Webhooks",
  "Inbox",
  "Contacts",
  "Campaigns",
  "Orders",
  "Products",
  "Inventory",
  "Shipments",
  "Returns",
  "Payouts",
  "Workflows",
];
const TABS = [
  "Overview",
  "Activity",
  "Details",
  "History",
  "Comments",
  "Permissions",
  "Usage",
  "Logs",
  "Metrics",
  "Alerts",
  "General",
  "Advanced",
  "Members",
  "Integrations",
  "Deployments",
  "Environment",
  "Domains",
  "Storage",
];
const PEOPLE = [
  "Alice Johnson",
  "Bob Martinez",
  "Chen Wei",
  "Diana Prince",
  "Ethan Hunt",
  "Fatima Khan",
  "George Lucas",
  "Hannah Schmidt",
  "Ivan Petrov",
  "Julia Roberts",
  "Kenji Sato",
  "Laura Palmer",
  "Mohammed Ali",
  "Nina Simone",
  "Oscar Wilde",
  "Priya Patel",
  "Quentin Blake",
  "Rosa Parks",
  "Samuel Jackson",
  "Tara Reid",
];
const CITIES = [
  "Lisbon",
  "Toronto",
  "Nairobi",
  "Osaka",
  "Denver",
  "Krakow",
  "Santiago",
  "Melbourne",
  "Dublin",
  "Austin",
];
const STATUS = ["Active", "Pending", "Suspended", "Overdue", "Paid", "Draft", "Shipped", "Refunded"];
const HEADINGS = [
  "Account settings",
  "Recent orders",
  "Team overview",
  "Billing history",
  "Welcome back",
  "Project details",
  "Payment method",
  "Security settings",
  "Monthly summary",
  "Customer list",
  "Build faster together",
  "Notification preferences",
  "Sales pipeline",
  "Quarterly revenue",
  "Support tickets",
];
const LABELS = [
  "First name",
  "Last name",
  "Email address",
  "Phone number",
  "Company",
  "Job title",
  "Street address",
  "City",
  "Postal code",
  "Country",
  "Password",
  "Username",
  "Website",
  "Coupon code",
  "Card number",
  "Display name",
];
const PLACEHOLDERS = [
  "Search products",
  "Search customers",
  "Enter your email",
  "Type a message",
  "Filter by name",
  "Find a repository",
  "Search documentation",
  "Add a comment",
  "Enter promo code",
  "Search orders",
];
const CHECKS = [
  "Remember me",
  "Subscribe to newsletter",
  "I agree to the terms",
  "Send me updates",
  "Enable notifications",
  "Keep me signed in",
  "Make this public",
  "Use dark mode",
  "Email me receipts",
  "Allow guest access",
];
/** Texts never rendered on any page: the negative cases. */
export const ABSENT = [
  "Quarterly forecast",
  "Launch rocket",
  "Feed the cat",
  "Bluetooth pairing",
  "Warranty claim",
  "Recycle bin",
  "Zebra crossing",
  "Holiday rota",
  "Translate page",
  "Volume mixer",
  "Parking permit",
  "Gift wrap",
  "Loyalty points",
  "Mute thread",
  "Pin to top",
  "Snooze alarm",
  "Flashlight",
  "Weather radar",
  "Tax refund",
  "Open garage",
  "Water plants",
  "Karaoke mode",
  "Jump to level",
  "Vaccination card",
  "Unfollow",
];

// --- themes -------------------------------------------------------------------------------------

interface Theme {
  name: "light" | "dark";
  bg: string;
  fg: string;
  muted: string;
  panel: string;
  border: string;
  link: string;
  primary: string;
  primaryFg: string;
  input: string;
}

const LIGHT: Theme[] = [
  {
    name: "light",
    bg: "#ffffff",
    fg: "#111827",
    muted: "#6b7280",
    panel: "#f3f4f6",
    border: "#d1d5db",
    link: "#2563eb",
    primary: "#2563eb",
    primaryFg: "#ffffff",
    input: "#ffffff",
  },
  {
    name: "light",
    bg: "#fafaf9",
    fg: "#1c1917",
    muted: "#57534e",
    panel: "#e7e5e4",
    border: "#a8a29e",
    link: "#7c3aed",
    primary: "#16a34a",
    primaryFg: "#ffffff",
    input: "#ffffff",
  },
  {
    name: "light",
    bg: "#f8fafc",
    fg: "#0f172a",
    muted: "#475569",
    panel: "#e2e8f0",
    border: "#94a3b8",
    link: "#0369a1",
    primary: "#dc2626",
    primaryFg: "#ffffff",
    input: "#ffffff",
  },
];
const DARK: Theme[] = [
  {
    name: "dark",
    bg: "#111827",
    fg: "#f9fafb",
    muted: "#9ca3af",
    panel: "#1f2937",
    border: "#4b5563",
    link: "#60a5fa",
    primary: "#3b82f6",
    primaryFg: "#ffffff",
    input: "#0b1220",
  },
  {
    name: "dark",
    bg: "#18181b",
    fg: "#e4e4e7",
    muted: "#a1a1aa",
    panel: "#27272a",
    border: "#52525b",
    link: "#f472b6",
    primary: "#a855f7",
    primaryFg: "#ffffff",
    input: "#09090b",
  },
  {
    name: "dark",
    bg: "#0c0a09",
    fg: "#fafaf9",
    muted: "#a8a29e",
    panel: "#1c1917",
    border: "#57534e",
    link: "#34d399",
    primary: "#f59e0b",
    primaryFg: "#1c1917",
    input: "#1c1917",
  },
];

const FONTS = ["'DejaVu Sans', sans-serif", "'DejaVu Serif', serif", "'DejaVu Sans Mono', monospace", "sans-serif"];

// --- page builders ------------------------------------------------------------------------------

interface Builder {
  p: Picker;
  t: Theme;
  cases: BenchCase[];
  next: number;
}

function id(b: Builder): string {
  b.next += 1;
  return `t${b.next}`;
}

function esc(s: string): string {
  return s.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
}

function buttonDescription(p: Picker, text: string): string {
  return p.one([`the ${text} button`, `${text} button`, `button '${text}'`, `"${text}"`, text]);
}

function button(b: Builder, text: string, kind: "primary" | "secondary" | "danger" | "ghost", asCase = true): string {
  const i = id(b);
  const t = b.t;
  const style =
    kind === "primary"
      ? `background:${t.primary};color:${t.primaryFg};border:0`
      : kind === "danger"
        ? "background:#b91c1c;color:#fff;border:0"
        : kind === "ghost"
          ? `background:transparent;color:${t.link};border:0`
          : `background:${t.panel};color:${t.fg};border:1px solid ${t.border}`;
  if (asCase) b.cases.push({ targetId: i, category: "button", description: buttonDescription(b.p, text) });
  const weight = b.p.chance(0.4) ? "font-weight:600;" : "";
  return `<button data-bench-id="${i}" style="${style};${weight}padding:.45em 1em;border-radius:${b.p.int(0, 10)}px;font:inherit;margin:4px">${esc(text)}</button>`;
}

function link(b: Builder, text: string, asCase = true): string {
  const i = id(b);
  if (asCase)
    b.cases.push({
      targetId: i,
      category: "link",
      description: b.p.one([`link '${text}'`, `the ${text} link`, `${text} link`]),
    });
  const deco = b.p.chance(0.5) ? "underline" : "none";
  return `<a data-bench-id="${i}" href="#" style="color:${b.t.link};text-decoration:${deco};margin:0 .9em">${esc(text)}</a>`;
}

function heading(b: Builder, text: string, level: 1 | 2 | 3): string {
  const i = id(b);
  b.cases.push({
    targetId: i,
    category: "heading",
    description: b.p.one([`the heading '${text}'`, `${text} heading`, `the title ${text}`]),
  });
  const size = level === 1 ? "1.9em" : level === 2 ? "1.4em" : "1.15em";
  return `<h${level} style="font-size:${size};margin:.4em 0"><span data-bench-id="${i}">${esc(text)}</span></h${level}>`;
}

function input(b: Builder, label: string | null, placeholder: string | null, layout: "row" | "stack"): string {
  const i = id(b);
  const t = b.t;
  if (label) {
    b.cases.push({
      targetId: i,
      category: "input-label",
      description: b.p.one([
        `the ${label} field`,
        `field labelled ${label}`,
        `the input for ${label}`,
        `${label} input`,
        `the ${label} text box`,
      ]),
    });
  } else if (placeholder) {
    b.cases.push({
      targetId: i,
      category: "input-placeholder",
      description: b.p.one([`the ${placeholder} field`, `${placeholder} search box`, `the input '${placeholder}'`]),
    });
  }
  const width = b.p.int(14, 26);
  const field = `<input data-bench-id="${i}" ${placeholder ? `placeholder="${esc(placeholder)}"` : ""} style="font:inherit;padding:.4em .6em;border:1px solid ${t.border};border-radius:${b.p.int(0, 6)}px;background:${t.input};color:${t.fg};width:${width}em">`;
  if (!label) return `<div style="margin:8px 0">${field}</div>`;
  return layout === "row"
    ? `<div style="display:flex;align-items:center;gap:12px;margin:8px 0"><label style="width:9em">${esc(label)}</label>${field}</div>`
    : `<div style="margin:8px 0"><label style="display:block;margin-bottom:4px">${esc(label)}</label>${field}</div>`;
}

function checkbox(b: Builder, label: string): string {
  const i = id(b);
  b.cases.push({
    targetId: i,
    category: "checkbox",
    description: b.p.one([`the checkbox next to ${label}`, `checkbox beside '${label}'`, `the ${label} checkbox`]),
  });
  const size = b.p.int(13, 18);
  return `<div style="margin:8px 0;display:flex;align-items:center;gap:8px"><input type="checkbox" data-bench-id="${i}" style="width:${size}px;height:${size}px;margin:0"><label>${esc(label)}</label></div>`;
}

function topNav(b: Builder): string {
  const [brand] = b.p.take(
    ["Acme Cloud", "Northwind", "Globex", "Initech", "Umbrella Labs", "Hooli", "Stark Works"],
    1,
  );
  const links = b.p.take(NAV, b.p.int(3, 5)).map((l) => link(b, l));
  const cta = b.p.take(ACTIONS, 1).map((a) => button(b, a, "primary"));
  return `<header style="display:flex;align-items:center;gap:8px;padding:10px 20px;border-bottom:1px solid ${b.t.border}"><strong style="margin-right:24px">${esc(brand ?? "Acme")}</strong>${links.join("")}<span style="flex:1"></span>${cta.join("")}</header>`;
}

function sidebar(b: Builder): string {
  const items = b.p.take(MENU, b.p.int(5, 8)).map((m) => {
    const i = id(b);
    b.cases.push({
      targetId: i,
      category: "menu",
      description: b.p.one([`the ${m} menu item`, `${m} in the sidebar menu`, `menu item '${m}'`]),
    });
    return `<div style="padding:7px 12px;border-radius:6px"><span data-bench-id="${i}">${esc(m)}</span></div>`;
  });
  return `<aside style="width:200px;padding:12px;background:${b.t.panel};align-self:stretch">${items.join("")}</aside>`;
}

function tabs(b: Builder): string {
  const names = b.p.take(TABS, b.p.int(3, 5));
  const cells = names.map((n, k) => {
    const i = id(b);
    b.cases.push({ targetId: i, category: "tab", description: b.p.one([`the ${n} tab`, `tab '${n}'`, `${n} tab`]) });
    const active = k === 0 ? `border-bottom:2px solid ${b.t.primary};` : "";
    return `<div data-bench-id="${i}" style="padding:8px 14px;${active}">${esc(n)}</div>`;
  });
  return `<nav style="display:flex;gap:4px;border-bottom:1px solid ${b.t.border};margin:8px 0">${cells.join("")}</nav>`;
}

function table(b: Builder, withOrdinal: boolean): string {
  const rows = b.p.int(3, 5);
  const people = b.p.take(PEOPLE, rows);
  const cities = b.p.take(CITIES, rows);
  const head = ["Name", "City", "Status", "Amount", ""]
    .map((h) => `<th style="text-align:left;padding:6px 12px;border-bottom:1px solid ${b.t.border}">${h}</th>`)
    .join("");
  const ordinal = withOrdinal ? b.p.int(1, rows) : -1;
  const body = people
    .map((person, r) => {
      const pid = id(b);
      b.cases.push({
        targetId: pid,
        category: "table",
        description: b.p.one([`the cell ${person}`, `'${person}'`, `the row ${person}`]),
      });
      const cid = id(b);
      const city = cities[r] ?? "Lisbon";
      if (b.p.chance(0.4)) b.cases.push({ targetId: cid, category: "table", description: `the text ${city}` });
      const status = b.p.one(STATUS);
      const amount = `$${b.p.int(10, 9999)}.${String(b.p.int(0, 99)).padStart(2, "0")}`;
      const eid = id(b);
      if (r + 1 === ordinal) {
        const word = ["first", "second", "third", "fourth", "fifth"][r] ?? "first";
        b.cases.push({ targetId: eid, category: "ordinal", description: `the ${word} Edit link` });
      }
      return `<tr><td style="padding:6px 12px"><span data-bench-id="${pid}">${esc(person)}</span></td><td style="padding:6px 12px"><span data-bench-id="${cid}">${esc(city)}</span></td><td style="padding:6px 12px">${status}</td><td style="padding:6px 12px">${amount}</td><td style="padding:6px 12px"><a data-bench-id="${eid}" href="#" style="color:${b.t.link}">Edit</a></td></tr>`;
    })
    .join("");
  return `<table style="border-collapse:collapse;margin:8px 0"><thead><tr>${head}</tr></thead><tbody>${body}</tbody></table>`;
}

function form(b: Builder): string {
  const layout = b.p.one(["row", "stack"] as const);
  const labels = b.p.take(LABELS, b.p.int(2, 4));
  const parts = labels.map((l) => input(b, l, b.p.chance(0.3) ? `e.g. ${l.toLowerCase()}` : null, layout));
  if (b.p.chance(0.6)) parts.push(input(b, null, b.p.take(PLACEHOLDERS, 1)[0] ?? "Search", "stack"));
  for (const c of b.p.take(CHECKS, b.p.int(1, 2))) parts.push(checkbox(b, c));
  const actions = b.p.take(ACTIONS, 2);
  parts.push(
    `<div>${button(b, actions[0] ?? "Save", "primary")}${button(b, actions[1] ?? "Cancel", b.p.one(["secondary", "ghost", "danger"] as const))}</div>`,
  );
  return `<form onsubmit="return false" style="max-width:640px">${parts.join("")}</form>`;
}

function openMenu(b: Builder): string {
  const items = b.p.take(ACTIONS, b.p.int(4, 6)).map((m) => {
    const i = id(b);
    b.cases.push({
      targetId: i,
      category: "menu",
      description: b.p.one([`the ${m} menu item`, `menu item '${m}'`, `${m} option`]),
    });
    return `<div data-bench-id="${i}" style="padding:6px 16px">${esc(m)}</div>`;
  });
  return `<div style="position:absolute;right:60px;top:70px;min-width:180px;background:${b.t.panel};border:1px solid ${b.t.border};border-radius:8px;box-shadow:0 8px 24px rgba(0,0,0,.25);padding:6px 0">${items.join("")}</div>`;
}

function cards(b: Builder): string {
  const n = b.p.int(2, 3);
  const out: string[] = [];
  for (let k = 0; k < n; k++) {
    const [title] = b.p.take(
      [
        "Fast builds",
        "Global edge",
        "Team roles",
        "Audit trails",
        "Smart alerts",
        "Usage caps",
        "Live preview",
        "Instant rollback",
      ],
      1,
    );
    const [more] = b.p.take(NAV, 1);
    out.push(
      `<div style="flex:1;padding:16px;border:1px solid ${b.t.border};border-radius:10px;background:${b.t.panel}"><div style="font-weight:700;margin-bottom:6px">${esc(title ?? "Feature")}</div><div style="color:${b.t.muted};margin-bottom:8px">Short description of the feature.</div>${link(b, more ?? "Learn more")}</div>`,
    );
  }
  return `<div style="display:flex;gap:16px;margin:12px 0">${out.join("")}</div>`;
}

type Layout = "dashboard" | "marketing" | "settings" | "menu-open" | "table";
const LAYOUTS: Layout[] = ["dashboard", "marketing", "settings", "menu-open", "table"];

export function generatePage(seed: number): BenchPage {
  const r = rng(seed * 7919 + 17);
  const p = new Picker(r);
  const theme = p.chance(0.5) ? p.one(LIGHT) : p.one(DARK);
  const fontPx = p.one([11, 12, 13, 14, 15, 16, 18, 20]);
  const big = p.chance(0.35);
  const width = big ? 1920 : 1280;
  const height = big ? 1080 : 720;
  const layout = LAYOUTS[seed % LAYOUTS.length] ?? "dashboard";
  const b: Builder = { p, t: theme, cases: [], next: 0 };
  const font = p.one(FONTS);
  let body = "";
  if (layout === "dashboard") {
    body = `${topNav(b)}<div style="display:flex">${sidebar(b)}<main style="flex:1;padding:16px 24px">${heading(b, p.take(HEADINGS, 1)[0] ?? "Overview", 2)}${tabs(b)}${table(b, p.chance(0.6))}<div>${p
      .take(ACTIONS, 2)
      .map((a, k) => button(b, a, k === 0 ? "primary" : "secondary"))
      .join("")}</div></main></div>`;
  } else if (layout === "marketing") {
    body = `${topNav(b)}<section style="padding:28px 40px">${heading(b, p.take(HEADINGS, 1)[0] ?? "Welcome", 1)}<p style="color:${theme.muted}">Everything your team needs in one place.</p><div>${p
      .take(ACTIONS, 2)
      .map((a, k) => button(b, a, k === 0 ? "primary" : "secondary"))
      .join("")}</div>${cards(b)}</section>`;
  } else if (layout === "settings") {
    body = `<div style="display:flex">${sidebar(b)}<main style="flex:1;padding:16px 32px">${heading(b, p.take(HEADINGS, 1)[0] ?? "Settings", 2)}${tabs(b)}${form(b)}</main></div>`;
  } else if (layout === "menu-open") {
    body = `${topNav(b)}<main style="padding:16px 32px">${heading(b, p.take(HEADINGS, 1)[0] ?? "Files", 2)}${form(b)}</main>${openMenu(b)}`;
  } else {
    body = `<main style="padding:16px 32px">${heading(b, p.take(HEADINGS, 1)[0] ?? "Orders", 2)}<div style="display:flex;gap:8px;align-items:center">${input(b, null, p.take(PLACEHOLDERS, 1)[0] ?? "Search", "stack")}${button(b, p.take(ACTIONS, 1)[0] ?? "Export", "secondary")}</div>${table(b, true)}${tabs(b)}</main>`;
  }
  // negative cases: texts that appear nowhere on any page
  for (const absent of p.take(ABSENT, 2)) {
    b.cases.push({
      targetId: null,
      category: "negative",
      description: p.one([`the ${absent} button`, `link '${absent}'`, `${absent}`]),
    });
  }
  const html = `<!doctype html><html><head><meta charset="utf-8"><style>*{box-sizing:border-box}body{margin:0;background:${theme.bg};color:${theme.fg};font-family:${font};font-size:${fontPx}px;line-height:1.45}</style></head><body>${body}</body></html>`;
  return { name: `${layout}-${seed}`, html, width, height, theme: theme.name, fontPx, cases: b.cases };
}

/** Debian's headless Chromium as the grounding bench and its calibration render the generated pages with. */
export function launchPageBrowser(): Promise<Browser> {
  return chromium.launch({
    executablePath: "/usr/bin/chromium",
    args: [
      "--no-sandbox",
      "--headless",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
    ],
  });
}
