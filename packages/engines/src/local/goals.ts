// Goal phrasings: what people write instead of scripts ("Sign up with the name Ada Lovelace and email
// ada@example.com", "Ada in Name, ada@x.org in Email and Hi in Message", "Change the quantity to 3",
// "Choose Team as the plan", "Scroll down until Pricing shows", "Wait for the report to finish
// generating", "Use the terminal to create notes.txt containing hello", "Open a terminal") turned into
// the interpreter's steps. Pure: no screen, no state. See docs/engines-local.md.
import type { Step } from "./interpreter.ts";

/** Field words people use, longest first, with the labels forms show for them. */
const FIELD_WORDS: [string, string[]][] = [
  ["email address", ["email", "e-mail"]],
  ["e-mail address", ["email", "e-mail"]],
  ["phone number", ["phone", "telephone", "mobile"]],
  ["postal code", ["postal code", "zip"]],
  ["zip code", ["zip", "postal code"]],
  ["card number", ["card number"]],
  ["street address", ["street address", "street", "address"]],
  ["street", ["street address", "street", "address"]],
  ["time zone", ["time zone", "timezone"]],
  ["timezone", ["time zone", "timezone"]],
  ["first name", ["first name"]],
  ["last name", ["last name", "surname"]],
  ["full name", ["full name", "name"]],
  ["user name", ["username", "user name"]],
  ["username", ["username", "user name", "login"]],
  ["password", ["password"]],
  ["email", ["email", "e-mail"]],
  ["e-mail", ["email", "e-mail"]],
  ["name", ["name", "full name"]],
  ["phone", ["phone", "telephone", "mobile"]],
  ["telephone", ["telephone", "phone"]],
  ["mobile", ["mobile", "phone"]],
  ["company", ["company", "organization", "organisation"]],
  ["organization", ["organization", "company"]],
  ["message", ["message", "comment", "comments"]],
  ["comment", ["comment", "comments", "message"]],
  ["comments", ["comments", "comment", "message"]],
  ["subject", ["subject"]],
  ["title", ["title"]],
  ["address", ["address"]],
  ["city", ["city"]],
  ["country", ["country"]],
  ["zip", ["zip", "postal code"]],
  ["quantity", ["quantity", "qty", "amount"]],
  ["qty", ["qty", "quantity"]],
  ["amount", ["amount", "quantity"]],
  ["age", ["age"]],
  ["website", ["website", "url"]],
  ["url", ["url", "website"]],
  ["notes", ["notes", "note"]],
  ["note", ["note", "notes"]],
  ["description", ["description"]],
  ["search", ["search"]],
  ["query", ["query", "search"]],
  ["date", ["date"]],
];

const SECRET = /\b(?:password|passcode|pin|secret|passphrase)\b/i;

export interface FieldValue {
  /** what the user called the field ("email") */
  field: string;
  /** labels to look for, most likely first ("email", "e-mail") */
  labels: string[];
  value: string;
}

const QUOTED = /"[^"\n]*"|“[^”\n]*”|‘[^’\n]*’|`[^`\n]*`|(?<![\p{L}\p{N}])'[^'\n]*'(?![\p{L}\p{N}])/gu;

function unquoteAll(s: string): string {
  const t = s.trim();
  const m = /^(?:"([^"]*)"|'([^']*)'|“([^”]*)”|‘([^’]*)’|`([^`]*)`)$/.exec(t);
  return m ? (m[1] ?? m[2] ?? m[3] ?? m[4] ?? m[5] ?? "") : t;
}

/** Masks quoted spans so separators inside them are not split; `unmask` restores them. */
function mask(s: string): { text: string; unmask: (t: string) => string } {
  const q: string[] = [];
  const text = s.replace(QUOTED, (m) => {
    q.push(m);
    return `\uE001${q.length - 1}\uE001`;
  });
  return { text, unmask: (t) => t.replace(/\uE001(\d+)\uE001/g, (_, n: string) => q[Number(n)] ?? "") };
}

function fieldWord(s: string): { word: string; labels: string[]; rest: string } | null {
  const t = s.replace(/^(?:the|a|an|my|your|our)\s+/i, "");
  for (const [w, labels] of FIELD_WORDS) {
    const m = new RegExp(`^${w.replace(/[-]/g, "[- ]?")}(?:\\s+(?:field|box|input))?(?=$|[\\s:=])`, "i").exec(t);
    if (m) return { word: w, labels, rest: t.slice(m[0].length) };
  }
  return null;
}

/** Labels for a field the user named ("the Email field" -> ["Email"], "email" -> ["email", "e-mail"]). */
export function labelsFor(field: string): string[] {
  const f = field
    .trim()
    .replace(/^(?:the|a|an|my|your)\s+/i, "")
    .replace(/\s+(?:field|box|input|text box|textbox|area)$/i, "")
    .trim();
  const known = FIELD_WORDS.find(([w]) => w === f.toLowerCase());
  return known ? [f, ...known[1].filter((l) => l.toLowerCase() !== f.toLowerCase())] : [f];
}

/**
 * One pair: "Ada in Name", "'x' into the Email field", "ada@x.org as the email", "Name: Ada",
 * "email ada@x.org", "the name Ada Lovelace" (field word first: only known field words).
 */
export function parsePair(chunk: string, opts: { fieldFirst: boolean }): FieldValue | null {
  const c = chunk.trim().replace(/[.]+$/, "");
  if (!c) return null;
  // "Name: Ada" (a label of at most three words, not a web address's scheme)
  const colon = /^(?:the\s+)?([\p{L}][\p{L}-]*(?: [\p{L}][\p{L}-]*){0,2})\s*[:=]\s*(?!\/\/)(.+)$/u.exec(c);
  if (colon?.[1] && colon[2] && (fieldWord(colon[1]) || /^\p{Lu}/u.test(colon[1])))
    return pair(colon[1], unquoteAll(colon[2]));
  const into = /^(.+?)\s+(?:in|into|inside|for)\s+(?:the\s+)?(.+?)(?:\s+(?:field|box|input|text box))?$/i.exec(c);
  if (into?.[1] && into[2] && (isQuoted(into[1]) || fieldWord(into[2]) || /^\p{Lu}/u.test(into[2])))
    return pair(into[2], unquoteAll(into[1]));
  const as = /^(.+?)\s+as\s+(?:the\s+|my\s+|your\s+)?(.+)$/i.exec(c);
  if (as?.[1] && as[2] && fieldWord(as[2])?.rest === "") return pair(as[2], unquoteAll(as[1]));
  if (opts.fieldFirst) {
    const fw = fieldWord(c);
    if (fw) {
      const v = fw.rest.replace(/^\s*(?:of|as|is|being|set to|to|=|:)?\s*/i, "").trim();
      if (v) return { field: fw.word, labels: fw.labels, value: unquoteAll(v) };
    }
  }
  return null;
}

function isQuoted(s: string): boolean {
  return unquoteAll(s) !== s.trim();
}

function pair(field: string, value: string): FieldValue {
  const f = field.trim().replace(/^(?:the|my|your)\s+/i, "");
  return { field: f, labels: labelsFor(f), value };
}

/**
 * A list of pairs separated by commas and "and" (never splitting inside quotes or inside a value: a
 * chunk that is not a pair belongs to the previous value, so "message Salt and pepper" stays whole).
 */
export function parsePairList(list: string, opts: { fieldFirst: boolean; implied?: string }): FieldValue[] | null {
  const { text, unmask } = mask(list.trim());
  const pieces = text.split(/(\s*,\s*(?:and\s+)?|\s+and\s+)/i);
  const chunks: string[] = [];
  for (let i = 0; i < pieces.length; i += 2) {
    const piece = unmask(pieces[i] ?? "");
    if (chunks.length === 0 || parsePair(piece, opts) || (opts.implied && EMAIL.test(piece.trim()))) chunks.push(piece);
    else chunks[chunks.length - 1] += `${pieces[i - 1] ?? " "}${piece}`;
  }
  const out: FieldValue[] = [];
  for (const [k, ch] of chunks.entries()) {
    let p = parsePair(ch, opts);
    // in a goal, a value without its field word: an address is the email, the first one what the goal
    // implies ("create an account for Ada Lovelace": the name; "sign in as bob": the username)
    if (!p && opts.implied && EMAIL.test(ch.trim())) p = pair("email", unquoteAll(ch.trim()));
    else if (!p && opts.implied && k === 0 && ch.trim()) p = pair(opts.implied, unquoteAll(ch.trim()));
    if (!p?.value) return null;
    out.push(p);
  }
  return out.length ? out : null;
}

const EMAIL = /^[^\s@]+@[^\s@]+\.[^\s@]+$/;

const SUBMIT_FOR: [RegExp, string[]][] = [
  [
    /^(?:sign\s*up|register|create (?:an |a new |my )?account|join)/i,
    ["Sign up", "Register", "Create account", "Submit"],
  ],
  [/^(?:log\s*in|login|sign\s*in)/i, ["Log in", "Sign in", "Login", "Submit"]],
  [/^(?:subscribe)/i, ["Subscribe", "Sign up", "Submit"]],
  [/^(?:send|contact)/i, ["Send", "Submit"]],
  [/^(?:submit)/i, ["Submit", "Send"]],
  [/^(?:search)/i, ["Search"]],
];

/** what a form's button says when the user only wrote "and submit" */
const GENERIC_SUBMIT = ["Submit", "Send", "Save", "Register", "Sign up", "Continue", "Apply", "Update", "OK"];

function typeSteps(pairs: FieldValue[]): Step[] {
  return pairs.map((p) => ({
    kind: "type",
    text: p.value,
    target: p.labels[0] ?? p.field,
    alts: p.labels.slice(1),
    secret: SECRET.test(p.field),
    exact: true,
  }));
}

function submitStep(labels: string[]): Step {
  // a button: the page's title (in the browser's tab strip, a heading) may say the same words
  const buttons = labels.map((l) => `${l} button`);
  return {
    kind: "click",
    target: buttons[0] ?? "Submit button",
    alts: buttons.slice(1),
    button: "left",
    clicks: 1,
    holdKeys: [],
    submit: true,
  };
}

/** "and submit" / "then send it" at the end of a list: the list without it, and whether it was there. */
function trailingSubmit(s: string): { rest: string; submit: boolean } {
  const m = /\s*(?:,\s*)?(?:and\s+|then\s+)?(?:submit|send)(?:\s+(?:it|the form|this|the message))?$/i.exec(s);
  return m ? { rest: s.slice(0, m.index), submit: true } : { rest: s, submit: false };
}

const GOAL_FORM =
  /^(sign\s*up|register|create (?:an |a new |my )?account|join|log\s*in|login|sign\s*in|subscribe|send (?:a |the )?(?:message|form)|contact (?:us|support|sales)|submit (?:the |this )?form|submit|fill (?:in |out )?(?:the |this )?(?:form|fields|details)|fill (?:in|out)|complete (?:the |this )?form)\b\s*(?:(?:with|using|as|for|by entering|by typing|entering|:)\s+)?(.+)$/i;

/** " with the password x" inside a goal's list separates pairs like a comma (only before a field word). */
const WITH_FIELD = new RegExp(
  `\\s+(?:with|using|and)\\s+(?=(?:the\\s+|my\\s+|a\\s+)?(?:${FIELD_WORDS.map(([w]) => w.replace(/[-]/g, "[- ]?")).join("|")})\\b)`,
  "gi",
);

/**
 * Goal phrasings into steps; null when the text is not one (the interpreter then reads it as a
 * script step).
 */
export function parseGoal(raw: string): Step[] | null {
  const s = raw.trim().replace(/^please\s+/i, "");

  // sign up / log in / fill the form / send a message with field-value pairs
  const form = GOAL_FORM.exec(s);
  if (form?.[1] && form[2]) {
    const verb = form[1];
    const { rest, submit } = trailingSubmit(form[2]);
    const login = /^(?:log\s*in|login|sign\s*in)/i.test(verb);
    const signup = /^(?:sign\s*up|register|create|join)/i.test(verb);
    const list = rest
      // "the shipping form: street ...", "the details: ..."
      .replace(
        /^(?:the\s+|this\s+|my\s+)?(?:[\p{L}-]+\s+){0,3}?(?:form|details|values|fields)\s*(?::|with\b)?\s*/iu,
        "",
      )
      .replace(WITH_FIELD, ", ");
    const pairs = parsePairList(list, {
      fieldFirst: true,
      implied: login ? "username" : signup ? "name" : undefined,
    });
    if (pairs) {
      const labels = SUBMIT_FOR.find(([re]) => re.test(verb))?.[1];
      const fillOnly = /^(?:fill|complete)/i.test(verb);
      const steps = typeSteps(pairs);
      if (labels && !fillOnly) steps.push(submitStep(labels));
      else if (submit) steps.push(submitStep(GENERIC_SUBMIT));
      return steps;
    }
  }

  // a bare list: "Ada in Name, ada@x.org in Email and Hi in Message" / "type A in Name, B in Email"
  // / "Name: Ada, Email: ada@x.org"
  const bare = /^(?:(?:type|enter|put|write|fill in|input)\s+)?(.+)$/i.exec(s);
  if (bare?.[1]) {
    const hasVerb = bare[1] !== s;
    const { rest, submit } = trailingSubmit(bare[1]);
    const pairs = parsePairList(rest, { fieldFirst: false });
    if (pairs && (pairs.length >= 2 || (!hasVerb && /[:=]/.test(rest)))) {
      const steps = typeSteps(pairs);
      if (submit) steps.push(submitStep(GENERIC_SUBMIT));
      return steps;
    }
  }

  // search (the docs) for X: the search field, then Enter
  const search = /^(?:search|look)\s+(?:(?:the|this)\s+[\w -]{1,30}?\s+)?(?:up\s+)?for\s+(.+)$/i.exec(s);
  if (search?.[1])
    return [
      { kind: "type", text: unquoteAll(search[1]), target: "Search", alts: ["Search box", "Find"] },
      { kind: "keys", keys: ["enter"], combo: false, repeat: 1 },
    ];

  // change / set / update X to Y: replace the field's content
  const set = /^(?:change|set|update|make)\s+(?:the\s+|my\s+)?(.+?)\s+(?:to|=)\s+(.+)$/i.exec(s);
  if (set?.[1] && set[2]) {
    const labels = labelsFor(set[1]);
    return [
      {
        kind: "type",
        text: unquoteAll(set[2]),
        target: labels[0] ?? set[1],
        alts: labels.slice(1),
        replace: true,
        secret: SECRET.test(set[1]),
      },
    ];
  }

  // choose / select / pick X as (the) Y, X for Y, the X plan
  const chooseAs =
    /^(?:choose|select|pick|opt for|go with)\s+(.+?)\s+(?:as|for)\s+(?:the\s+|my\s+|your\s+)?(.+)$/i.exec(s);
  if (chooseAs?.[1] && chooseAs[2])
    return [{ kind: "choose", option: unquoteAll(chooseAs[1]), group: chooseAs[2].trim() }];
  const chooseKind =
    /^(?:choose|select|pick|opt for|go with)\s+(?:the\s+)?(.+?)\s+(plan|option|tier|format|size|colou?r|theme|language|shipping|delivery|payment method|method)$/i.exec(
      s,
    );
  if (chooseKind?.[1] && chooseKind[2])
    return [{ kind: "choose", option: unquoteAll(chooseKind[1]), group: chooseKind[2] }];

  // scrolling to an edge or until something shows
  const edge =
    /^scroll\s+(?:(?:all the way|the page|down|up)\s+)*(?:to|until you reach)\s+(?:the\s+)?(?:very\s+)?(top|bottom|end|start|beginning)(?:\s+of\s+(?:the\s+)?(?:page|list|screen|document))?$/i.exec(
      s,
    );
  if (edge?.[1]) {
    const up = /top|start|beginning/i.test(edge[1]);
    return [{ kind: "scroll", direction: up ? "up" : "down", amount: 25, target: null, anchor: "center" }];
  }
  const until =
    /^(?:keep\s+)?scroll(?:ing)?\s+(?:the\s+page\s+)?(up|down)?\s*(?:until|till|to|untill)\s+(?:you\s+(?:can\s+)?(?:see|find|spot|reach|get\s+to)\s+|you\s+reach\s+)?(?:the\s+)?(.+?)(?:\s+(?:is\s+visible|shows(?: up)?|appears|is shown|comes into view|section|is on (?:the )?screen))?$/i.exec(
      s,
    );
  if (until?.[2]) {
    return [
      { kind: "scroll-until", text: unquoteAll(until[2]), direction: until[1]?.toLowerCase() === "up" ? "up" : "down" },
    ];
  }

  // waiting for something to finish (not for its literal text)
  const finish =
    /^wait\s+(?:until|for|till|while)\s+(?:the\s+)?(.+?)\s+(?:to\s+)?(?:(?:finish(?:es|ed)?|complete[sd]?|is\s+(?:done|finished|complete|completed|ready|generated|loaded)|to\s+be\s+(?:done|ready|finished|generated|loaded)|loads?|is\s+loading|ends?|stops?)(?:\s+\w+ing)?|(?:is\s+)?(?:generating|loading|processing|running|uploading|downloading)|to\s+(?:finish|complete))$/i.exec(
      s,
    );
  if (finish?.[1]) {
    const subj = finish[1].trim().replace(/(?:'s|’s)$/i, "");
    return [{ kind: "wait-finish", subject: /^(?:it|that|this|everything)$/i.test(subj) ? "work" : subj }];
  }
  const itDone =
    /^wait\s+(?:until|till|for|while)\s+(it|that|this|everything|the\s+.+?)(?:'s|’s|\s+is|\s+are|\s+has|\s+have)\s+(?:been\s+)?(?:done|finished|complete|completed|ready|over|through)$/i.exec(
      s,
    );
  if (itDone?.[1]) {
    const subj = itDone[1].replace(/^the\s+/i, "").trim();
    return [{ kind: "wait-finish", subject: /^(?:it|that|this|everything)$/i.test(subj) ? "work" : subj }];
  }

  // the terminal
  const term =
    /^(?:use|open|in|with|using)\s+(?:a\s+|the\s+)?terminal(?:\s+window)?\s*(?:,\s*|\s+)(?:to\s+|and\s+)?(.+)$/i.exec(
      s,
    );
  if (term?.[1]) {
    const cmd = shellCommand(term[1]);
    if (!cmd) return null;
    return [
      { kind: "open-app", app: "terminal" },
      { kind: "type", text: cmd, target: null },
      { kind: "keys", keys: ["enter"], combo: false, repeat: 1 },
    ];
  }
  const app =
    /^(?:open|launch|start|run)\s+(?:a\s+|the\s+|an\s+)?(?:new\s+)?(terminal|terminal window|file manager|files app|files|text editor|editor)$/i.exec(
      s,
    );
  if (app?.[1]) {
    const a = app[1].toLowerCase();
    return [
      {
        kind: "open-app",
        app: a.startsWith("terminal") ? "terminal" : a.includes("editor") ? "text editor" : "file manager",
      },
    ];
  }
  return null;
}

/** A plain-language terminal task as a shell command; null when it is not one of the known forms. */
export function shellCommand(task: string): string | null {
  const t = task.trim().replace(/[.]+$/, "");
  const q = (v: string) => `'${v.replace(/'/g, `'\\''`)}'`;
  const create =
    /^(?:create|make|write)\s+(?:a\s+)?(?:new\s+)?(?:file\s+)?(?:called\s+|named\s+)?(\S+?)\s+(?:containing|with(?:\s+the)?(?:\s+(?:text|content|contents|line))?|that\s+(?:contains|says))\s+(.+)$/i.exec(
      t,
    );
  if (create?.[1] && create[2]) return `printf '%s\\n' ${q(unquoteAll(create[2]))} > ${q(unquoteAll(create[1]))}`;
  const write =
    /^(?:write|put|save)\s+(.+?)\s+(?:in|into|to)\s+(?:a\s+)?(?:file\s+)?(?:called\s+|named\s+)?(\S+)$/i.exec(t);
  if (write?.[1] && write[2]) return `printf '%s\\n' ${q(unquoteAll(write[1]))} > ${q(unquoteAll(write[2]))}`;
  const mkdir = /^(?:create|make)\s+(?:a\s+)?(?:new\s+)?(?:directory|folder)\s+(?:called\s+|named\s+)?(\S+)$/i.exec(t);
  if (mkdir?.[1]) return `mkdir -p ${q(unquoteAll(mkdir[1]))}`;
  const touch = /^(?:create|make)\s+(?:an?\s+)?(?:empty\s+)?file\s+(?:called\s+|named\s+)?(\S+)$/i.exec(t);
  if (touch?.[1]) return `touch ${q(unquoteAll(touch[1]))}`;
  const run = /^(?:run|execute|type)\s+(?:the\s+)?(?:command\s+)?(.+)$/i.exec(t);
  if (run?.[1]) return unquoteAll(run[1]);
  return null;
}
