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

export type RelationKind = "next-to" | "left-of" | "right-of" | "below" | "above" | "labelled";

export interface ParsedDescription {
  /** readings of the text to look for, most likely first (role words stripped, then kept) */
  texts: string[];
  /** the text was quoted: match it as given */
  quoted: boolean;
  role: Role | null;
  relation: { kind: RelationKind; anchor: string } | null;
  /** 1-based; -1 means the last one */
  ordinal: number | null;
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
  last: -1,
};

const RELATIONS: [RegExp, RelationKind][] = [
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

/** Strips a leading verb, leading articles and framing words, and trailing location phrases. */
function clean(s: string): string {
  let t = s
    .replace(/\s+/g, " ")
    .trim()
    .replace(/[.,;:!?]+$/g, "")
    .trim();
  t = t.replace(LEADING_VERB, "");
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
    lower = lower.replace(/\b(first|1st|second|2nd|third|3rd|fourth|4th|fifth|5th|last)\b/, (m) => {
      ordinal = ORDINALS[m] ?? null;
      return " ";
    });

  let relation: ParsedDescription["relation"] = null;
  let head = lower;
  for (const [re, kind] of RELATIONS) {
    const m = re.exec(lower);
    if (!m) continue;
    const before = lower.slice(0, m.index);
    const after = lower.slice(m.index + m[0].length);
    const anchorRaw = clean(after);
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
    return { texts: [relation.anchor], quoted: quotes.length > 0, role, relation, ordinal };
  }
  const quotedHead = firstPlaceholder(head);
  if (quotedHead) return { texts: [quotedHead], quoted: true, role, relation, ordinal };
  if (relation) {
    // with a relation the head only names the kind of element, or a text to find near the anchor
    const t = clean(rest);
    return { texts: t ? [restoreCase(original, t)] : [], quoted: false, role, relation, ordinal };
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
  const texts = uniq(variants.map((v) => restoreCase(original, v)));
  return { texts, quoted: false, role, relation, ordinal };
}
