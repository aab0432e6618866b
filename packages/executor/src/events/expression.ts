// The subset of CEL (Common Expression Language) that Inngest functions use to match events:
// trigger `if`, waitForEvent `if`/`match`, cancelOn `if`/`match`. Supported:
//   field access     event.data.user_id, async.data["key"], event.data.items[0]
//   literals         "str", 'str', 12, 1.5, -3, true, false, null
//   comparison       ==  !=  <  <=  >  >=
//   logic            &&  ||  !  and parentheses
// Anything else (functions, macros, `in`, arithmetic, ternaries) is rejected at parse time with an
// ExpressionError, so an unsupported expression fails loudly instead of silently never matching.
// Evaluation follows CEL's error semantics: reading a missing field, or comparing values of
// different types with < <= > >=, is an error; `false && error` is false, `true || error` is true;
// an expression that ends in an error (or in a non-boolean) does not match.

export class ExpressionError extends Error {
  override name = "ExpressionError";
}

type Node =
  | { t: "lit"; v: unknown }
  | { t: "var"; name: string }
  | { t: "get"; obj: Node; key: string | number }
  | { t: "not"; e: Node }
  | { t: "neg"; e: Node }
  | { t: "and" | "or"; l: Node; r: Node }
  | { t: "cmp"; op: CmpOp; l: Node; r: Node };

type CmpOp = "==" | "!=" | "<" | "<=" | ">" | ">=";

type Tok =
  | { k: "id"; v: string }
  | { k: "str"; v: string }
  | { k: "num"; v: number }
  | { k: "op"; v: string }
  | { k: "end" };

// "," is tokenized only so that list literals and calls fail with a precise message in the parser
const OPS = ["==", "!=", "<=", ">=", "&&", "||", "<", ">", "!", "(", ")", ".", "[", "]", "-", ","];

function tokenize(src: string): Tok[] {
  const out: Tok[] = [];
  let i = 0;
  while (i < src.length) {
    const c = src[i] as string;
    if (/\s/.test(c)) {
      i++;
      continue;
    }
    if (/[A-Za-z_]/.test(c)) {
      let j = i + 1;
      while (j < src.length && /[A-Za-z0-9_]/.test(src[j] as string)) j++;
      out.push({ k: "id", v: src.slice(i, j) });
      i = j;
      continue;
    }
    if (/[0-9]/.test(c) || (c === "." && /[0-9]/.test(src[i + 1] ?? ""))) {
      const m = /^(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?/.exec(src.slice(i));
      const text = (m as RegExpExecArray)[0];
      out.push({ k: "num", v: Number(text) });
      i += text.length;
      if (src[i] === "u" || src[i] === "U") i++; // CEL unsigned suffix
      continue;
    }
    if (c === '"' || c === "'") {
      let j = i + 1;
      let v = "";
      while (j < src.length && src[j] !== c) {
        if (src[j] === "\\") {
          const n = src[j + 1];
          const esc: Record<string, string> = { n: "\n", t: "\t", r: "\r", "\\": "\\", '"': '"', "'": "'" };
          if (n === undefined || !(n in esc)) throw new ExpressionError(`unsupported escape in string at ${j}`);
          v += esc[n];
          j += 2;
        } else {
          v += src[j];
          j++;
        }
      }
      if (j >= src.length) throw new ExpressionError(`unterminated string at ${i}`);
      out.push({ k: "str", v });
      i = j + 1;
      continue;
    }
    const op = OPS.find((o) => src.startsWith(o, i));
    if (!op) throw new ExpressionError(`unexpected character "${c}" at ${i}`);
    out.push({ k: "op", v: op });
    i += op.length;
  }
  out.push({ k: "end" });
  return out;
}

class Parser {
  private i = 0;
  constructor(
    private readonly toks: Tok[],
    private readonly src: string,
  ) {}

  private peek(): Tok {
    return this.toks[this.i] as Tok;
  }
  private next(): Tok {
    return this.toks[this.i++] as Tok;
  }
  private isOp(v: string): boolean {
    const t = this.peek();
    return t.k === "op" && t.v === v;
  }
  private expectOp(v: string): void {
    if (!this.isOp(v)) throw this.fail(`expected "${v}"`);
    this.i++;
  }
  private fail(why: string): ExpressionError {
    const t = this.peek();
    const at = t.k === "end" ? "end of input" : `"${"v" in t ? String(t.v) : ""}"`;
    return new ExpressionError(`unsupported expression ${JSON.stringify(this.src)}: ${why} at ${at}`);
  }

  parse(): Node {
    const n = this.or();
    if (this.peek().k !== "end") throw this.fail("unexpected token");
    return n;
  }
  private or(): Node {
    let l = this.and();
    while (this.isOp("||")) {
      this.i++;
      l = { t: "or", l, r: this.and() };
    }
    return l;
  }
  private and(): Node {
    let l = this.cmp();
    while (this.isOp("&&")) {
      this.i++;
      l = { t: "and", l, r: this.cmp() };
    }
    return l;
  }
  private cmp(): Node {
    const l = this.unary();
    const t = this.peek();
    if (t.k === "id" && t.v === "in") throw this.fail(`operator "in" is not supported`);
    if (t.k === "op" && ["==", "!=", "<", "<=", ">", ">="].includes(t.v)) {
      this.i++;
      const r = this.unary();
      const n2 = this.peek();
      if (n2.k === "op" && ["==", "!=", "<", "<=", ">", ">="].includes(n2.v)) throw this.fail("chained comparison");
      return { t: "cmp", op: t.v as CmpOp, l, r };
    }
    return l;
  }
  private unary(): Node {
    if (this.isOp("!")) {
      this.i++;
      return { t: "not", e: this.unary() };
    }
    if (this.isOp("-")) {
      this.i++;
      return { t: "neg", e: this.unary() };
    }
    return this.postfix(this.primary());
  }
  private primary(): Node {
    const t = this.next();
    if (t.k === "num") return { t: "lit", v: t.v };
    if (t.k === "str") return { t: "lit", v: t.v };
    if (t.k === "id") {
      if (t.v === "true") return { t: "lit", v: true };
      if (t.v === "false") return { t: "lit", v: false };
      if (t.v === "null") return { t: "lit", v: null };
      if (this.isOp("(")) {
        this.i--;
        throw this.fail(`function "${t.v}" is not supported`);
      }
      if (t.v === "in") {
        this.i--;
        throw this.fail(`operator "in" is not supported`);
      }
      return { t: "var", name: t.v };
    }
    if (t.k === "op" && t.v === "(") {
      const e = this.or();
      this.expectOp(")");
      return e;
    }
    this.i--;
    throw this.fail("expected a value");
  }
  private postfix(n: Node): Node {
    for (;;) {
      if (this.isOp(".")) {
        this.i++;
        const t = this.next();
        if (t.k !== "id") {
          this.i--;
          throw this.fail("expected a field name");
        }
        if (this.isOp("(")) throw this.fail(`method "${t.v}" is not supported`);
        n = { t: "get", obj: n, key: t.v };
      } else if (this.isOp("[")) {
        this.i++;
        const t = this.next();
        if (t.k !== "str" && t.k !== "num") {
          this.i--;
          throw this.fail("expected a string or integer index");
        }
        this.expectOp("]");
        n = { t: "get", obj: n, key: t.v };
      } else return n;
    }
  }
}

const ERR = Symbol("cel-error");
type Val = unknown | typeof ERR;

function evaluate(n: Node, vars: Record<string, unknown>): Val {
  switch (n.t) {
    case "lit":
      return n.v;
    case "var":
      return Object.hasOwn(vars, n.name) ? vars[n.name] : ERR;
    case "get": {
      const o = evaluate(n.obj, vars);
      if (o === ERR || o === null || typeof o !== "object") return ERR;
      if (Array.isArray(o)) {
        if (typeof n.key !== "number" || !Number.isInteger(n.key) || n.key < 0 || n.key >= o.length) return ERR;
        return o[n.key];
      }
      const key = String(n.key);
      return Object.hasOwn(o, key) ? (o as Record<string, unknown>)[key] : ERR;
    }
    case "not": {
      const v = evaluate(n.e, vars);
      return typeof v === "boolean" ? !v : ERR;
    }
    case "neg": {
      const v = evaluate(n.e, vars);
      return typeof v === "number" ? -v : ERR;
    }
    case "and": {
      const l = evaluate(n.l, vars);
      if (l === false) return false;
      const r = evaluate(n.r, vars);
      if (r === false) return false;
      return l === true && r === true ? true : ERR;
    }
    case "or": {
      const l = evaluate(n.l, vars);
      if (l === true) return true;
      const r = evaluate(n.r, vars);
      if (r === true) return true;
      return l === false && r === false ? false : ERR;
    }
    case "cmp": {
      const l = evaluate(n.l, vars);
      const r = evaluate(n.r, vars);
      if (l === ERR || r === ERR) return ERR;
      if (n.op === "==") return deepEqual(l, r);
      if (n.op === "!=") return !deepEqual(l, r);
      const bothNum = typeof l === "number" && typeof r === "number";
      const bothStr = typeof l === "string" && typeof r === "string";
      if (!bothNum && !bothStr) return ERR;
      const a = l as number | string;
      const b = r as number | string;
      if (n.op === "<") return a < b;
      if (n.op === "<=") return a <= b;
      if (n.op === ">") return a > b;
      return a >= b;
    }
  }
}

function deepEqual(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (a === null || b === null || typeof a !== "object" || typeof b !== "object") return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  if (Array.isArray(a) && Array.isArray(b)) return a.length === b.length && a.every((v, i) => deepEqual(v, b[i]));
  const ka = Object.keys(a as object);
  const kb = Object.keys(b as object);
  return (
    ka.length === kb.length &&
    ka.every(
      (k) =>
        Object.hasOwn(b as object, k) &&
        deepEqual((a as Record<string, unknown>)[k], (b as Record<string, unknown>)[k]),
    )
  );
}

export interface CompiledExpression {
  source: string;
  /** True only when the expression evaluates to boolean true without error. */
  matches(vars: Record<string, unknown>): boolean;
}

const cache = new Map<string, CompiledExpression>();

/** Parse an expression once (cached). Throws ExpressionError for anything outside the subset. */
export function compileExpression(source: string): CompiledExpression {
  const hit = cache.get(source);
  if (hit) return hit;
  const ast = new Parser(tokenize(source), source).parse();
  const compiled: CompiledExpression = { source, matches: (vars) => evaluate(ast, vars) === true };
  if (cache.size > 1000) cache.clear();
  cache.set(source, compiled);
  return compiled;
}

/** An absent or blank expression matches everything. */
export function expressionMatches(source: string | null | undefined, vars: Record<string, unknown>): boolean {
  if (source == null || source.trim() === "") return true;
  return compileExpression(source).matches(vars);
}
