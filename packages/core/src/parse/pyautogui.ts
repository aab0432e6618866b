// POST /v1/parse: pyautogui scripts -> structured Actions (DECISIONS "Prediction" and "Precise
// answers"). A real tokenizer and recursive-descent parser for the subset of Python such scripts
// use; nothing is ever evaluated or executed.
//
// Understood:
// - statements separated by newlines or ";", comments, "\" line continuations, implicit
//   continuation inside brackets, CRLF line endings, a leading BOM, a common indentation of the
//   whole script (removed like textwrap.dedent).
// - `import m [as a], ...` and `from m import n [as a], ... | *` are accepted and ignored, except
//   that they bind names: `import pyautogui as pg` makes `pg.click` pyautogui's click, and
//   `from pyautogui import click` makes a bare `click(...)` work. `pyautogui.*` and `time.sleep`
//   work without imports. Names bound to anything else are unsupported calls.
// - calls `f(...)` / `m.f(...)` with positional and keyword arguments bound as Python binds them to
//   pyautogui's signatures (too many positionals, unknown or repeated keywords are unsupported);
// - literals only: ints (decimal, 0x, 0o, 0b, underscores), floats, unary +/- on numbers, strings
//   ('...', "...", triple-quoted, r/u prefixes, adjacent literals concatenated, Python escapes),
//   True/False/None, lists and tuples.
// - `DONE`, `FAIL`, `WAIT` as statements -> done, fail, wait 1 second.
// - `pyautogui.FAILSAFE = <bool>` and `pyautogui.PAUSE = <number>` are accepted and ignored
//   (settings of the local pyautogui runtime, common at the top of generated scripts).
// - A string literal alone as a statement (a docstring) is ignored.
// Everything else (variables, arithmetic like 1+2, subscripts, chained calls, attribute tricks such
// as __import__('os').system(...), f-strings, bytes, dicts, *args, control flow, def/class, other
// assignments, os.system, print, ...) is an unsupported statement. The body lines of an
// unsupported compound statement (if/for/while/def/with/try...) are unsupported with it.
// A lexical error (unterminated string, invalid character, unmatched bracket, bad escape) makes its
// whole logical line one unsupported statement; an unclosed bracket runs to the end of the script,
// as it does for Python. A name rebound by an unsupported statement (x = ..., def x, for x in,
// import/with ... as x) is no longer trusted: later calls through it are unsupported too.
//
// Calls and what they produce (coordinates must be integers >= 0; floats are truncated toward
// zero as pyautogui's int() does; with a screen, 0 <= x < width and 0 <= y < height):
// - click(x, y, clicks=, button=) / leftClick / rightClick / middleClick / doubleClick (clicks 2) /
//   tripleClick (3) -> click; x may be an (x, y) pair; a missing coordinate is the tracked pointer
//   position; button 'left'|'right'|'middle' ('primary'/'secondary' = left/right).
// - moveTo(x, y) -> move; moveRel/move(dx, dy) -> move from the tracked position.
// - dragTo(x, y, button=) / dragRel/drag(dx, dy) -> drag starting at the tracked position (from
//   the last click, move, drag, scroll anchor or mouseDown/Up); with no known position they are
//   unsupported. mouseDownUp=False makes them a move.
// - mouseDown(...) ... mouseUp(...) -> one drag from the down point to the up point (moveTo in
//   between only moves the pointer), or one click when both points are the same.
// - write/typewrite('text') -> type_text (texts over 10,000 characters are split into several
//   actions); write/typewrite([keys]) -> key_press.
// - press('k', presses=N) -> one key_press with the key repeated N times (more than 100 keys are
//   split into several key_press actions); press([k1, k2]) -> key_press [k1, k2] (repeated N times).
// - hotkey('ctrl', 'c') (or one list) -> key_combo (2..8 distinct keys); a single key -> key_press.
// - keyDown/keyUp: the first keyUp after keyDowns emits the chord of the keys held at that moment
//   (key_combo, or key_press for one key). While keys are held, press/hotkey emit key_combo with the
//   held keys, and clicks/drags carry held modifiers as hold_keys; write, scroll and non-modifier
//   holds around clicks are unsupported.
// - scroll/vscroll(n, x=, y=) -> vertical scroll, hscroll -> horizontal scroll; n is truncated to an
//   integer; 0 produces nothing; |n| > 100 is unsupported.
// - sleep/time.sleep(s) -> wait s seconds; more than 60 s is split into several waits (at most
//   3600 s in all); negative is unsupported.
// - No-ops produce nothing: write(''), press(presses=0), hotkey(), moveTo() without coordinates.
// - A keyDown or mouseDown never released by the end of the script is unsupported (at its line).
//
// Limits: code at most 1,000,000 characters, at most 10,000 produced actions, nesting of literals
// at most 100 deep (beyond: 422 VALIDATION_ERROR at body.code). With strict (the default) any
// unsupported statement is 422 VALIDATION_ERROR with details [{path: "code:LINE", message}] (at most
// 50 details); otherwise it is listed in `skipped` and parsing goes on.
import {
  type Action,
  ActionSchema,
  COORDINATE_MAX,
  isModifierKey,
  KEY_COMBO_MAX_KEYS,
  KEY_PRESS_MAX_KEYS,
  normalizeKey,
  outOfScreen,
  type Screen,
  TYPE_TEXT_MAX_CHARS,
  WAIT_MAX_SECONDS,
} from "@cua/base/actions/action";
import { CoreError } from "@cua/base/errors";
import { issuesToDetails } from "@cua/base/validation";

export const MAX_CODE_CHARS = 1_000_000;
export const MAX_PARSED_ACTIONS = 10_000;
export const MAX_NESTING = 100;
const MAX_KEYS_PER_STATEMENT = 1_000;
const MAX_SLEEP_SECONDS = 3_600;
const MAX_STRICT_DETAILS = 50;
const SKIPPED_CODE_MAX_CHARS = 200;

export interface SkippedStatement {
  line: number;
  code: string;
  reason: string;
}

export interface ParseResult {
  actions: Action[];
  skipped: SkippedStatement[];
}

export interface ParseOptions {
  strict?: boolean;
  screen?: Screen;
}

// ---------------------------------------------------------------- tokenizer

interface Pos {
  line: number;
  start: number;
  end: number;
}
type Tok =
  | (Pos & { t: "name"; v: string })
  | (Pos & { t: "num"; v: number; int: boolean })
  | (Pos & { t: "str"; v: string })
  | (Pos & { t: "op"; v: string })
  | (Pos & { t: "err"; v: string })
  | (Pos & { t: "nl" });

const OPS = [
  "**=",
  "//=",
  ">>=",
  "<<=",
  "...",
  "->",
  ":=",
  "**",
  "//",
  "<<",
  ">>",
  "<=",
  ">=",
  "==",
  "!=",
  "+=",
  "-=",
  "*=",
  "/=",
  "%=",
  "&=",
  "|=",
  "^=",
  "@=",
  "(",
  ")",
  "[",
  "]",
  "{",
  "}",
  ",",
  ":",
  ".",
  ";",
  "@",
  "=",
  "+",
  "-",
  "*",
  "/",
  "%",
  "&",
  "|",
  "^",
  "~",
  "<",
  ">",
];
/** operators by first character, longest first */
const OPS_BY_CHAR = new Map<string, string[]>();
for (const o of OPS) {
  const list = OPS_BY_CHAR.get(o[0]!) ?? [];
  list.push(o);
  OPS_BY_CHAR.set(
    o[0]!,
    list.sort((a, b) => b.length - a.length),
  );
}
const CLOSERS: Record<string, string> = { ")": "(", "]": "[", "}": "{" };
const NAME_RE = /[\p{L}\p{Nl}_][\p{L}\p{Nl}\p{Mn}\p{Mc}\p{Nd}\p{Pc}]*/uy;
const NUM_RES = [
  { re: /0[xX](?:_?[0-9a-fA-F])+/y, base: 16 },
  { re: /0[oO](?:_?[0-7])+/y, base: 8 },
  { re: /0[bB](?:_?[01])+/y, base: 2 },
  { re: /(?:(?:\d(?:_?\d)*)?\.\d(?:_?\d)*|\d(?:_?\d)*\.?)(?:[eE][+-]?\d(?:_?\d)*)?/y, base: 10 },
];

class Tokenizer {
  private i = 0;
  private line = 1;
  private depth: { ch: string; line: number }[] = [];
  readonly toks: Tok[] = [];
  /** column (tabs to multiples of 8) of the first token of each physical line that starts a logical line */
  readonly indents = new Map<number, number>();
  private atLineStart = true;
  private col = 0;

  constructor(private readonly src: string) {}

  run(): Tok[] {
    const s = this.src;
    while (this.i < s.length) {
      const ch = s[this.i]!;
      if (ch === "\n") {
        this.newline();
        continue;
      }
      if (ch === " " || ch === "\t" || ch === "\f") {
        if (this.atLineStart) this.col = ch === "\t" ? (Math.floor(this.col / 8) + 1) * 8 : this.col + 1;
        this.i++;
        continue;
      }
      if (ch === "#") {
        while (this.i < s.length && s[this.i] !== "\n") this.i++;
        continue;
      }
      if (ch === "\\") {
        if (s[this.i + 1] === "\n") {
          this.i += 2;
          this.line++;
          continue;
        }
        this.error("unexpected character after line continuation character");
        continue;
      }
      if (this.atLineStart && this.depth.length === 0) this.indents.set(this.toks.length, this.col);
      this.atLineStart = false;
      if (ch === "'" || ch === '"') {
        this.string("");
        continue;
      }
      if (/\d/.test(ch) || (ch === "." && /\d/.test(s[this.i + 1] ?? ""))) {
        this.number();
        continue;
      }
      NAME_RE.lastIndex = this.i;
      const name = NAME_RE.exec(s);
      if (name) {
        const v = name[0];
        const q = s[this.i + v.length];
        if ((q === "'" || q === '"') && /^(?:r|u|b|f|br|rb|fr|rf)$/i.test(v)) {
          this.i += v.length;
          this.string(v.toLowerCase());
          continue;
        }
        this.push({ t: "name", v }, this.i, this.i + v.length);
        this.i += v.length;
        continue;
      }
      const op = OPS_BY_CHAR.get(ch)?.find((o) => o.length === 1 || s.startsWith(o, this.i));
      if (op) {
        if (op === "(" || op === "[" || op === "{") {
          if (this.depth.length >= MAX_NESTING)
            throw new CoreError("VALIDATION_ERROR", "body.code: brackets are nested too deeply", {
              details: [{ path: "body.code", message: `brackets nest more than ${MAX_NESTING} levels` }],
            });
          this.depth.push({ ch: op, line: this.line });
        } else if (CLOSERS[op]) {
          const open = this.depth.pop();
          if (!open || open.ch !== CLOSERS[op]) {
            this.error(open ? `closing '${op}' does not match '${open.ch}'` : `unmatched '${op}'`);
            continue;
          }
        }
        this.push({ t: "op", v: op }, this.i, this.i + op.length);
        this.i += op.length;
        continue;
      }
      this.error(`invalid character '${ch}'`);
    }
    if (this.depth.length > 0) {
      const open = this.depth[0]!;
      this.depth = [];
      this.push(
        { t: "err", v: `'${open.ch}' opened on line ${open.line} was never closed` },
        s.length,
        s.length,
        open.line,
      );
    }
    this.endLogicalLine();
    return this.toks;
  }

  private push(t: { t: Tok["t"]; v?: unknown; int?: boolean }, start: number, end: number, line = this.line) {
    const tok = t as Tok;
    tok.line = line;
    tok.start = start;
    tok.end = end;
    this.toks.push(tok);
  }

  private newline() {
    this.i++;
    if (this.depth.length === 0) this.endLogicalLine();
    this.line++;
    this.atLineStart = this.depth.length === 0;
    this.col = 0;
  }

  private endLogicalLine() {
    const last = this.toks[this.toks.length - 1];
    if (last && last.t !== "nl") this.push({ t: "nl" }, this.i, this.i);
  }

  /** Records an error token and skips the rest of the physical line (bracket state is reset). */
  private error(message: string, start = this.i, line = this.line) {
    while (this.i < this.src.length && this.src[this.i] !== "\n") this.i++;
    this.push({ t: "err", v: message }, start, this.i, line);
    this.depth = [];
  }

  private number() {
    const s = this.src;
    const start = this.i;
    for (const { re, base } of NUM_RES) {
      re.lastIndex = start;
      const m = re.exec(s);
      if (!m) continue;
      const text = m[0];
      const after = s[start + text.length] ?? "";
      if (/[jJ]/.test(after)) return this.error("complex numbers are not supported", start);
      if (/[\p{L}\p{N}_]/u.test(after)) return this.error(`invalid number literal '${text}${after}'`, start);
      const clean = text.replace(/_/g, "");
      this.i = start + text.length;
      if (base !== 10) {
        this.push({ t: "num", v: Number(BigInt(clean)), int: true }, start, this.i);
        return;
      }
      const isFloat = /[.eE]/.test(clean);
      if (!isFloat && /^0+[1-9]/.test(clean))
        return this.error("leading zeros in decimal integer literals are not permitted", start);
      this.push({ t: "num", v: Number(clean), int: !isFloat }, start, this.i);
      return;
    }
    this.error("invalid number literal", start);
  }

  private string(prefix: string) {
    const s = this.src;
    const start = this.i - prefix.length;
    const startLine = this.line;
    const raw = prefix.includes("r");
    const q = s[this.i]!;
    const triple = s.startsWith(q.repeat(3), this.i);
    const close = triple ? q.repeat(3) : q;
    this.i += close.length;
    let out = "";
    while (true) {
      if (this.i >= s.length) {
        this.line = startLine;
        this.i = start;
        return this.unterminated(triple, start, startLine);
      }
      if (s.startsWith(close, this.i)) {
        this.i += close.length;
        break;
      }
      const ch = s[this.i]!;
      if (ch === "\n") {
        if (!triple) {
          this.i = start;
          return this.unterminated(false, start, startLine);
        }
        this.line++;
        out += ch;
        this.i++;
        continue;
      }
      if (ch !== "\\") {
        out += ch;
        this.i++;
        continue;
      }
      const next = s[this.i + 1];
      if (next === undefined) {
        this.i++;
        continue;
      }
      if (raw) {
        out += ch + next;
        if (next === "\n") this.line++;
        this.i += 2;
        continue;
      }
      const esc = this.escape();
      if (typeof esc !== "string") {
        if (triple) {
          // keep the tokenizer in sync: skip to the closing quotes
          const closeAt = s.indexOf(close, this.i);
          const stop = closeAt === -1 ? s.length : closeAt + close.length;
          for (let j = this.i; j < stop; j++) if (s[j] === "\n") this.line++;
          this.i = stop;
          this.push({ t: "err", v: esc.error }, start, this.i, startLine);
          this.depth = [];
          return;
        }
        this.error(esc.error, start, startLine);
        return;
      }
      out += esc;
    }
    if (prefix.includes("b"))
      return this.push({ t: "err", v: "bytes literals are not supported" }, start, this.i, startLine);
    if (prefix.includes("f"))
      return this.push({ t: "err", v: "f-strings are not supported" }, start, this.i, startLine);
    // adjacent literals concatenate
    const prev = this.toks[this.toks.length - 1];
    if (prev && prev.t === "str" && !this.indents.has(this.toks.length)) {
      prev.v += out;
      prev.end = this.i;
      return;
    }
    this.push({ t: "str", v: out }, start, this.i, startLine);
  }

  private unterminated(triple: boolean, start: number, line: number) {
    if (triple) {
      this.i = this.src.length;
      this.push({ t: "err", v: "unterminated triple-quoted string" }, start, this.i, line);
      this.depth = [];
      return;
    }
    this.error("unterminated string literal", start, line);
  }

  /** Reads one escape sequence at this.i (a backslash); returns its text. */
  private escape(): string | { error: string } {
    const s = this.src;
    const c = s[this.i + 1]!;
    this.i += 2;
    const simple: Record<string, string> = {
      "\n": "",
      "\\": "\\",
      "'": "'",
      '"': '"',
      a: "\x07",
      b: "\b",
      f: "\f",
      n: "\n",
      r: "\r",
      t: "\t",
      v: "\v",
    };
    if (c in simple) {
      if (c === "\n") this.line++;
      return simple[c]!;
    }
    if (/[0-7]/.test(c)) {
      let digits = c;
      while (digits.length < 3 && /[0-7]/.test(s[this.i] ?? "")) digits += s[this.i++];
      return String.fromCodePoint(Number.parseInt(digits, 8));
    }
    const hexLen = c === "x" ? 2 : c === "u" ? 4 : c === "U" ? 8 : 0;
    if (hexLen > 0) {
      const hex = s.slice(this.i, this.i + hexLen);
      if (!new RegExp(`^[0-9a-fA-F]{${hexLen}}$`).test(hex)) return { error: `truncated \\${c} escape` };
      const cp = Number.parseInt(hex, 16);
      if (cp > 0x10ffff) return { error: `illegal Unicode character in \\${c} escape` };
      this.i += hexLen;
      return String.fromCodePoint(cp);
    }
    if (c === "N") return { error: "\\N{...} escapes are not supported" };
    return `\\${c}`; // Python keeps unknown escapes as they are
  }
}

// ---------------------------------------------------------------- parser

type Value =
  | { k: "int"; v: number }
  | { k: "float"; v: number }
  | { k: "str"; v: string }
  | { k: "bool"; v: boolean }
  | { k: "none" }
  | { k: "list" | "tuple"; items: Value[] };

type Stmt =
  | { k: "import"; binds: { name: string; module: string }[] }
  | { k: "from"; module: string; names: { name: string; as: string }[] | "*" }
  | { k: "marker"; v: "DONE" | "FAIL" | "WAIT" }
  | { k: "call"; callee: string[]; args: Value[]; kwargs: [string, Value][] }
  | { k: "noop" };

/** An unsupported statement. Deliberately not an Error: no stack trace is captured (hot path). */
class Unsupported {
  constructor(readonly message: string) {}
}

const KEYWORDS = new Set(
  "False None True and as assert async await break class continue def del elif else except finally for from global if import in is lambda nonlocal not or pass raise return try while with yield match case type".split(
    " ",
  ),
);
const COMPOUND = new Set([
  "if",
  "elif",
  "else",
  "for",
  "while",
  "def",
  "class",
  "with",
  "try",
  "except",
  "finally",
  "async",
  "match",
  "case",
]);
const BINARY_OPS = new Set([
  "+",
  "-",
  "*",
  "/",
  "//",
  "%",
  "**",
  "@",
  "<<",
  ">>",
  "&",
  "|",
  "^",
  "<",
  ">",
  "<=",
  ">=",
  "==",
  "!=",
  "~",
]);
const WORD_OPS = new Set(["and", "or", "not", "in", "is", "if", "else", "for", "lambda"]);

function describeTok(t: Tok): string {
  if (t.t === "name" || t.t === "op") return `'${t.v}'`;
  if (t.t === "num") return `the number ${t.v}`;
  if (t.t === "str") return "a string";
  return "a token";
}

class StmtParser {
  private i: number;
  constructor(
    private readonly toks: Tok[],
    start: number,
    private readonly end: number,
  ) {
    this.i = start;
  }

  private peek(o = 0): Tok | undefined {
    return this.i + o < this.end ? this.toks[this.i + o] : undefined;
  }
  private isOp(v: string, o = 0) {
    const t = this.peek(o);
    return t?.t === "op" && t.v === v;
  }
  private isName(v?: string, o = 0) {
    const t = this.peek(o);
    return t?.t === "name" && (v === undefined || t.v === v);
  }
  private next(): Tok {
    const t = this.peek();
    if (!t) throw new Unsupported("unexpected end of statement");
    this.i++;
    return t;
  }
  private expectOp(v: string) {
    if (!this.isOp(v)) throw new Unsupported(`expected '${v}'${this.describeNext()}`);
    this.i++;
  }
  private describeNext(): string {
    const t = this.peek();
    return t ? ` but found ${describeTok(t)}` : " at the end of the statement";
  }
  private atEnd() {
    return this.i >= this.end;
  }

  parse(): Stmt {
    const first = this.peek();
    if (!first) throw new Unsupported("empty statement");
    if (first.t === "name") {
      if (first.v === "import") return this.importStmt();
      if (first.v === "from") return this.fromStmt();
      if (COMPOUND.has(first.v))
        throw new Unsupported(`'${first.v}' statements (control flow, definitions) are not supported`);
      if (KEYWORDS.has(first.v) && !["True", "False", "None"].includes(first.v))
        throw new Unsupported(`'${first.v}' statements are not supported`);
      if ((first.v === "DONE" || first.v === "FAIL" || first.v === "WAIT") && this.end - this.i === 1)
        return { k: "marker", v: first.v };
    }
    if (first.t === "str" && this.end - this.i === 1) return { k: "noop" };
    if (first.t === "name") {
      const callee = this.dotted();
      if (this.isOp("=") && callee.length === 2 && callee[0] === "pyautogui") return this.setting(callee[1]!);
      if (
        this.isOp("=") ||
        this.isOp(",") ||
        (this.peek()?.t === "op" && /^[^=!<>]+=$/.test((this.peek() as { v: string }).v)) ||
        this.isOp(":")
      )
        throw new Unsupported("assignments are not supported");
      if (this.atEnd()) throw new Unsupported(`'${callee.join(".")}' alone does nothing; only calls are supported`);
      if (!this.isOp("("))
        throw new Unsupported(`unsupported syntax after '${callee.join(".")}'${this.describeNext()}`);
      this.i++;
      const { args, kwargs } = this.arglist();
      if (!this.atEnd()) {
        if (this.isOp(".") || this.isOp("(") || this.isOp("["))
          throw new Unsupported("chained calls, attributes or subscripts on a call result are not supported");
        throw new Unsupported(`unexpected ${describeTok(this.peek()!)} after the call`);
      }
      return { k: "call", callee, args, kwargs };
    }
    throw new Unsupported("only calls of pyautogui functions are supported");
  }

  private dotted(): string[] {
    const parts = [(this.next() as { v: string }).v];
    while (this.isOp(".")) {
      this.i++;
      const t = this.next();
      if (t.t !== "name") throw new Unsupported("expected a name after '.'");
      parts.push(t.v);
    }
    return parts;
  }

  private setting(name: string): Stmt {
    this.i++;
    const value = this.expr(0);
    if (!this.atEnd()) throw new Unsupported("expressions are not supported");
    if (name === "FAILSAFE" && value.k === "bool") return { k: "noop" };
    if (name === "PAUSE" && (value.k === "int" || value.k === "float") && value.v >= 0) return { k: "noop" };
    throw new Unsupported(`setting pyautogui.${name} is not supported`);
  }

  private importStmt(): Stmt {
    this.i++;
    const binds: { name: string; module: string }[] = [];
    for (;;) {
      if (!this.isName()) throw new Unsupported("expected a module name");
      const mod = this.dotted();
      let name = mod[0]!;
      let module = mod[0]!;
      if (this.isName("as")) {
        this.i++;
        const t = this.next();
        if (t.t !== "name") throw new Unsupported("expected a name after 'as'");
        name = t.v;
        module = mod.join(".");
      }
      binds.push({ name, module });
      if (!this.isOp(",")) break;
      this.i++;
    }
    if (!this.atEnd()) throw new Unsupported(`unexpected ${describeTok(this.peek()!)} in import`);
    return { k: "import", binds };
  }

  private fromStmt(): Stmt {
    this.i++;
    let dots = "";
    while (this.isOp(".") || this.isOp("...")) dots += (this.next() as { v: string }).v;
    const module = dots + (this.isName() && !this.isName("import") ? this.dotted().join(".") : "");
    if (!module) throw new Unsupported("expected a module name");
    if (!this.isName("import")) throw new Unsupported("expected 'import'");
    this.i++;
    if (this.isOp("*")) {
      this.i++;
      if (!this.atEnd()) throw new Unsupported("unexpected tokens after 'import *'");
      return { k: "from", module, names: "*" };
    }
    const paren = this.isOp("(");
    if (paren) this.i++;
    const names: { name: string; as: string }[] = [];
    while (true) {
      const t = this.next();
      if (t.t !== "name") throw new Unsupported("expected a name to import");
      let as = t.v;
      if (this.isName("as")) {
        this.i++;
        const a = this.next();
        if (a.t !== "name") throw new Unsupported("expected a name after 'as'");
        as = a.v;
      }
      names.push({ name: t.v, as });
      if (!this.isOp(",")) break;
      this.i++;
      if (paren && this.isOp(")")) break;
    }
    if (paren) this.expectOp(")");
    if (!this.atEnd()) throw new Unsupported("unexpected tokens in import");
    return { k: "from", module, names };
  }

  private arglist(): { args: Value[]; kwargs: [string, Value][] } {
    const args: Value[] = [];
    const kwargs: [string, Value][] = [];
    while (!this.isOp(")")) {
      if (this.isOp("*") || this.isOp("**")) throw new Unsupported("*args and **kwargs are not supported");
      if (this.isName() && this.isOp("=", 1)) {
        const name = (this.next() as { v: string }).v;
        this.i++;
        if (KEYWORDS.has(name)) throw new Unsupported(`'${name}' cannot be a keyword argument`);
        kwargs.push([name, this.expr(0)]);
      } else {
        if (kwargs.length > 0) throw new Unsupported("a positional argument follows a keyword argument");
        args.push(this.expr(0));
      }
      if (this.isOp(",")) this.i++;
      else if (!this.isOp(")")) throw new Unsupported(this.operatorMessage());
    }
    this.i++;
    return { args, kwargs };
  }

  private operatorMessage(): string {
    const t = this.peek();
    if (!t) return "unexpected end of statement";
    if (t.t === "op" && BINARY_OPS.has(t.v))
      return `expressions such as '${t.v}' are not supported; use literal values`;
    if (t.t === "name" && WORD_OPS.has(t.v))
      return `expressions such as '${t.v}' are not supported; use literal values`;
    if (t.t === "op" && (t.v === "." || t.v === "(" || t.v === "["))
      return "attributes, calls and subscripts inside arguments are not supported";
    if (t.t === "op" && t.v === "=") return "assignments are not supported";
    return `unexpected ${describeTok(t)}`;
  }

  /** A literal value; anything that would need evaluation is unsupported. */
  private expr(depth: number): Value {
    if (depth > MAX_NESTING) throw new Unsupported("literals are nested too deeply");
    const v = this.unary(depth);
    const t = this.peek();
    if (
      t &&
      ((t.t === "op" && (BINARY_OPS.has(t.v) || t.v === "." || t.v === "(" || t.v === "[")) ||
        (t.t === "name" && WORD_OPS.has(t.v)))
    )
      throw new Unsupported(this.operatorMessage());
    return v;
  }

  private unary(depth: number): Value {
    if (depth > MAX_NESTING) throw new Unsupported("literals are nested too deeply");
    if (this.isOp("-") || this.isOp("+")) {
      const neg = (this.next() as { v: string }).v === "-";
      const v = this.unary(depth + 1);
      if (v.k !== "int" && v.k !== "float") throw new Unsupported("unary minus and plus apply only to numbers");
      return neg ? { k: v.k, v: -v.v } : v;
    }
    return this.atom(depth);
  }

  private atom(depth: number): Value {
    const t = this.next();
    switch (t.t) {
      case "num":
        return t.int ? { k: "int", v: t.v } : { k: "float", v: t.v };
      case "str":
        return { k: "str", v: t.v };
      case "name":
        if (t.v === "True" || t.v === "False") return { k: "bool", v: t.v === "True" };
        if (t.v === "None") return { k: "none" };
        throw new Unsupported(`names and variables (such as '${t.v}') are not supported; use literal values`);
      case "op":
        if (t.v === "[") return { k: "list", items: this.sequence("]", depth) };
        if (t.v === "(") {
          if (this.isOp(")")) {
            this.i++;
            return { k: "tuple", items: [] };
          }
          const first = this.expr(depth + 1);
          if (this.isOp(")")) {
            this.i++;
            return first; // parenthesised expression
          }
          this.expectOp(",");
          return { k: "tuple", items: [first, ...this.sequence(")", depth)] };
        }
        if (t.v === "{") throw new Unsupported("dicts and sets are not supported");
        throw new Unsupported(`unexpected '${t.v}'`);
      default:
        throw new Unsupported("unexpected token");
    }
  }

  private sequence(close: string, depth: number): Value[] {
    const items: Value[] = [];
    while (!this.isOp(close)) {
      if (this.isOp("*")) throw new Unsupported("unpacking is not supported");
      items.push(this.expr(depth + 1));
      if (this.isOp(",")) this.i++;
      else if (!this.isOp(close)) throw new Unsupported(this.operatorMessage());
    }
    this.i++;
    return items;
  }
}

// ---------------------------------------------------------------- interpreter

type Sig = { params: string[]; required?: string[]; varargs?: boolean; positionalOnly?: boolean };
const CLICK_LIKE = ["x", "y", "interval", "duration", "tween", "logScreenshot", "_pause"];
const MULTI_CLICK = ["x", "y", "interval", "button", "duration", "tween", "logScreenshot", "_pause"];
const MOUSE_UPDOWN = ["x", "y", "button", "duration", "tween", "logScreenshot", "_pause"];
const SIGS: Record<string, Sig> = {
  click: { params: ["x", "y", "clicks", "interval", "button", "duration", "tween", "logScreenshot", "_pause"] },
  leftClick: { params: CLICK_LIKE },
  rightClick: { params: CLICK_LIKE },
  middleClick: { params: CLICK_LIKE },
  doubleClick: { params: MULTI_CLICK },
  tripleClick: { params: MULTI_CLICK },
  moveTo: { params: ["x", "y", "duration", "tween", "logScreenshot", "_pause"] },
  moveRel: { params: ["xOffset", "yOffset", "duration", "tween", "logScreenshot", "_pause"] },
  move: { params: ["xOffset", "yOffset", "duration", "tween", "logScreenshot", "_pause"] },
  dragTo: { params: ["x", "y", "duration", "tween", "button", "logScreenshot", "_pause", "mouseDownUp"] },
  dragRel: { params: ["xOffset", "yOffset", "duration", "tween", "button", "logScreenshot", "_pause", "mouseDownUp"] },
  drag: { params: ["xOffset", "yOffset", "duration", "tween", "button", "logScreenshot", "_pause", "mouseDownUp"] },
  mouseDown: { params: MOUSE_UPDOWN },
  mouseUp: { params: MOUSE_UPDOWN },
  scroll: { params: ["clicks", "x", "y", "logScreenshot", "_pause"], required: ["clicks"] },
  vscroll: { params: ["clicks", "x", "y", "logScreenshot", "_pause"], required: ["clicks"] },
  hscroll: { params: ["clicks", "x", "y", "logScreenshot", "_pause"], required: ["clicks"] },
  write: { params: ["message", "interval", "logScreenshot", "_pause"], required: ["message"] },
  typewrite: { params: ["message", "interval", "logScreenshot", "_pause"], required: ["message"] },
  press: { params: ["keys", "presses", "interval", "logScreenshot", "_pause"], required: ["keys"] },
  hotkey: { params: ["interval", "logScreenshot", "_pause"], varargs: true },
  keyDown: { params: ["key", "logScreenshot", "_pause"], required: ["key"] },
  keyUp: { params: ["key", "logScreenshot", "_pause"], required: ["key"] },
  sleep: { params: ["seconds"], required: ["seconds"], positionalOnly: true },
};
const PYAUTOGUI_FUNCTIONS = Object.keys(SIGS);

interface State {
  pos: { x: number; y: number } | null;
  held: { key: string; line: number }[];
  pendingChord: boolean;
  down: { x: number; y: number; button: string; line: number } | null;
}

type Bound = { args: Map<string, Value>; varargs: Value[] };

function bind(fn: string, sig: Sig, args: Value[], kwargs: [string, Value][]): Bound {
  const out = new Map<string, Value>();
  let varargs: Value[] = [];
  if (sig.varargs) varargs = args;
  else {
    if (args.length > sig.params.length)
      throw new Unsupported(`${fn}() takes at most ${sig.params.length} positional arguments (${args.length} given)`);
    args.forEach((a, i) => {
      out.set(sig.params[i]!, a);
    });
  }
  for (const [name, v] of kwargs) {
    if (sig.positionalOnly) throw new Unsupported(`${fn}() takes no keyword arguments`);
    if (!sig.params.includes(name)) throw new Unsupported(`${fn}() got an unexpected keyword argument '${name}'`);
    if (out.has(name)) throw new Unsupported(`${fn}() got multiple values for argument '${name}'`);
    out.set(name, v);
  }
  for (const r of sig.required ?? [])
    if (!out.has(r)) throw new Unsupported(`${fn}() is missing the required argument '${r}'`);
  return { args: out, varargs };
}

const isNone = (v: Value | undefined) => v === undefined || v.k === "none";

function describe(v: Value): string {
  switch (v.k) {
    case "int":
    case "float":
      return String(v.v);
    case "str":
      return JSON.stringify(v.v.length > 20 ? `${v.v.slice(0, 20)}...` : v.v);
    case "bool":
      return v.v ? "True" : "False";
    case "none":
      return "None";
    default:
      return v.k;
  }
}

function asInt(v: Value, what: string): number {
  if (v.k === "int") return v.v;
  if (v.k === "float") {
    if (!Number.isFinite(v.v)) throw new Unsupported(`${what} must be a finite number`);
    return Math.trunc(v.v) || 0;
  }
  throw new Unsupported(`${what} must be a number, not ${describe(v)}`);
}

function asNumber(v: Value, what: string): number {
  if ((v.k === "int" || v.k === "float") && Number.isFinite(v.v)) return v.v;
  throw new Unsupported(`${what} must be a number, not ${describe(v)}`);
}

function asKey(v: Value, what: string): string {
  if (v.k !== "str") throw new Unsupported(`${what} must be a key name string, not ${describe(v)}`);
  const k = normalizeKey(v.v);
  if (k === null) throw new Unsupported(`unknown key name ${JSON.stringify(v.v)}`);
  return k;
}

function asButton(v: Value | undefined, fallback: "left" | "right" | "middle"): "left" | "right" | "middle" {
  if (isNone(v)) return fallback;
  const b = v as Value;
  if (b.k === "str") {
    const map: Record<string, "left" | "right" | "middle"> = {
      left: "left",
      right: "right",
      middle: "middle",
      primary: "left",
      secondary: "right",
    };
    if (Object.hasOwn(map, b.v)) return map[b.v]!;
  }
  throw new Unsupported(`button must be 'left', 'right' or 'middle', not ${describe(b)}`);
}

function chunk<T>(items: T[], size: number): T[][] {
  const out: T[][] = [];
  for (let i = 0; i < items.length; i += size) out.push(items.slice(i, i + size));
  return out;
}

/** Splits text into pieces of at most `max` UTF-16 units without splitting a character. */
function chunkText(text: string, max: number): string[] {
  const out: string[] = [];
  let cur = "";
  for (const ch of text) {
    if (cur.length + ch.length > max) {
      out.push(cur);
      cur = "";
    }
    cur += ch;
  }
  if (cur) out.push(cur);
  return out;
}

class Interpreter {
  readonly actions: Action[] = [];
  state: State = { pos: null, held: [], pendingChord: false, down: null };
  private modules = new Map<string, string>([
    ["pyautogui", "pyautogui"],
    ["time", "time"],
  ]);
  private functions = new Map<string, string>();

  constructor(private readonly screen: Screen | undefined) {}

  /** Runs one statement atomically: on Unsupported nothing changes. */
  run(stmt: Stmt, line: number): void {
    const saved: State = {
      pos: this.state.pos,
      held: [...this.state.held],
      pendingChord: this.state.pendingChord,
      down: this.state.down,
    };
    const produced: Action[] = [];
    try {
      this.exec(stmt, line, produced);
    } catch (e) {
      this.state = saved;
      throw e;
    }
    for (const a of produced) this.actions.push(a);
    if (this.actions.length > MAX_PARSED_ACTIONS)
      throw new CoreError(
        "VALIDATION_ERROR",
        `body.code: the script produces more than ${MAX_PARSED_ACTIONS} actions`,
        {
          details: [{ path: "body.code", message: `the script produces more than ${MAX_PARSED_ACTIONS} actions` }],
        },
      );
  }

  private poisonedAttrs = new Set<string>();

  /** Names rebound by a statement we could not run no longer mean what they meant. */
  poison(name: string): void {
    this.modules.set(name, `<reassigned ${name}>`);
    this.functions.delete(name);
  }

  /**
   * After an unsupported statement: every name it may have rebound (assignment targets, walrus,
   * for/as/def/class targets) is poisoned, so later calls through it are unsupported too;
   * `m.f = ...` poisons only the attribute m.f.
   */
  poisonTargets(toks: Tok[], a: number, b: number): void {
    const binders = new Set(["for", "as", "def", "class", "global", "nonlocal", "import"]);
    for (let i = a; i < b; i++) {
      const t = toks[i]!;
      if (t.t !== "name") continue;
      const prev = toks[i - 1];
      const next = toks[i + 1];
      if (i > a && prev?.t === "name" && binders.has(prev.v)) this.poison(t.v);
      if (
        next?.t === "op" &&
        (next.v === ":=" || (next.v.endsWith("=") && !["==", "<=", ">=", "!="].includes(next.v)))
      ) {
        const path = [t.v];
        let j = i - 1;
        while (j - 1 >= a && toks[j]?.t === "op" && (toks[j] as { v: string }).v === "." && toks[j - 1]?.t === "name") {
          path.unshift((toks[j - 1] as { v: string }).v);
          j -= 2;
        }
        if (path.length === 1) this.poison(t.v);
        else this.poisonedAttrs.add(this.resolve(path));
      }
    }
  }

  private exec(stmt: Stmt, line: number, out: Action[]): void {
    switch (stmt.k) {
      case "noop":
        return;
      case "import":
        for (const b of stmt.binds) {
          this.modules.set(b.name, b.module);
          this.functions.delete(b.name);
        }
        return;
      case "from":
        if (stmt.names === "*") {
          if (stmt.module === "pyautogui") for (const f of PYAUTOGUI_FUNCTIONS) this.bindFunction(f, `pyautogui.${f}`);
          else if (stmt.module === "time") this.bindFunction("sleep", "time.sleep");
          return;
        }
        for (const n of stmt.names) this.bindFunction(n.as, `${stmt.module}.${n.name}`);
        return;
      case "marker":
        if (stmt.v === "DONE") out.push({ action_type: "done", params: {} });
        else if (stmt.v === "FAIL") out.push({ action_type: "fail", params: {} });
        else out.push({ action_type: "wait", params: { seconds: 1 } });
        return;
      case "call":
        this.call(stmt, line, out);
        return;
    }
  }

  private bindFunction(local: string, target: string) {
    this.functions.set(local, target);
    this.modules.delete(local);
  }

  private resolve(callee: string[]): string {
    if (callee.length === 1) {
      const f = this.functions.get(callee[0]!);
      if (f) return f;
    } else if (callee.length === 2) {
      const m = this.modules.get(callee[0]!);
      if (m) return `${m}.${callee[1]}`;
    }
    return callee.join(".");
  }

  private emit(out: Action[], raw: unknown): void {
    const parsed = ActionSchema.safeParse(raw);
    if (!parsed.success) {
      const d = issuesToDetails(parsed.error.issues, "")[0];
      throw new Unsupported(
        `the resulting action is invalid: ${d?.path ? `${d.path}: ` : ""}${d?.message ?? "invalid"}`,
      );
    }
    if (this.screen) {
      const bad = outOfScreen(parsed.data, this.screen)[0];
      if (bad) throw new Unsupported(`the resulting action is invalid: ${bad.message}`);
    }
    out.push(parsed.data);
  }

  private coord(v: Value, what: string): number {
    const n = asInt(v, what);
    if (n < 0 || n > COORDINATE_MAX) throw new Unsupported(`${what} ${n} is outside 0..${COORDINATE_MAX}`);
    if (this.screen && ((what === "x" && n >= this.screen.width) || (what === "y" && n >= this.screen.height)))
      throw new Unsupported(`${what} ${n} lies outside the ${this.screen.width}x${this.screen.height} screen`);
    return n;
  }

  /** (x, y) from x/y arguments, an (x, y) pair in x, or the tracked position for missing ones. */
  private point(a: Map<string, Value>, fn: string, required: boolean): { x: number; y: number } | null {
    let xv = a.get("x");
    let yv = a.get("y");
    if (xv && (xv.k === "list" || xv.k === "tuple")) {
      if (!isNone(yv)) throw new Unsupported(`${fn}(): y given together with an (x, y) pair`);
      if (xv.items.length !== 2) throw new Unsupported(`${fn}(): the position must be an (x, y) pair`);
      [xv, yv] = xv.items as [Value, Value];
    }
    if (xv?.k === "str") throw new Unsupported(`${fn}(): locating images on screen is not supported`);
    if (isNone(xv) && isNone(yv)) {
      if (!required) return null;
      if (!this.state.pos) throw new Unsupported(`${fn}() without coordinates needs a known pointer position`);
      return this.state.pos;
    }
    if ((isNone(xv) || isNone(yv)) && !this.state.pos)
      throw new Unsupported(`${fn}() with one coordinate needs a known pointer position`);
    const x = isNone(xv) ? this.state.pos!.x : this.coord(xv!, "x");
    const y = isNone(yv) ? this.state.pos!.y : this.coord(yv!, "y");
    return { x, y };
  }

  private offsetPoint(
    a: Map<string, Value>,
    fn: string,
  ): { from: { x: number; y: number }; to: { x: number; y: number } } {
    if (!this.state.pos) throw new Unsupported(`${fn}() needs a known pointer position (click or moveTo first)`);
    const dxv = a.get("xOffset");
    const dyv = a.get("yOffset");
    let dx = 0;
    let dy = 0;
    if (dxv && (dxv.k === "list" || dxv.k === "tuple")) {
      if (dxv.items.length !== 2 || !isNone(dyv)) throw new Unsupported(`${fn}(): the offset must be an (x, y) pair`);
      dx = asInt(dxv.items[0]!, "xOffset");
      dy = asInt(dxv.items[1]!, "yOffset");
    } else {
      if (!isNone(dxv)) dx = asInt(dxv!, "xOffset");
      if (!isNone(dyv)) dy = asInt(dyv!, "yOffset");
    }
    const to = { x: this.state.pos.x + dx, y: this.state.pos.y + dy };
    this.coord({ k: "int", v: to.x }, "x");
    this.coord({ k: "int", v: to.y }, "y");
    return { from: this.state.pos, to };
  }

  /** Modifiers held by keyDown, for hold_keys; a held non-modifier cannot ride on a mouse action. */
  private holdKeys(fn: string): string[] | undefined {
    if (this.state.held.length === 0) return undefined;
    const keys = this.state.held.map((h) => h.key);
    const other = keys.find((k) => !isModifierKey(k));
    if (other) throw new Unsupported(`${fn}() while the non-modifier key '${other}' is held is not supported`);
    this.state.pendingChord = false;
    return keys;
  }

  private noMouseDown(fn: string) {
    if (this.state.down) throw new Unsupported(`${fn}() while a mouse button is held (mouseDown) is not supported`);
  }

  private noKeysHeld(fn: string) {
    if (this.state.held.length > 0) throw new Unsupported(`${fn}() while keys are held (keyDown) is not supported`);
  }

  private call(stmt: Extract<Stmt, { k: "call" }>, line: number, out: Action[]): void {
    const target = this.resolve(stmt.callee);
    const parts = target.split(".");
    const fn = parts.length === 2 ? parts[1]! : "";
    const known =
      this.poisonedAttrs.has(target) || parts.length !== 2
        ? undefined
        : parts[0] === "pyautogui" && Object.hasOwn(SIGS, fn)
          ? SIGS[fn]
          : target === "time.sleep"
            ? SIGS.sleep
            : undefined;
    if (!known) throw new Unsupported(`${stmt.callee.join(".")}() is not a supported pyautogui call`);
    const { args: a, varargs } = bind(fn, known, stmt.args, stmt.kwargs);
    switch (fn) {
      case "click":
      case "leftClick":
      case "rightClick":
      case "middleClick":
      case "doubleClick":
      case "tripleClick": {
        this.noMouseDown(fn);
        const p = this.point(a, fn, true)!;
        const button =
          fn === "rightClick"
            ? "right"
            : fn === "middleClick"
              ? "middle"
              : fn === "leftClick"
                ? "left"
                : asButton(a.get("button"), "left");
        const clicks =
          fn === "doubleClick"
            ? 2
            : fn === "tripleClick"
              ? 3
              : isNone(a.get("clicks"))
                ? 1
                : asInt(a.get("clicks")!, "clicks");
        if (clicks === 0) return;
        const hold = this.holdKeys(fn);
        this.emit(out, {
          action_type: "click",
          params: { x: p.x, y: p.y, button, clicks, ...(hold ? { hold_keys: hold } : {}) },
        });
        this.state.pos = p;
        return;
      }
      case "moveTo": {
        const p = this.point(a, fn, false);
        if (!p) return;
        if (!this.state.down) this.emit(out, { action_type: "move", params: p });
        this.state.pos = p;
        return;
      }
      case "moveRel":
      case "move": {
        const { to } = this.offsetPoint(a, fn);
        if (!this.state.down) this.emit(out, { action_type: "move", params: to });
        this.state.pos = to;
        return;
      }
      case "dragTo":
      case "dragRel":
      case "drag": {
        this.noMouseDown(fn);
        let from: { x: number; y: number };
        let to: { x: number; y: number };
        if (fn === "dragTo") {
          if (!this.state.pos) throw new Unsupported("dragTo() needs a known start position (click or moveTo first)");
          from = this.state.pos;
          to = this.point(a, fn, true)!;
        } else ({ from, to } = this.offsetPoint(a, fn));
        const downUp = a.get("mouseDownUp");
        if (downUp && downUp.k === "bool" && !downUp.v) {
          this.emit(out, { action_type: "move", params: to });
        } else {
          if (downUp && !isNone(downUp) && downUp.k !== "bool")
            throw new Unsupported("mouseDownUp must be True or False");
          const hold = this.holdKeys(fn);
          this.emit(out, {
            action_type: "drag",
            params: {
              x1: from.x,
              y1: from.y,
              x2: to.x,
              y2: to.y,
              button: asButton(a.get("button"), "left"),
              ...(hold ? { hold_keys: hold } : {}),
            },
          });
        }
        this.state.pos = to;
        return;
      }
      case "mouseDown": {
        this.noMouseDown(fn);
        const p = this.point(a, fn, true)!;
        this.state.down = { ...p, button: asButton(a.get("button"), "left"), line };
        this.state.pos = p;
        return;
      }
      case "mouseUp": {
        const down = this.state.down;
        if (!down) throw new Unsupported("mouseUp() without a preceding mouseDown() is not supported");
        const p = this.point(a, fn, true)!;
        const button = asButton(a.get("button"), "left");
        if (button !== down.button)
          throw new Unsupported(`mouseUp(button='${button}') does not match mouseDown(button='${down.button}')`);
        const hold = this.holdKeys(fn);
        const holdParam = hold ? { hold_keys: hold } : {};
        if (p.x === down.x && p.y === down.y)
          this.emit(out, { action_type: "click", params: { x: p.x, y: p.y, button, clicks: 1, ...holdParam } });
        else
          this.emit(out, {
            action_type: "drag",
            params: { x1: down.x, y1: down.y, x2: p.x, y2: p.y, button, ...holdParam },
          });
        this.state.down = null;
        this.state.pos = p;
        return;
      }
      case "scroll":
      case "vscroll":
      case "hscroll": {
        this.noMouseDown(fn);
        this.noKeysHeld(fn);
        const clicks = asInt(a.get("clicks")!, "clicks");
        const anchor = this.point(a, fn, false);
        if (clicks !== 0) {
          this.emit(out, {
            action_type: "scroll",
            params: { clicks, direction: fn === "hscroll" ? "horizontal" : "vertical", ...(anchor ?? {}) },
          });
        }
        if (anchor) this.state.pos = anchor;
        return;
      }
      case "write":
      case "typewrite": {
        this.noMouseDown(fn);
        this.noKeysHeld(fn);
        const msg = a.get("message")!;
        if (msg.k === "str") {
          for (const part of chunkText(msg.v, TYPE_TEXT_MAX_CHARS))
            this.emit(out, { action_type: "type_text", params: { text: part } });
          return;
        }
        if (msg.k === "list" || msg.k === "tuple") {
          const keys = msg.items.map((v) => asKey(v, `${fn}() items`));
          if (keys.length > MAX_KEYS_PER_STATEMENT)
            throw new Unsupported(`more than ${MAX_KEYS_PER_STATEMENT} keys in one statement`);
          for (const part of chunk(keys, KEY_PRESS_MAX_KEYS))
            this.emit(out, { action_type: "key_press", params: { keys: part } });
          return;
        }
        throw new Unsupported(`${fn}() takes a string or a list of keys, not ${describe(msg)}`);
      }
      case "press": {
        this.noMouseDown(fn);
        const kv = a.get("keys")!;
        const keys =
          kv.k === "list" || kv.k === "tuple"
            ? kv.items.map((v) => asKey(v, "press() keys"))
            : [asKey(kv, "press() key")];
        const presses = isNone(a.get("presses")) ? 1 : asInt(a.get("presses")!, "presses");
        if (presses < 0) throw new Unsupported("presses must not be negative");
        if (keys.length * presses > MAX_KEYS_PER_STATEMENT)
          throw new Unsupported(`more than ${MAX_KEYS_PER_STATEMENT} key presses in one statement`);
        if (presses === 0 || keys.length === 0) return;
        const all: string[] = [];
        for (let i = 0; i < presses; i++) all.push(...keys);
        if (this.state.held.length > 0) {
          for (const k of all) this.emit(out, { action_type: "key_combo", params: { keys: this.chordWith([k]) } });
          this.state.pendingChord = false;
          return;
        }
        for (const part of chunk(all, KEY_PRESS_MAX_KEYS))
          this.emit(out, { action_type: "key_press", params: { keys: part } });
        return;
      }
      case "hotkey": {
        this.noMouseDown(fn);
        const items =
          varargs.length === 1 && (varargs[0]!.k === "list" || varargs[0]!.k === "tuple") ? varargs[0]!.items : varargs;
        const keys = items.map((v) => asKey(v, "hotkey() keys"));
        if (keys.length === 0) return;
        const chord = this.chordWith(keys);
        if (chord.length === 1) this.emit(out, { action_type: "key_press", params: { keys: chord } });
        else this.emit(out, { action_type: "key_combo", params: { keys: chord } });
        this.state.pendingChord = false;
        return;
      }
      case "keyDown": {
        this.noMouseDown(fn);
        const k = asKey(a.get("key")!, "keyDown() key");
        if (this.state.held.some((h) => h.key === k)) return;
        if (this.state.held.length >= KEY_COMBO_MAX_KEYS)
          throw new Unsupported(`more than ${KEY_COMBO_MAX_KEYS} keys held at once`);
        this.state.held.push({ key: k, line });
        this.state.pendingChord = true;
        return;
      }
      case "keyUp": {
        const k = asKey(a.get("key")!, "keyUp() key");
        if (!this.state.held.some((h) => h.key === k))
          throw new Unsupported(`keyUp('${k}') without a preceding keyDown('${k}')`);
        if (this.state.pendingChord) {
          const keys = this.state.held.map((h) => h.key);
          if (keys.length === 1) this.emit(out, { action_type: "key_press", params: { keys } });
          else this.emit(out, { action_type: "key_combo", params: { keys } });
          this.state.pendingChord = false;
        }
        this.state.held = this.state.held.filter((h) => h.key !== k);
        return;
      }
      case "sleep": {
        const s = asNumber(a.get("seconds")!, "seconds");
        if (s < 0) throw new Unsupported("sleep length must be non-negative");
        if (s > MAX_SLEEP_SECONDS)
          throw new Unsupported(`sleeps longer than ${MAX_SLEEP_SECONDS} seconds are not supported`);
        let left = s;
        do {
          const part = Math.min(left, WAIT_MAX_SECONDS);
          this.emit(out, { action_type: "wait", params: { seconds: part } });
          left -= part;
        } while (left > 0);
        return;
      }
    }
    throw new Unsupported(`${target}() is not supported`);
  }

  /** Held keys plus these, without repeats, at most 8. */
  private chordWith(keys: string[]): string[] {
    const chord: string[] = [];
    for (const k of [...this.state.held.map((h) => h.key), ...keys]) if (!chord.includes(k)) chord.push(k);
    if (chord.length > KEY_COMBO_MAX_KEYS)
      throw new Unsupported(`a key combo holds at most ${KEY_COMBO_MAX_KEYS} keys`);
    return chord;
  }
}

// ---------------------------------------------------------------- driver

function dedent(lines: { indent: number }[]): number {
  let min = Number.POSITIVE_INFINITY;
  for (const l of lines) min = Math.min(min, l.indent);
  return Number.isFinite(min) ? min : 0;
}

/** Converts a pyautogui script into Actions (DECISIONS "Prediction": POST /v1/parse). */
export function parsePyautogui(code: string, opts: ParseOptions = {}): ParseResult {
  const strict = opts.strict ?? true;
  if (typeof code !== "string")
    throw new CoreError("VALIDATION_ERROR", "body.code: must be a string", {
      details: [{ path: "body.code", message: "must be a string" }],
    });
  if (code.length > MAX_CODE_CHARS)
    throw new CoreError("VALIDATION_ERROR", `body.code: at most ${MAX_CODE_CHARS} characters`, {
      details: [{ path: "body.code", message: `at most ${MAX_CODE_CHARS} characters` }],
    });
  const src = code.replace(/^\uFEFF/, "").replace(/\r\n?/g, "\n");
  const tokenizer = new Tokenizer(src);
  const toks = tokenizer.run();

  // logical lines
  const lines: { start: number; end: number; indent: number; line: number }[] = [];
  let start = 0;
  for (let i = 0; i < toks.length; i++) {
    if (toks[i]!.t !== "nl") continue;
    if (i > start) lines.push({ start, end: i, indent: tokenizer.indents.get(start) ?? 0, line: toks[start]!.line });
    start = i + 1;
  }
  const base = dedent(lines);

  const interp = new Interpreter(opts.screen);
  const skipped: SkippedStatement[] = [];
  const text = (a: number, b: number) => {
    const t = src.slice(toks[a]!.start, toks[b - 1]!.end).trim();
    return t.length > SKIPPED_CODE_MAX_CHARS ? `${t.slice(0, SKIPPED_CODE_MAX_CHARS)}...` : t;
  };
  const skip = (line: number, code: string, reason: string) => skipped.push({ line, code, reason });

  let block: { indent: number; line: number; kw: string } | null = null;
  for (const l of lines) {
    const indent = l.indent - base;
    if (block && indent > block.indent) {
      skip(l.line, text(l.start, l.end), `part of the unsupported '${block.kw}' block on line ${block.line}`);
      continue;
    }
    block = null;
    const first = toks[l.start]!;
    if (indent > 0) {
      skip(l.line, text(l.start, l.end), "unexpected indent");
      continue;
    }
    const err = toks.slice(l.start, l.end).find((t) => t.t === "err");
    if (err) {
      skip(err.line === l.line ? l.line : err.line, text(l.start, l.end), (err as { v: string }).v);
      continue;
    }
    const last = toks[l.end - 1]!;
    if ((first.t === "name" && COMPOUND.has(first.v)) || (last.t === "op" && last.v === ":")) {
      const kw = first.t === "name" ? first.v : ":";
      skip(l.line, text(l.start, l.end), `'${kw}' statements (control flow, definitions) are not supported`);
      interp.poisonTargets(toks, l.start, l.end);
      block = { indent, line: l.line, kw };
      continue;
    }
    // statements split on top-level ";"
    let s = l.start;
    let depth = 0;
    for (let i = l.start; i <= l.end; i++) {
      const t = toks[i]!;
      if (i < l.end && t.t === "op") {
        if (t.v === "(" || t.v === "[" || t.v === "{") depth++;
        else if (t.v === ")" || t.v === "]" || t.v === "}") depth--;
      }
      if (i < l.end && !(t.t === "op" && t.v === ";" && depth === 0)) continue;
      const stmtLine = toks[s]?.line ?? l.line;
      if (i === s) {
        if (i < l.end) skip(stmtLine, ";", "empty statement");
        s = i + 1;
        continue;
      }
      try {
        const stmt = new StmtParser(toks, s, i).parse();
        interp.run(stmt, stmtLine);
      } catch (e) {
        if (!(e instanceof Unsupported)) throw e;
        skip(stmtLine, text(s, i), e.message);
        interp.poisonTargets(toks, s, i);
      }
      s = i + 1;
    }
  }
  for (const h of interp.state.held)
    skip(h.line, `keyDown('${h.key}')`, `keyDown('${h.key}') is never released with keyUp`);
  if (interp.state.down) skip(interp.state.down.line, "mouseDown()", "mouseDown() is never released with mouseUp()");
  skipped.sort((x, y) => x.line - y.line);

  if (strict && skipped.length > 0) {
    const details = skipped.slice(0, MAX_STRICT_DETAILS).map((s) => ({ path: `code:${s.line}`, message: s.reason }));
    throw new CoreError("VALIDATION_ERROR", `code:${skipped[0]!.line}: ${skipped[0]!.reason}`, { details });
  }
  return { actions: interp.actions, skipped };
}
