// Parsing of a plain-language element description ("the Save button", "link 'Pricing'",
// "the checkbox next to Remember me", "field labelled Email") into the text to look for, the kind
// of element (role), an optional relation to an anchor text, and an optional ordinal.

export type Role =
  | "button"
  | "link"
  | "field"
  | "checkbox"
  | "radio"
  | "tab"
  | "menu"
  | "dropdown"
  | "icon"
  | "heading"
  | "text";

export type RelationKind = "next-to" | "left-of" | "right-of" | "below" | "above" | "labelled" | "within" | "row";

export interface ParsedDescription {
  /** readings of the text to look for, most likely first (role words stripped, then kept) */
  texts: string[];
  /** the text was quoted: match it as given */
  quoted: boolean;
  role: Role | null;
  relation: { kind: RelationKind; anchor: string } | null;
  /** 1-based; -1 means the last one */
  ordinal: number | null;
  /** a part of the screen the element must be in ("in the top navigation": top) */
  area?: "top" | "bottom" | "left" | "right" | null;
}

const ROLE_WORDS: [RegExp, Role][] = [
  [/\b(?:check ?box(?:es)?|tick ?box)\b/, "checkbox"],
  [/\bradio(?: button)?\b/, "radio"],
  [/\b(?:(?:search|text|input|entry) ?(?:box|field|bar|area)|textarea|input|field|entry|bar|box)\b/, "field"],
  [/\b(?:drop ?down|select ?box|select|combo ?box|picker)\b/, "dropdown"],
  [/\b(?:menu ?item|menu ?entry|menu ?option|menu)\b/, "menu"],
  [/\b(?:hyper ?link|link)\b/, "link"],
  [/\b(?:tab)\b/, "tab"],
  [/\b(?:button|btn)\b/, "button"],
  [/\b(?:icon)\b/, "icon"],
  [/\b(?:heading|title|header)\b/, "heading"],
  [/\b(?:cell|row|column|text|label|message|caption|word|words|option|item|entry|value)\b/, "text"],
];

const ORDINALS: Record<string, number> = {
  first: 1,
  "1st": 1,
  second: 2,
  "2nd": 2,
  third: 3,
  "3rd": 3,
  fourth: 4,
  "4th": 4,
  fifth: 5,
  "5th": 5,
  sixth: 6,
  seventh: 7,
  eighth: 8,
  ninth: 9,
  tenth: 10,
  last: -1,
};

const RELATIONS: [RegExp, RelationKind][] = [
  // "in the Invoices table", "inside the Billing section": within the part titled by the anchor
  [
    /\b(?:in|inside|within)\s+(?:the\s+)?(?=\S+(?:\s+\S+)?\s+(?:table|section|card|panel|dialog|list|group|pane|box|form|area|column|tab)\b)/,
    "within",
  ],
  [/\b(?:next to|beside|near|nearest to|close to|adjacent to|alongside)\b/, "next-to"],
  [/\b(?:(?:to the |on the )?left of)\b/, "left-of"],
  [/\b(?:(?:to the |on the )?right of)\b/, "right-of"],
  [/\b(?:below|under|underneath|beneath)\b/, "below"],
  [/\b(?:above)\b/, "above"],
  [/\b(?:labell?ed(?: as| with)?|with (?:the )?label|for|titled|marked)\b/, "labelled"],
];

const LEADING_VERB =
  /^(?:please\s+)?(?:click(?:ing)?(?: on)?|double[- ]click(?: on)?|right[- ]click(?: on)?|tap(?: on)?|press|hit|select|choose|find|locate|point to|go to|open)\s+/;
const LEADING =
  /^(?:the|a|an|this|that|on|at|with (?:the )?(?:text|label|caption)|with|that says|which says|saying|named|called|reading|labell?ed|titled|showing|displaying)(?:\s+|$)/;
const TRAILING =
  /(?:^|\s+)(?:that says|which says|saying|named|called|with (?:the )?text|on (?:the )?(?:page|screen|left|right|top|bottom)|at (?:the )?(?:top|bottom|left|right)(?: of (?:the )?(?:page|screen))?|in (?:the )?(?:sidebar|side bar|top bar|toolbar|tool bar|header|footer|navigation|nav|nav bar|navbar|menu|sidebar menu|dropdown|drop-down|dialog|modal|popup|form|table|list|panel|page|window|top menu|main menu|context menu)(?: menu)?)$/;

const LOOKS =
  /\b(?:blue|red|green|yellow|orange|purple|violet|pink|grey|gray|black|white|dark|light|big|bigger|large|larger|small|smaller|tiny|huge|primary|secondary|main|highlighted|bold|round|rounded|square|colou?red)\b/g;

const AREA =
  /\s+(?:in|inside|within|on|at|from)\s+(?:the\s+)?(top|upper|bottom|lower|left|right|side|main|primary|header|page)?\s*(navigation(?: bar| menu)?|nav(?: ?bar| menu)?|menu ?bar|header|toolbar|tool bar|top bar|sidebar|side bar|side menu|footer|bar|panel|menu)(?:\s+of\s+the\s+(?:page|screen|window))?$/;

/** A part of the screen named at the end of a description, and the description without it. */
export function parseArea(s: string): { area: "top" | "bottom" | "left" | "right" | null; rest: string } {
  const m = AREA.exec(s);
  if (!m) return { area: null, rest: s };
  const side = m[1] ?? "";
  const what = m[2] ?? "";
  let area: "top" | "bottom" | "left" | "right" | null = null;
  if (/bottom|lower/.test(side) || /footer/.test(what)) area = "bottom";
  else if (/left/.test(side) || /side/.test(side) || /side/.test(what)) area = "left";
  else if (/right/.test(side)) area = "right";
  else if (/top|upper|header/.test(side) || /nav|header|toolbar|tool bar|top bar|menu ?bar/.test(what)) area = "top";
  if (!area) return { area: null, rest: s };
  return { area, rest: s.slice(0, m.index) };
}

/** Strips a leading verb, leading articles and framing words, and trailing location phrases. */
function clean(s: string, keepVerb = false): string {
  let t = s
    .replace(/\s+/g, " ")
    .trim()
    .replace(/[.,;:!?]+$/g, "")
    .trim();
  if (!keepVerb) t = t.replace(LEADING_VERB, "");
  for (let i = 0; i < 6; i++) {
    const before = t;
    t = t.replace(LEADING, "").replace(TRAILING, "").trim();
    if (t === before) break;
  }
  return t;
}

/** Text between matching quotes: 'x', "x", “x”, ‘x’, `x`. An apostrophe inside a word is not a quote. */
export function extractQuoted(s: string): string[] {
  const out: string[] = [];
  const re = /(?:^|[\s(:,=])(?:"([^"]+)"|'([^']+)'|“([^”]+)”|‘([^’]+)’|`([^`]+)`)(?=$|[\s).,:;!?])/g;
  for (const m of s.matchAll(re)) {
    const t = m[1] ?? m[2] ?? m[3] ?? m[4] ?? m[5];
    if (t?.trim()) out.push(t.trim());
  }
  return out;
}

/**
 * The role a phrase names. Role words at the end ("Copy link button", "Add item option") or the
 * start ("link Pricing") are the role; elsewhere they are likely part of the label, so a role word
 * inside the phrase is used only when none sits at either end.
 */
function findRole(s: string): { role: Role | null; rest: string; compound: boolean } {
  const t = s.replace(/\s+/g, " ").trim();
  const hit = (m: RegExpExecArray, role: Role) => ({
    role,
    rest: `${t.slice(0, m.index)} ${t.slice(m.index + m[0].length)}`,
    compound: /\s/.test(m[0].trim()),
  });
  for (const [re, role] of ROLE_WORDS) {
    const m = new RegExp(`(?:^|\\s)(?:${re.source})$`).exec(t);
    if (m) return hit(m, role);
  }
  for (const [re, role] of ROLE_WORDS) {
    const m = new RegExp(`^(?:the |a |an )?(?:${re.source})(?:\\s|$)`).exec(t);
    if (m) return hit(m, role);
  }
  for (const [re, role] of ROLE_WORDS) {
    const m = re.exec(t);
    if (m) return hit(m, role);
  }
  return { role: null, rest: t, compound: false };
}

/** The caller's casing for a lowercased span, where it still appears in the original. */
function restoreCase(original: string, lowered: string): string {
  const idx = original.toLowerCase().indexOf(lowered);
  return idx >= 0 ? original.slice(idx, idx + lowered.length) : lowered;
}

function uniq(xs: string[]): string[] {
  const seen = new Set<string>();
  return xs.filter((x) => {
    const k = x.toLowerCase();
    if (!x || seen.has(k)) return false;
    seen.add(k);
    return true;
  });
}

/**
 * Parses a description. With ordinals off, words like "first" stay part of the text ("First name"):
 * grounding tries that literal reading first and falls back to the ordinal one.
 */
export function parseDescription(description: string, opts: { ordinals?: boolean } = {}): ParsedDescription {
  const original = description.trim().replace(/\s+/g, " ");
  const quotes = extractQuoted(original);
  let lower = original.toLowerCase();
  // quoted segments become placeholders so relation and role parsing does not look inside them
  const placeholders: string[] = [];
  for (const q of quotes) {
    for (const v of [`"${q}"`, `'${q}'`, `“${q}”`, `‘${q}’`, `\`${q}\``]) {
      const i = lower.indexOf(v.toLowerCase());
      if (i >= 0) {
        lower = `${lower.slice(0, i)} \uE000${placeholders.length}\uE000 ${lower.slice(i + v.length)}`;
        placeholders.push(q);
        break;
      }
    }
  }
  const unplace = (s: string) => s.replace(/\uE000(\d+)\uE000/g, (_, n: string) => placeholders[Number(n)] ?? "");
  const firstPlaceholder = (s: string) => {
    const m = /\uE000(\d+)\uE000/.exec(s);
    return m ? (placeholders[Number(m[1])] ?? null) : null;
  };

  let ordinal: number | null = null;
  if (opts.ordinals !== false)
    lower = lower.replace(
      /\b(first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|last|\d{1,2}(?:st|nd|rd|th))\b/,
      (m) => {
        ordinal = ORDINALS[m] ?? (/^\d/.test(m) ? Number.parseInt(m, 10) : null);
        return " ";
      },
    );
  // "View on the row for ACME (under Pending orders)": the View in the row whose text is ACME; the
  // anchor keeps its own qualifiers (it is grounded as a description of its own)
  const inRow =
    /^(.+?)\s+(?:on|in|at|from|of)\s+(?:the\s+)?(?:row|line|entry|record)\s+(?:for|of|with|containing|that says)\s+(.+)$/.exec(
      lower,
    );
  if (inRow?.[1] && inRow[2]) {
    const headRole = findRole(inRow[1]);
    const t = clean(headRole.rest);
    const anchor = restoreCase(original, unplace(inRow[2].trim()));
    if (t)
      return {
        texts: [firstPlaceholder(inRow[1]) ?? restoreCase(original, unplace(t))],
        quoted: quotes.length > 0,
        role: headRole.role,
        relation: { kind: "row", anchor },
        ordinal,
        area: null,
      };
  }
  // "the row for ACME" / "the entry with Bob": the row's text is what to find
  lower = lower.replace(/\b(?:row|line|entry|record)\s+(?:for|of|with|containing|about|that says)\s+/, "row ");
  // "in the top navigation", "in the sidebar": a part of the screen
  const areaOf = parseArea(lower);
  const area = areaOf.area;
  lower = areaOf.rest;

  let relation: ParsedDescription["relation"] = null;
  let head = lower;
  for (const [re, kind] of RELATIONS) {
    const m = re.exec(lower);
    if (!m) continue;
    const before = lower.slice(0, m.index);
    const after = lower.slice(m.index + m[0].length);
    const anchorRaw =
      kind === "within"
        ? clean(
            after.replace(/\s+(?:table|section|card|panel|dialog|list|group|pane|box|form|area|column|tab)\b.*$/, ""),
          )
        : clean(after);
    if (!anchorRaw) continue;
    // "for"/"labelled" relate only when the head names a field-like element ("input for Email")
    if (kind === "labelled" && !findRole(before).role) continue;
    const quotedAnchor = firstPlaceholder(anchorRaw);
    const anchor = quotedAnchor ?? restoreCase(original, unplace(anchorRaw));
    relation = { kind, anchor: anchor.trim() };
    head = before;
    break;
  }

  const { role, rest, compound } = findRole(head);
  if (relation?.kind === "labelled") {
    // "the field labelled Email": the label is what to look for; the field is found from it
    return { texts: [relation.anchor], quoted: quotes.length > 0, role, relation, ordinal, area };
  }
  const quotedHead = firstPlaceholder(head);
  if (quotedHead) return { texts: [quotedHead], quoted: true, role, relation, ordinal, area };
  if (relation) {
    // with a relation the head only names the kind of element, or a text to find near the anchor
    const t = clean(rest);
    return { texts: t ? [restoreCase(original, t)] : [], quoted: false, role, relation, ordinal, area };
  }
  const variants: string[] = [clean(rest)];
  if (compound) {
    // "Search box" / "text field": also try with only the noun removed ("Search")
    variants.push(clean(head.replace(/\s*\b(?:box|field|bar|area)\b/, " ")));
  }
  variants.push(clean(head));
  // colour and size words describe looks the engine cannot check: also try without them
  const plain = clean(rest.replace(LOOKS, " "));
  if (plain && plain !== variants[0]) variants.push(plain);
  // a label that begins with a verb ("Choose Team", "Select all"): kept whole first when the caller
  // capitalised the verb, as labels are; otherwise tried last
  const withVerb = clean(rest, true);
  if (withVerb !== variants[0] && LEADING_VERB.test(withVerb)) {
    if (/^(?:the\s+|a\s+)?\p{Lu}/u.test(original.replace(/^(?:click(?: on)?|tap(?: on)?|press)\s+/i, "")))
      variants.unshift(withVerb);
    else variants.push(withVerb);
  }
  const texts = uniq(variants.map((v) => restoreCase(original, v)));
  return { texts, quoted: false, role, relation, ordinal, area };
}
