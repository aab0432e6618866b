// Issue 15 benchmark: tasks phrased as users write them, run by the managed local engine on a real
// managed desktop through the HTTP API of a spawned service (POST /v1/runs), each verified by the
// state it must leave (what a form posted to the stand-in server, a file's content), never by the
// run's own status. Impossible tasks must end without success. Prints, per task, the result, the
// credits and the time; then tasks verified, false successes (a run that said `succeeded` while the
// state says otherwise: the worst outcome), credits and time per task.
//   npm run bench -- agent-tasks            npx tsx bench/agent-tasks.ts [--set=tuning|heldout|all] [--only=name,name] [--verbose]
// Needs root and the packages of scripts/install-desktop-deps.sh.
import { existsSync } from "node:fs";
import { chmod, mkdtemp, rm, writeFile } from "node:fs/promises";
import http from "node:http";
import os from "node:os";
import path from "node:path";
import { startTestInternet } from "@cua/machines/isolation/test-internet";
import { startBenchService } from "./lib.ts";

/** What the stand-in server saw for a task: form posts and GETs of its pages, in order. */
interface Hit {
  method: string;
  path: string;
  form: Record<string, string>;
  at: number;
}

interface Task {
  name: string;
  /** the page the browser shows when the run starts */
  html: string;
  /** the task as a user writes it */
  task: string;
  /** the state the task must leave (hits of this task's pages, the machine's files) */
  verify(hits: Hit[], files: (p: string) => Promise<string | null>): Promise<boolean> | boolean;
  /** impossible: the run must not succeed, and nothing may be submitted */
  impossible?: boolean;
  /** what it exercises (phrasing or element kind) */
  covers: string;
  /** before the run, after the page is shown (open a second window, ...) */
  setup?: (m: MachineCalls) => Promise<void>;
  /** the state, judged on the machine itself (the active window, ...); with verify, both must hold */
  verifyMachine?: (m: MachineCalls) => Promise<boolean>;
  /** after the run and its verdict (close what the task opened) */
  cleanup?: (m: MachineCalls) => Promise<void>;
  /** the page's own answer to a form post or a GET (a site that rejects a login); undefined: the default */
  respond?: (sub: string, method: string) => string | undefined;
}

/** What a task's setup and checks may do on the machine (through the service's API). */
interface MachineCalls {
  /** a bash command as the machine's user, with its DISPLAY; the output */
  sh(command: string): Promise<string>;
  action(command: string, parameters: Record<string, unknown>): Promise<void>;
}

const CSS = `body{margin:0;font:22px "DejaVu Sans",sans-serif;background:#fff;color:#111}
main{position:absolute;left:80px;top:40px;width:1100px}
label{display:inline-block;width:170px}
input[type=text],input[type=email],input[type=password],input[type=number],input:not([type]),textarea,select{font:22px "DejaVu Sans",sans-serif;width:380px;height:40px;border:2px solid #333;padding:0 8px;background:#fff}
textarea{height:80px}
button{font:22px "DejaVu Sans",sans-serif;padding:8px 24px;background:#1a5fd0;color:#fff;border:0;border-radius:4px}
.row{margin:14px 0}
a{color:#0645ad}
table{border-collapse:collapse}td,th{border:1px solid #999;padding:6px 18px;text-align:left}
nav{position:absolute;left:0;top:0;width:100%;height:56px;background:#f2f2f2;border-bottom:1px solid #ccc}
nav a{display:inline-block;margin:14px 0 0 40px}`;

function page(title: string, body: string, script = ""): string {
  return `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title><style>${CSS}</style></head>
<body>${body}${script ? `<script>${script}</script>` : ""}</body></html>`;
}

const field = (id: string, label: string, extra = "") =>
  `<div class="row"><label for="${id}">${label}</label><input id="${id}" name="${id}" ${extra}></div>`;

const posted = (hits: Hit[], p: string) => hits.filter((h) => h.method === "POST" && h.path.endsWith(p));
const lastPost = (hits: Hit[], p = "/submit") => posted(hits, p).at(-1)?.form;
const got = (hits: Hit[], p: string) => hits.some((h) => h.method === "GET" && h.path.endsWith(p));
const nothingPosted = (hits: Hit[]) => !hits.some((h) => h.method === "POST");

const THANKS = page("Done", `<main><h1>Thank you</h1><p>We received your request.</p></main>`);

const LONG_FILLER = Array.from(
  { length: 40 },
  (_, i) => `<p>Paragraph ${i + 1}: notes about the product, its history and its many uses.</p>`,
).join("");

const TASKS: Task[] = [
  {
    name: "signup-goal",
    covers: "goal: sign up with field-value pairs",
    html: page(
      "Sign up",
      `<main><h1>Create your account</h1><form method="post" action="submit">${field("name", "Name")}${field("email", "Email")}<button>Sign up</button></form></main>`,
    ),
    task: "Sign up with the name Ada Lovelace and email ada@example.com",
    verify: (h) => lastPost(h)?.name === "Ada Lovelace" && lastPost(h)?.email === "ada@example.com",
  },
  {
    name: "contact-list",
    covers: "list without repeated verbs, textarea, 'and submit'",
    html: page(
      "Contact",
      `<main><h1>Contact us</h1><form method="post" action="submit">${field("name", "Name")}${field("email", "Email")}<div class="row"><label for="message">Message</label><textarea id="message" name="message"></textarea></div><button>Submit</button></form></main>`,
    ),
    task: "Put Grace in Name, grace@navy.mil in Email and Hello there in Message and submit",
    verify: (h) =>
      lastPost(h)?.name === "Grace" &&
      lastPost(h)?.email === "grace@navy.mil" &&
      lastPost(h)?.message === "Hello there",
  },
  {
    name: "login-goal",
    covers: "goal: log in, password field (masked)",
    html: page(
      "Log in",
      `<main><h1>Welcome back</h1><form method="post" action="submit">${field("username", "Username")}${field("password", "Password", 'type="password"')}<button>Log in</button></form></main>`,
    ),
    task: "Log in with username ada and password hunter2",
    verify: (h) => lastPost(h)?.username === "ada" && lastPost(h)?.password === "hunter2",
  },
  {
    name: "change-quantity",
    covers: "change X to Y (replace a value)",
    html: page(
      "Cart",
      `<main><h1>Your cart</h1><p>Blue mug, 12.00 each</p><form method="post" action="submit">${field("quantity", "Quantity", 'type="number" value="1"')}<button>Update</button></form></main>`,
    ),
    task: "Change the quantity to 3, then click Update",
    verify: (h) => lastPost(h)?.quantity === "3",
  },
  {
    name: "choose-plan",
    covers: "choose X as Y; heading vs a button whose label starts with a verb",
    html: page(
      "Plans",
      `<main><h1 style="font-size:28px">Pick a plan</h1><div style="display:flex;gap:40px">${[
        "Starter",
        "Team",
        "Enterprise",
      ]
        .map(
          (p) =>
            `<form method="post" action="submit" style="border:1px solid #bbb;padding:20px;width:260px"><h2 style="font-size:40px;margin:0 0 16px">${p}</h2><p>For ${p.toLowerCase()} use</p><input type="hidden" name="plan" value="${p}"><button>Choose ${p}</button></form>`,
        )
        .join("")}</div></main>`,
    ),
    task: "Choose Team as the plan",
    verify: (h) => lastPost(h)?.plan === "Team",
  },
  {
    name: "pick-format",
    covers: "pick X as Y from a dropdown (select)",
    html: page(
      "Export",
      `<main><h1>Export data</h1><form method="post" action="submit"><div class="row"><label for="format">Format</label><select id="format" name="format"><option>JSON</option><option>CSV</option><option>XML</option></select></div><button>Export</button></form></main>`,
    ),
    task: "Pick CSV as the format, then click Export",
    verify: (h) => lastPost(h)?.format === "CSV",
  },
  {
    name: "radio-shipping",
    covers: "choose X as Y among radios",
    html: page(
      "Shipping",
      `<main><h1>Shipping</h1><form method="post" action="submit">${["Standard", "Express", "Overnight"]
        .map(
          (o) =>
            `<div class="row"><input type="radio" id="${o}" name="shipping" value="${o}" style="width:22px;height:22px"${o === "Standard" ? " checked" : ""}><label for="${o}" style="width:auto;margin-left:10px">${o}</label></div>`,
        )
        .join("")}<button>Continue</button></form></main>`,
    ),
    task: "Choose Express as the shipping method, then click Continue",
    verify: (h) => lastPost(h)?.shipping === "Express",
  },
  {
    name: "checkbox",
    covers: "checkbox",
    html: page(
      "Preferences",
      `<main><h1>Preferences</h1><form method="post" action="submit"><div class="row"><input type="checkbox" id="news" name="newsletter" style="width:22px;height:22px"><label for="news" style="width:auto;margin-left:10px">Subscribe to the newsletter</label></div><button>Save</button></form></main>`,
    ),
    task: "Tick Subscribe to the newsletter and click Save",
    verify: (h) => lastPost(h)?.newsletter === "on",
  },
  {
    name: "search-box",
    covers: "'the search box' is the input, not the Search button",
    html: page(
      "Shop",
      `<main><h1>Shop</h1><form method="post" action="submit"><input name="q" aria-label="search" style="width:420px"> <button>Search</button></form></main>`,
    ),
    task: "Type laptop into the search box and click the Search button",
    verify: (h) => lastPost(h)?.q === "laptop",
  },
  {
    name: "search-enter",
    covers: "search for X (a field by its placeholder, Enter)",
    html: page(
      "Docs",
      `<main><h1>Documentation</h1><form method="post" action="submit"><input name="q" placeholder="Search the docs" style="width:420px"></form></main>`,
    ),
    task: "Search the docs for webhooks",
    verify: (h) => lastPost(h)?.q === "webhooks",
  },
  {
    name: "scroll-bottom",
    covers: "scroll to the bottom",
    html: page(
      "Terms",
      `<main><h1>Terms of service</h1>${LONG_FILLER}<form method="post" action="submit"><input type="hidden" name="accepted" value="yes"><button>Accept terms</button></form><p>End.</p></main>`,
    ),
    task: "Scroll down to the bottom of the page and click Accept terms",
    verify: (h) => lastPost(h)?.accepted === "yes",
  },
  {
    name: "scroll-until",
    covers: "scroll until X shows",
    html: page(
      "Product",
      `<main><h1>Our product</h1>${LONG_FILLER.slice(0, LONG_FILLER.length / 2)}<h2>Pricing</h2><form method="post" action="submit"><input type="hidden" name="buy" value="pro"><button>Buy Pro</button></form>${LONG_FILLER.slice(0, LONG_FILLER.length / 2)}</main>`,
    ),
    task: "Scroll down until you see Buy Pro, then click Buy Pro",
    verify: (h) => lastPost(h)?.buy === "pro",
  },
  {
    name: "wait-finish",
    covers: "wait until X finishes (not the literal text)",
    html: page(
      "Reports",
      `<main><h1>Reports</h1><button id="gen" onclick="go()">Generate report</button><p id="st"></p><form id="dl" method="post" action="submit" style="display:none"><input type="hidden" name="download" value="1"><button>Download</button></form></main>`,
      `function go(){document.getElementById('gen').disabled=true;let p=0;const st=document.getElementById('st');const t=setInterval(()=>{p+=20;st.textContent='Generating report... '+p+'%';if(p>=100){clearInterval(t);st.textContent='Report ready';fetch('ready',{method:'POST'});document.getElementById('dl').style.display='block';}},1000);}`,
    ),
    task: "Click Generate report, wait for the report to finish generating, then click Download",
    verify: (h) => {
      const ready = posted(h, "/ready")[0];
      const dl = posted(h, "/submit")[0];
      return Boolean(ready && dl && dl.at >= ready.at);
    },
  },
  {
    name: "table-row",
    covers: "in <region>, the row for X (table rows)",
    html: page(
      "Billing",
      `<main><h2>Customers</h2><table><tr><th>Name</th><th>City</th></tr><tr><td><a href="customer-acme">ACME</a></td><td>Berlin</td></tr><tr><td><a href="customer-globex">Globex</a></td><td>Paris</td></tr></table><h2>Invoices</h2><table><tr><th>Customer</th><th>Amount</th></tr><tr><td><a href="invoice-globex">Globex</a></td><td>120.00</td></tr><tr><td><a href="invoice-acme">ACME</a></td><td>99.50</td></tr></table></main>`,
    ),
    task: "In the invoices table, open the row for ACME",
    verify: (h) => got(h, "/invoice-acme") && !got(h, "/customer-acme"),
  },
  {
    name: "top-nav",
    covers: "the X button in the top navigation",
    html: page(
      "Dashboard",
      `<nav><a href="home">Home</a><a href="nav-export">Export</a><a href="help">Help</a></nav><main style="top:120px"><h1>Dashboard</h1><p>Data for November.</p><form method="post" action="submit"><input type="hidden" name="body" value="1"><button>Export</button></form></main>`,
    ),
    task: "Click the Export button in the top navigation",
    verify: (h) => got(h, "/nav-export") && nothingPosted(h),
  },
  {
    name: "heading-vs-button",
    covers: "a heading rarely is a click target",
    html: page(
      "News",
      `<main><h1 style="font-size:44px">Subscribe</h1><p>Weekly news in your inbox.</p><form method="post" action="submit"><input type="hidden" name="sub" value="1"><button>Subscribe</button></form></main>`,
    ),
    task: "Click Subscribe",
    verify: (h) => lastPost(h)?.sub === "1",
  },
  {
    name: "right-of",
    covers: "X right of Y",
    html: page(
      "Users",
      `<main><h1>Users</h1><form method="post" action="submit">${["Alice", "Globex", "Zed"]
        .map(
          (u) =>
            `<div class="row"><span style="display:inline-block;width:200px">${u}</span><button name="edit" value="${u}" style="margin-right:20px">Edit</button><button name="delete" value="${u}">Delete</button></div>`,
        )
        .join("")}</form></main>`,
    ),
    task: "Click the Delete button right of Globex",
    verify: (h) => lastPost(h)?.delete === "Globex",
  },
  {
    name: "ordinal",
    covers: "the N-th",
    html: page(
      "List",
      `<main><h1>Saved items</h1><form method="post" action="submit">${[1, 2, 3, 4]
        .map(
          (i) =>
            `<div class="row"><span style="display:inline-block;width:200px">Item ${i}</span><button name="remove" value="${i}">Remove</button></div>`,
        )
        .join("")}</form></main>`,
    ),
    task: "Click the third Remove button",
    verify: (h) => lastPost(h)?.remove === "3",
  },
  {
    name: "last",
    covers: "first/last",
    html: page(
      "Files",
      `<main><h1>Files</h1>${["a.csv", "b.csv", "c.csv"].map((f) => `<div class="row"><span style="display:inline-block;width:200px">${f}</span><a href="dl-${f}">Download</a></div>`).join("")}</main>`,
    ),
    task: "Click the last Download link",
    verify: (h) => got(h, "/dl-c.csv") && !got(h, "/dl-a.csv"),
  },
  {
    name: "set-field",
    covers: "set X to Y over an existing value",
    html: page(
      "Profile",
      `<main><h1>Profile</h1><form method="post" action="submit">${field("city", "City", 'value="London"')}<button>Save</button></form></main>`,
    ),
    task: "Set the City field to Paris, then click Save",
    verify: (h) => lastPost(h)?.city === "Paris",
  },
  {
    name: "select-from",
    covers: "select X from the Y dropdown",
    html: page(
      "Address",
      `<main><h1>Address</h1><form method="post" action="submit"><div class="row"><label for="country">Country</label><select id="country" name="country"><option value="">Choose</option><option value="FR">France</option><option value="CA">Canada</option><option value="JP">Japan</option></select></div><button>Continue</button></form></main>`,
    ),
    task: "Select Canada from the Country dropdown, then click Continue",
    verify: (h) => lastPost(h)?.country === "CA",
  },
  {
    name: "colon-list",
    covers: "'Label: value' list",
    html: page(
      "Register",
      `<main><h1>Register</h1><form method="post" action="submit">${field("name", "Full name")}${field("company", "Company")}<button>Register</button></form></main>`,
    ),
    task: "Fill in Full name: Alan Turing, Company: Bletchley and submit",
    verify: (h) => lastPost(h)?.name === "Alan Turing" && lastPost(h)?.company === "Bletchley",
  },
  {
    name: "message-box",
    covers: "write X in the Y box",
    html: page(
      "Feedback",
      `<main><h1>Feedback</h1><form method="post" action="submit"><div class="row"><label for="message">Message</label><textarea id="message" name="message"></textarea></div><button>Send</button></form></main>`,
    ),
    task: "Write 'See you soon' in the Message box and click Send",
    verify: (h) => lastPost(h)?.message === "See you soon",
  },
  {
    name: "tab",
    covers: "tabs, 'open the X tab'",
    html: page(
      "Settings",
      `<main><h1>Settings</h1><div style="border-bottom:1px solid #999;padding-bottom:6px"><a href="#" onclick="show('g')" style="margin-right:30px">General</a><a href="#" onclick="show('b')" style="margin-right:30px">Billing</a><a href="#" onclick="show('s')">Security</a></div><div id="g"><p>General settings</p></div><div id="b" style="display:none"><form method="post" action="submit"><input type="hidden" name="billing" value="1"><p>Billing settings</p><button>Save billing</button></form></div><div id="s" style="display:none"><p>Security settings</p></div></main>`,
      `function show(k){for(const x of ['g','b','s'])document.getElementById(x).style.display=x===k?'block':'none';}`,
    ),
    task: "Open the Billing tab and click Save billing",
    verify: (h) => lastPost(h)?.billing === "1",
  },
  {
    name: "go-to-page",
    covers: "go to the X page (a link)",
    html: page(
      "Home",
      `<nav><a href="page-home">Home</a><a href="page-docs">Docs</a><a href="page-blog">Blog</a></nav><main style="top:120px"><h1>Welcome</h1></main>`,
    ),
    task: "Go to the Docs page",
    verify: (h) => got(h, "/page-docs"),
  },
  {
    name: "rejected-form",
    covers: "a submit the site rejects must not succeed",
    impossible: true,
    html: page(
      "Sign up",
      `<main><h1>Sign up</h1><form method="post" action="reject">${field("name", "Name")}${field("email", "Email")}<button>Sign up</button></form></main>`,
    ),
    task: "Sign up with the name Bob and email bob",
    verify: () => true,
  },
  {
    name: "impossible-button",
    covers: "impossible: the element does not exist",
    impossible: true,
    html: page("Account", `<main><h1>Account</h1><p>Signed in as ada.</p><a href="logout">Log out</a></main>`),
    task: "Click the Delete account button",
    verify: () => true,
  },
  {
    name: "impossible-form",
    covers: "impossible: no form",
    impossible: true,
    html: page("Closed", `<main><h1>Registration is closed</h1><p>Come back next year.</p></main>`),
    task: "Sign up with the name Ada and email ada@example.com",
    verify: () => true,
  },
  {
    name: "impossible-field",
    covers: "impossible: no such field",
    impossible: true,
    html: page("Cart", `<main><h1>Your cart is empty</h1><a href="shop">Continue shopping</a></main>`),
    task: "Change the quantity to 5",
    verify: () => true,
  },
  {
    name: "terminal-file",
    covers: "use the terminal to ... (file content)",
    html: page("Desktop", `<main><h1>Nothing here</h1></main>`),
    task: "Use the terminal to create notes.txt containing hello",
    verify: async (_h, files) => (await files("notes.txt"))?.trim() === "hello",
    cleanup: async (m) => {
      // the next task needs the browser in front again
      await m.sh(
        "for w in $(xdotool search --class xterm); do xdotool windowclose $w 2>/dev/null || xdotool windowkill $w; done; true",
      );
      await raiseBrowser(m);
    },
  },
];

// ---------------------------------------------------------------------------------------------
// The HELD-OUT set (issue 15): written after the engine was tuned on the set above, by someone who
// had not read the engine's parser, in the words people use, over pages of another style (labels
// above their fields, light borders, green buttons, other fonts). Run once before any engine change
// for them; that first score is recorded in docs/engines-local.md. Do not tune the engine on these
// sentences: a fix must be a general rule that also holds for sentences not written here.

const CSS2 = `body{margin:0;font:18px "DejaVu Serif",serif;background:#fafafa;color:#222}
main{position:absolute;left:120px;top:30px;width:900px}
.f{margin:10px 0}.f label{display:block;margin-bottom:4px;color:#333}
input[type=text],input[type=email],input[type=password],input:not([type]),select,textarea{font:18px "DejaVu Sans",sans-serif;width:340px;height:36px;border:1px solid #999;border-radius:6px;padding:0 8px;background:#fff}
button{font:18px "DejaVu Sans",sans-serif;padding:8px 20px;background:#1f8a4c;color:#fff;border:0;border-radius:18px}
.opt{margin:6px 0}.opt input{width:18px;height:18px;vertical-align:middle}.opt label{margin-left:8px}
table{border-collapse:collapse;margin-bottom:18px}td,th{border-bottom:1px solid #ccc;padding:6px 16px;text-align:left}
.card{border:1px solid #ddd;border-radius:8px;padding:10px 16px;margin:10px 0;background:#fff}`;

function page2(title: string, body: string, script = ""): string {
  return `<!doctype html><html><head><meta charset="utf-8"><title>${title}</title><style>${CSS2}</style></head>
<body>${body}${script ? `<script>${script}</script>` : ""}</body></html>`;
}

/** a stacked field: its label above it */
const sfield = (id: string, label: string, extra = "") =>
  `<div class="f"><label for="${id}">${label}</label><input id="${id}" name="${id}" ${extra}></div>`;

const radios = (name: string, options: string[], checked: string) =>
  options
    .map(
      (o) =>
        `<div class="opt"><input type="radio" id="${name}-${o}" name="${name}" value="${o}"${o === checked ? " checked" : ""}><label for="${name}-${o}">${o}</label></div>`,
    )
    .join("");

const SHORT_FILLER = Array.from(
  { length: 30 },
  (_, i) => `<p>Section ${i + 1}. Our team reviews every request within two working days.</p>`,
).join("");

/** the active window's class and title on the machine's display */
const activeWindow = async (m: MachineCalls) =>
  (await m.sh("xdotool getactivewindow getwindowclassname; xdotool getactivewindow getwindowname")).trim();

const raiseBrowser = (m: MachineCalls) =>
  m
    .sh("xdotool search --onlyvisible --class chromium | tail -1 | xargs -r xdotool windowactivate --sync")
    .then(() => {});

const closeEditors = (m: MachineCalls) =>
  m
    .sh(
      "for w in $(xdotool search --class mousepad); do xdotool windowclose $w 2>/dev/null || xdotool windowkill $w; done; true",
    )
    .then(() => raiseBrowser(m));

const HELD_OUT: Task[] = [
  {
    name: "ho-create-account",
    covers: "goal: create an account for <name>, values named by field words",
    html: page2(
      "Join",
      `<main><h1>Create your account</h1><form method="post" action="submit">${sfield("name", "Full name")}${sfield("email", "Email address", 'type="email"')}${sfield("password", "Password", 'type="password"')}<button>Create account</button></form></main>`,
    ),
    task: "Create an account for Marie Curie, email marie@radium.fr, password Polonium84",
    verify: (h) =>
      lastPost(h)?.name === "Marie Curie" &&
      lastPost(h)?.email === "marie@radium.fr" &&
      lastPost(h)?.password === "Polonium84",
  },
  {
    name: "ho-signin",
    covers: "goal: sign in as <user> with password <p>; a label 'Email or username'",
    html: page2(
      "Sign in",
      `<main><h1>Sign in to Acme</h1><form method="post" action="submit">${sfield("login", "Email or username")}${sfield("password", "Password", 'type="password"')}<div class="opt"><input type="checkbox" id="rm" name="remember"><label for="rm">Remember me</label></div><button>Sign in</button></form></main>`,
    ),
    task: "sign in as bob.smith with password Tr0ub4dor",
    verify: (h) => lastPost(h)?.login === "bob.smith" && lastPost(h)?.password === "Tr0ub4dor",
  },
  {
    name: "ho-newsletter",
    covers: "field-value list with 'as the', then 'hit <button>'",
    html: page2(
      "Newsletter",
      `<main><h1>Get our weekly letter</h1><form method="post" action="submit">${sfield("first", "First name")}${sfield("email", "Email")}<button>Subscribe</button></form></main>`,
    ),
    task: "Enter Lin as the first name and lin@example.org as the email, then hit Subscribe",
    verify: (h) => lastPost(h)?.first === "Lin" && lastPost(h)?.email === "lin@example.org",
  },
  {
    name: "ho-shipping",
    covers: "fill out the form: field value, field value; a button named without a verb",
    html: page2(
      "Shipping",
      `<main><h1>Shipping address</h1><form method="post" action="submit">${sfield("street", "Street address")}${sfield("city", "City")}${sfield("zip", "ZIP code")}<button>Continue to payment</button></form></main>`,
    ),
    task: "Fill out the shipping form: street 12 Rue Cler, city Lyon, zip 69001, then continue to payment",
    verify: (h) =>
      lastPost(h)?.street === "12 Rue Cler" && lastPost(h)?.city === "Lyon" && lastPost(h)?.zip === "69001",
  },
  {
    name: "ho-radio-size",
    covers: "radio: select the <X> size; 'add it to the cart' (a button's words)",
    html: page2(
      "Mug",
      `<main><h1>Enamel mug</h1><p>14.00</p><form method="post" action="submit"><p><b>Size</b></p>${radios("size", ["Small", "Medium", "Large"], "Medium")}<button>Add to cart</button></form></main>`,
    ),
    task: "Select the Large size and add it to the cart",
    verify: (h) => lastPost(h)?.size === "Large",
  },
  {
    name: "ho-radio-payment",
    covers: "radio: choose X for Y; 'place the order'",
    html: page2(
      "Checkout",
      `<main><h1>Checkout</h1><form method="post" action="submit"><p><b>Payment method</b></p>${radios("pay", ["Card", "PayPal", "Bank transfer"], "Card")}<button>Place order</button></form></main>`,
    ),
    task: "Choose Bank transfer for payment, then place the order",
    verify: (h) => lastPost(h)?.pay === "Bank transfer",
  },
  {
    name: "ho-language",
    covers: "dropdown: change <select> to <option>; 'save the changes'",
    html: page2(
      "Settings",
      `<main><h1>Account settings</h1><form method="post" action="submit"><div class="f"><label for="lang">Language</label><select id="lang" name="lang"><option>English</option><option>German</option><option>Spanish</option></select></div><button>Save changes</button></form></main>`,
    ),
    task: "Change the language to German and save the changes",
    verify: (h) => lastPost(h)?.lang === "German",
  },
  {
    name: "ho-timezone",
    covers: "dropdown: set my <select> to <option> (label 'Time zone' written 'timezone')",
    html: page2(
      "Profile",
      `<main><h1>Your profile</h1><form method="post" action="submit"><div class="f"><label for="tz">Time zone</label><select id="tz" name="tz"><option>UTC</option><option>Europe/Paris</option><option>Asia/Tokyo</option></select></div><button>Save</button></form></main>`,
    ),
    task: "set my timezone to Asia/Tokyo and save",
    verify: (h) => lastPost(h)?.tz === "Asia/Tokyo",
  },
  {
    name: "ho-terms",
    covers: "checkbox: tick the box to agree to <part of its label>",
    html: page2(
      "Terms",
      `<main><h1>Almost there</h1><form method="post" action="submit"><div class="opt"><input type="checkbox" id="tos" name="tos"><label for="tos">I agree to the Terms of Service</label></div><button>Continue</button></form></main>`,
    ),
    task: "Tick the box to agree to the terms, then press Continue",
    verify: (h) => lastPost(h)?.tos === "on",
  },
  {
    name: "ho-orders-under",
    covers: "under <section>: <button> on the row for X (same name in another table above)",
    html: page2(
      "Orders",
      `<main><h2>Completed orders</h2><table><tr><th>Customer</th><th>Total</th><th></th></tr><tr><td>Stark Industries</td><td>310.00</td><td><a href="view-done-stark">View</a></td></tr><tr><td>Wayne Enterprises</td><td>99.00</td><td><a href="view-done-wayne">View</a></td></tr></table><h2>Pending orders</h2><table><tr><th>Customer</th><th>Total</th><th></th></tr><tr><td>Wayne Enterprises</td><td>45.00</td><td><a href="view-pending-wayne">View</a></td></tr><tr><td>Oscorp</td><td>12.00</td><td><a href="view-pending-oscorp">View</a></td></tr></table></main>`,
    ),
    task: "Under Pending orders, click View on the row for Wayne Enterprises",
    verify: (h) => got(h, "/view-pending-wayne") && !got(h, "/view-done-wayne"),
  },
  {
    name: "ho-left-of",
    covers: "the checkbox left of X, then a button",
    html: page2(
      "Invoices",
      `<main><h1>Invoices</h1><form method="post" action="submit">${["INV-1041", "INV-1042", "INV-1043"].map((i) => `<div class="opt"><input type="checkbox" name="sel" value="${i}" id="${i}"><label for="${i}" style="margin-left:24px">${i}</label></div>`).join("")}<button>Archive selected</button></form></main>`,
    ),
    task: "Select the checkbox left of INV-1042 and press Archive selected",
    // one box ticked: the form posts sel once
    verify: (h) => {
      const p = posted(h, "/submit").at(-1);
      return p?.form.sel === "INV-1042";
    },
  },
  {
    name: "ho-first",
    covers: "first: follow the first 'X' link",
    html: page2(
      "Blog",
      `<main><h1>Blog</h1>${["Why we moved to Rust", "Ten years of Acme", "Hiring in Lisbon"].map((t, i) => `<div class="card"><h3>${t}</h3><a href="post-${i + 1}">Read more</a></div>`).join("")}</main>`,
    ),
    task: "Follow the first 'Read more' link",
    verify: (h) => got(h, "/post-1") && !got(h, "/post-2") && !got(h, "/post-3"),
  },
  {
    name: "ho-nth",
    covers: "the N-th with a numeral (2nd)",
    html: page2(
      "Shop",
      `<main><h1>Mugs</h1><form method="post" action="submit">${["Blue", "Green", "Red", "Black"].map((c) => `<div class="card">${c} mug <button name="add" value="${c}" style="margin-left:30px">Add to cart</button></div>`).join("")}</form></main>`,
    ),
    task: "Press the 2nd Add to cart button",
    verify: (h) => lastPost(h)?.add === "Green",
  },
  {
    name: "ho-last",
    covers: "last: delete the last comment (the verb is the button's label)",
    html: page2(
      "Comments",
      `<main><h1>Comments</h1><form method="post" action="submit">${["Great post!", "I disagree.", "Spam spam spam"].map((c, i) => `<div class="card">${c} <button name="del" value="${i + 1}" style="margin-left:30px;background:#b3261e">Delete</button></div>`).join("")}</form></main>`,
    ),
    task: "delete the last comment",
    verify: (h) => lastPost(h)?.del === "3",
  },
  {
    name: "ho-scroll-end",
    covers: "scroll all the way down, then click",
    html: page2(
      "Policy",
      `<main><h1>Privacy policy</h1>${SHORT_FILLER}${SHORT_FILLER}<form method="post" action="submit"><input type="hidden" name="read" value="yes"><button>I have read this</button></form></main>`,
    ),
    task: "Scroll all the way down and click I have read this",
    verify: (h) => lastPost(h)?.read === "yes",
  },
  {
    name: "ho-scroll-find",
    covers: "keep scrolling until you find X, then click it (a pronoun)",
    html: page2(
      "Help",
      `<main><h1>Help centre</h1>${SHORT_FILLER}<form method="post" action="submit"><input type="hidden" name="contact" value="1"><button>Contact support</button></form>${SHORT_FILLER}</main>`,
    ),
    task: "Keep scrolling until you find Contact support, then click it",
    verify: (h) => lastPost(h)?.contact === "1",
  },
  {
    name: "ho-export-wait",
    covers: "start <thing>, wait till it's done, then <verb> the <thing> (buttons named by a goal)",
    html: page2(
      "Export",
      `<main><h1>Data export</h1><button id="go" onclick="go()">Start export</button><p id="st"></p><form id="dl" method="post" action="submit" style="display:none"><input type="hidden" name="file" value="export.zip"><button>Download file</button></form></main>`,
      `function go(){document.getElementById('go').disabled=true;let p=0;const st=document.getElementById('st');const t=setInterval(()=>{p+=25;st.textContent='Exporting... '+p+'%';if(p>=100){clearInterval(t);st.textContent='Export complete';fetch('ready',{method:'POST'});document.getElementById('dl').style.display='block';}},1200);}`,
    ),
    task: "Start the export, wait till it's done and then download the file",
    verify: (h) => {
      const ready = posted(h, "/ready")[0];
      const dl = posted(h, "/submit")[0];
      return Boolean(ready && dl && dl.at >= ready.at);
    },
  },
  {
    name: "ho-terminal",
    covers: "open a terminal and make a file called X that says Y",
    html: page2("Blank", `<main><h1>Start page</h1></main>`),
    task: "Open a terminal and make a file called todo.txt that says buy milk",
    verify: async (_h, files) => (await files("todo.txt"))?.trim() === "buy milk",
    cleanup: async (m) => {
      await m.sh(
        "for w in $(xdotool search --class xterm); do xdotool windowclose $w 2>/dev/null || xdotool windowkill $w; done; true",
      );
      await raiseBrowser(m);
    },
  },
  {
    name: "ho-open-editor",
    covers: "open <app>: launch the text editor (verified by the active window)",
    html: page2("Blank", `<main><h1>Start page</h1></main>`),
    task: "Launch the text editor",
    verify: () => true,
    verifyMachine: async (m) => /mousepad/i.test(await activeWindow(m)),
    cleanup: closeEditors,
  },
  {
    name: "ho-window-switch",
    covers: "window by title: switch to the text editor window (verified by the active window)",
    html: page2("Notes", `<main><h1>Meeting notes</h1><p>Nothing yet.</p></main>`),
    setup: async (m) => {
      await m.action("key_combo", { keys: ["ctrl", "alt", "e"] });
      await m.sh(
        "for i in $(seq 30); do xdotool search --onlyvisible --class mousepad >/dev/null && break; sleep 0.2; done; true",
      );
      await new Promise((r) => setTimeout(r, 500));
      await raiseBrowser(m);
      await new Promise((r) => setTimeout(r, 500));
    },
    task: "Switch to the text editor window",
    verify: () => true,
    verifyMachine: async (m) => /mousepad/i.test(await activeWindow(m)),
    cleanup: closeEditors,
  },
  {
    name: "ho-imp-coupon",
    covers: "impossible: no coupon field on the page",
    impossible: true,
    html: page2(
      "Cart",
      `<main><h1>Your cart</h1><p>Enamel mug x 1: 14.00</p><form method="post" action="submit"><input type="hidden" name="checkout" value="1"><button>Checkout</button></form></main>`,
    ),
    task: "Apply the coupon code SAVE20",
    verify: () => true,
  },
  {
    name: "ho-imp-login",
    covers: "impossible: the site rejects the password",
    impossible: true,
    html: page2(
      "Log in",
      `<main><h1>Log in</h1><form method="post" action="reject-login">${sfield("user", "Username")}${sfield("password", "Password", 'type="password"')}<button>Log in</button></form></main>`,
    ),
    respond: (sub, method) =>
      sub === "reject-login" && method === "POST"
        ? page2(
            "Log in",
            `<main><h1>Log in</h1><p style="color:#b00">Incorrect username or password.</p><form method="post" action="reject-login">${sfield("user", "Username")}${sfield("password", "Password", 'type="password"')}<button>Log in</button></form></main>`,
          )
        : undefined,
    task: "Log in as admin with the password letmein",
    verify: () => true,
  },
  {
    name: "ho-imp-careers",
    covers: "impossible: no such page link",
    impossible: true,
    html: page2(
      "Acme",
      `<nav style="padding:14px 40px;background:#eee"><a href="home" style="margin-right:30px">Home</a><a href="about" style="margin-right:30px">About</a><a href="blog">Blog</a></nav><main style="top:90px"><h1>Acme Corporation</h1><p>We make everything.</p></main>`,
    ),
    task: "Go to the Careers page",
    verify: (h) => !h.some((x) => x.method === "GET"),
  },
];

/** `--name=value` (so `npm run bench -- agent-tasks --only=a,b` does not take the value for a suite) */
const arg = (name: string) => process.argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);

export async function benchAgentTasks() {
  if (
    process.getuid?.() !== 0 ||
    !["/usr/bin/Xvfb", "/usr/bin/xdotool", "/usr/bin/scrot", "/usr/bin/chromium"].every((p) => existsSync(p))
  ) {
    console.log("agent-tasks: needs root and the desktop packages (scripts/install-desktop-deps.sh); skipped");
    return;
  }
  const only = arg("only")?.split(",");
  const set = arg("set") ?? "all";
  const verbose = process.argv.includes("--verbose");
  const ALL = [...TASKS, ...HELD_OUT];
  const inSet = set === "tuning" ? TASKS : set === "heldout" ? HELD_OUT : ALL;
  const tasks = only ? ALL.filter((t) => only.includes(t.name)) : inSet;
  const hits = new Map<string, Hit[]>();
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? "/", "http://x");
    const [, name, ...rest] = url.pathname.split("/");
    const task = ALL.find((t) => t.name === name);
    let body = "";
    req.on("data", (d) => (body += d));
    req.on("end", () => {
      const list = hits.get(name ?? "") ?? [];
      list.push({
        method: req.method ?? "GET",
        path: url.pathname,
        form: Object.fromEntries(new URLSearchParams(body)),
        at: Date.now(),
      });
      hits.set(name ?? "", list);
      res.writeHead(200, { "content-type": "text/html" });
      if (!task) return res.end("not found");
      const sub = rest.join("/");
      if (sub === "" || sub === "start") return res.end(task.html);
      const own = task.respond?.(sub, req.method ?? "GET");
      if (own !== undefined) return res.end(own);
      if (sub === "reject")
        return res.end(
          page(
            "Sign up",
            `<main><h1>Sign up</h1><p style="color:#b00">Email is invalid</p><form method="post" action="reject">${field("name", "Name")}${field("email", "Email")}<button>Sign up</button></form></main>`,
          ),
        );
      if (sub === "ready") return res.end("ok");
      if (req.method === "POST") return res.end(THANKS);
      res.end(page(sub, `<main><h1>${sub.replace(/[^\w. -]/g, "")}</h1><p>Opened.</p></main>`));
    });
  });
  const root = await mkdtemp(path.join(os.tmpdir(), "cua-bench-agent-"));
  await chmod(root, 0o711);
  const sock = path.join(os.tmpdir(), `cua-bench-agent-${process.pid}.sock`);
  await rm(sock, { force: true });
  await new Promise<void>((r) => server.listen(sock, r));
  const inet = await startTestInternet();
  const base = await inet.expose(sock);
  const svc = await startBenchService({
    credits: 1_000_000,
    env: { DATA_DIR: path.join(root, "data"), MACHINES_ROOT: path.join(root, "machines") },
  });
  const req = async (method: string, p: string, body?: unknown) => {
    const r = await fetch(svc.url + p, {
      method,
      headers: {
        "X-API-Key": svc.account.live_key,
        ...(body === undefined ? {} : { "Content-Type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await r.text();
    if (!r.ok) throw new Error(`${method} ${p}: ${r.status} ${text.slice(0, 300)}`);
    return JSON.parse(text);
  };
  let machine: string | null = null;
  const rows: {
    name: string;
    heldOut: boolean;
    verified: boolean;
    falseSuccess: boolean;
    status: string;
    credits: number;
    s: number;
    steps: number;
    why: string;
  }[] = [];
  try {
    const created = await req("POST", "/v1/machines", {
      display_name: "agent-tasks",
      screen_width: 1280,
      screen_height: 720,
    });
    machine = created.machine.id as string;
    for (;;) {
      const m = await req("GET", `/v1/machines/${machine}`);
      if (m.status === "running") break;
      if (m.status === "error") throw new Error(`machine failed: ${JSON.stringify(m)}`);
      await new Promise((r) => setTimeout(r, 500));
    }
    const calls: MachineCalls = {
      sh: async (command) => {
        const r = await req("POST", `/v1/machines/${machine}/terminal`, { command, timeout_ms: 20_000 });
        return String(r.result?.output ?? "");
      },
      action: async (command, parameters) => {
        await req("POST", `/v1/machines/${machine}/actions`, { command, parameters, include_screenshot: false });
      },
    };
    const files = async (p: string) => {
      try {
        const r = await req("POST", `/v1/machines/${machine}/files/read`, { parameters: { path: p } });
        return (r.result?.content as string) ?? null;
      } catch {
        return null;
      }
    };
    console.log(`\n== agent tasks: ${tasks.length} tasks, managed local engine, one 1280x720 desktop ==`);
    for (const t of tasks) {
      hits.set(t.name, []);
      await req("POST", `/v1/machines/${machine}/browser/navigate`, { parameters: { url: `${base}/${t.name}/start` } });
      await new Promise((r) => setTimeout(r, 800));
      if (t.setup) await t.setup(calls);
      hits.set(t.name, []); // the page load itself is not the task's doing
      const t0 = performance.now();
      const run = await req("POST", "/v1/runs", {
        machine_id: machine,
        task: t.task,
        max_steps: 30,
        deadline_seconds: 240,
        on_awaiting_human: "fail",
      });
      let r = run;
      while (!["succeeded", "failed", "cancelled", "timed_out", "awaiting_human"].includes(r.status)) {
        await new Promise((res) => setTimeout(res, 300));
        r = await req("GET", `/v1/runs/${run.id}`);
      }
      const secs = (performance.now() - t0) / 1000;
      if (r.status === "awaiting_human") await req("POST", `/v1/runs/${run.id}/cancel`).catch(() => {});
      const h = hits.get(t.name) ?? [];
      const stateOk = t.impossible
        ? nothingAccepted(h) && (await t.verify(h, files))
        : (await t.verify(h, files)) && (!t.verifyMachine || (await t.verifyMachine(calls)));
      const succeeded = r.status === "succeeded";
      const verified = t.impossible ? stateOk && !succeeded : stateOk;
      const falseSuccess = succeeded && (t.impossible || !stateOk);
      const why = (r.error?.message as string | undefined) ?? "";
      const cleanup = t.cleanup?.(calls).catch((e) => console.log(`       cleanup: ${e}`));
      rows.push({
        name: t.name,
        heldOut: HELD_OUT.includes(t),
        verified,
        falseSuccess,
        status: r.status,
        credits: r.usage?.credits_charged ?? 0,
        s: secs,
        steps: r.step_count ?? 0,
        why,
      });
      console.log(
        `${verified ? "ok  " : "MISS"} ${falseSuccess ? "FALSE-SUCCESS " : ""}${t.name.padEnd(18)} ${r.status.padEnd(10)} steps ${String(r.step_count ?? 0).padStart(2)}  ${String(r.usage?.credits_charged ?? 0).padStart(3)} credits  ${secs.toFixed(1).padStart(5)} s  ${t.covers}${!verified && why ? `\n       (${why.slice(0, 200)})` : ""}`,
      );
      if (verbose && !verified) {
        // the screen the run ended on, for a look
        const shot = await fetch(`${svc.url}/v1/machines/${machine}/screenshot`, {
          headers: { "X-API-Key": svc.account.live_key, Accept: "image/png" },
        });
        if (shot.ok) {
          const file = path.join(os.tmpdir(), `agent-task-${t.name}.png`);
          await writeFile(file, Buffer.from(await shot.arrayBuffer()));
          console.log(`       screen: ${file}`);
        }
        const steps = await svc.db.db.runStep.findMany({ where: { runId: run.id }, orderBy: { step: "asc" } });
        for (const st of steps)
          console.log(`       ${st.step} ${JSON.stringify(st.actions)} ${st.reasoning ?? ""}`.slice(0, 400));
      }
      await cleanup;
    }
  } finally {
    if (machine) await req("DELETE", `/v1/machines/${machine}`).catch(() => {});
    await svc.stop();
    server.close();
    await inet.close();
    await rm(root, { recursive: true, force: true });
  }
  console.log("");
  for (const [label, part] of [
    ["tuning set", rows.filter((r) => !r.heldOut)],
    ["held-out set", rows.filter((r) => r.heldOut)],
  ] as const) {
    if (part.length === 0) continue;
    const n = part.length;
    const ok = part.filter((r) => r.verified).length;
    const fs = part.filter((r) => r.falseSuccess).length;
    const credits = part.reduce((a, r) => a + r.credits, 0);
    const secs = part.reduce((a, r) => a + r.s, 0);
    const imp = part.filter((r) => ALL.find((t) => t.name === r.name)?.impossible);
    const refused = imp.filter((r) => r.verified).length;
    console.log(
      `${label}: tasks verified ${ok}/${n} (${((100 * ok) / Math.max(1, n)).toFixed(1)}%), false successes ${fs}, impossible refused ${refused}/${imp.length}, credits per task ${(credits / Math.max(1, n)).toFixed(1)}, time per task ${(secs / Math.max(1, n)).toFixed(1)} s`,
    );
  }
}

/** An impossible task's state: nothing the site accepted (a rejected submit is not an acceptance). */
function nothingAccepted(hits: Hit[]): boolean {
  return !hits.some((h) => h.method === "POST" && !/\/reject[^/]*$/.test(h.path));
}

if (import.meta.url === `file://${process.argv[1]}`) {
  await benchAgentTasks();
  process.exit(process.exitCode ?? 0);
}
