// Paths into the arguments, written the way kosong's validation messages write them
// (kosong.tooling's `json_path`): `location.latitude`, `stops[0]`, `['max-results']`.
// A path is a list of segments: property names (strings) and item indexes (numbers).

const IDENTIFIER = /^[\p{XID_Start}_][\p{XID_Continue}]*$/u;
const NAME = /^[\p{XID_Start}_][\p{XID_Continue}]*/u;
const REPR = { "\n": "\\n", "\r": "\\r", "\t": "\\t" };

/** The text of a path, as the server writes it. */
export function formatPath(segments) {
  let out = "";
  for (const part of segments) {
    if (typeof part === "number") out += `[${part}]`;
    else if (IDENTIFIER.test(part)) out += out ? `.${part}` : part;
    else out += `[${pythonRepr(part)}]`;
  }
  return out;
}

/** A string as Python's repr() writes it (what the server's messages quote names with). */
function pythonRepr(text) {
  const quote = text.includes("'") && !text.includes('"') ? '"' : "'";
  let out = "";
  for (const ch of text) {
    const code = ch.codePointAt(0);
    if (ch === "\\" || ch === quote) out += "\\" + ch;
    else if (ch in REPR) out += REPR[ch];
    else if (code < 0x20 || code === 0x7f) out += "\\x" + code.toString(16).padStart(2, "0");
    else out += ch;
  }
  return quote + out + quote;
}

/** A key for a path, to find the field it names. */
export function pathKey(segments) {
  return JSON.stringify(segments);
}

const ESCAPES = { n: "\n", r: "\r", t: "\t", "\\": "\\", "'": "'", '"': '"', "0": "\0" };

/**
 * Reads a path at the start of `text`: `[segments, rest]`, or null when `text` does not
 * start with one. Python's repr quoting (single or double quotes, backslash escapes) is
 * understood.
 */
export function readPath(text) {
  const segments = [];
  let i = 0;
  for (;;) {
    const dot = text[i] === "." && segments.length > 0; // a name comes first, or after a dot
    const name = i === 0 || dot ? NAME.exec(text.slice(dot ? i + 1 : i)) : null;
    const index = text[i] === "[" ? /^\[(\d+)\]/.exec(text.slice(i)) : null;
    const quoted = text[i] === "[" && !index ? readQuoted(text, i + 1) : null;
    if (name) {
      segments.push(name[0]);
      i += name[0].length + (dot ? 1 : 0);
    } else if (index) {
      segments.push(Number(index[1]));
      i += index[0].length;
    } else if (quoted && text[quoted[1]] === "]") {
      segments.push(quoted[0]);
      i = quoted[1] + 1;
    } else {
      return segments.length ? [segments, text.slice(i)] : null;
    }
  }
}

function readQuoted(text, start) {
  const quote = text[start];
  if (quote !== "'" && quote !== '"') return null;
  let out = "";
  for (let i = start + 1; i < text.length; i++) {
    const ch = text[i];
    if (ch === quote) return [out, i + 1];
    if (ch !== "\\") {
      out += ch;
      continue;
    }
    const next = text[++i];
    if (next in ESCAPES) out += ESCAPES[next];
    else if (next === "x" || next === "u" || next === "U") {
      const width = { x: 2, u: 4, U: 8 }[next];
      const hex = text.slice(i + 1, i + 1 + width);
      if (!/^[0-9a-fA-F]+$/.test(hex) || hex.length !== width) return null;
      out += String.fromCodePoint(parseInt(hex, 16));
      i += width;
    } else return null;
  }
  return null;
}

const PREFIX = /^Error validating JSON arguments:\s*/;
const REQUIRED = /^['"](.+)['"] is a required property$/;

/**
 * The field errors in an INVALID_PARAMS message: `[{path, message}]`, where path is a list of
 * segments (empty: about the arguments as a whole). The message lists its errors separated by
 * "; ", each `<path>: <what is wrong>`; a part that does not start with a path continues the
 * one before.
 */
export function fieldErrors(message) {
  const text = String(message || "").replace(PREFIX, "");
  if (!PREFIX.test(String(message || ""))) return [{ path: [], message: text }];
  const found = [];
  for (const part of text.split("; ")) {
    const read = readPath(part);
    if (read && read[1].startsWith(": ")) {
      found.push({ path: read[0], message: read[1].slice(2) });
    } else if (found.length && !/^and \d+ more$/.test(part)) {
      found[found.length - 1].message += "; " + part;
    } else {
      found.push({ path: [], message: part });
    }
  }
  // JSON Schema says "'name' is a required property" at the object that lacks it.
  for (const error of found) {
    const required = REQUIRED.exec(error.message);
    if (required) {
      error.path = [...error.path, required[1]];
      error.message = "Field required";
    }
  }
  return found;
}
