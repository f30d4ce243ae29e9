// A form generated from a tool's JSON Schema: strings, numbers with their bounds, booleans,
// enums, arrays, nested objects, defaults and required marks. It reads the arguments back,
// checks them as the schema says before they are sent, and shows errors next to the fields
// they name (the page's own, and the server's INVALID_PARAMS answer).
// What it cannot draw as fields (unions, free-form objects...) is a JSON text box.

import { h, newId } from "./dom.js";
import { formatPath, pathKey } from "./paths.js";

const MAX_DEPTH = 8;

/** Follows a local `$ref` (`#/$defs/Name`) in `root`; null when it cannot. */
function resolveRef(ref, root) {
  if (typeof ref !== "string" || !ref.startsWith("#")) return null;
  let node = root;
  for (const raw of ref.slice(1).split("/").filter(Boolean)) {
    const part = decodeURIComponent(raw).replaceAll("~1", "/").replaceAll("~0", "~");
    if (node === null || typeof node !== "object" || !(part in node)) return null;
    node = node[part];
  }
  return node && typeof node === "object" ? node : null;
}

/**
 * What kind of field a schema is drawn as: `{kind, schema, nullable}`. `kind` is one of
 * object, array, string, number, integer, boolean, enum, const, json.
 */
export function describe(schema, root, depth = 0) {
  let nullable = false;
  if (schema === true || schema === undefined || schema === null) schema = {};
  if (typeof schema !== "object" || depth > MAX_DEPTH) return { kind: "json", schema: {}, nullable };
  for (let hops = 0; schema.$ref && hops < MAX_DEPTH; hops++) {
    const target = resolveRef(schema.$ref, root);
    if (!target) return { kind: "json", schema, nullable };
    const { $ref, ...rest } = schema;
    schema = { ...target, ...rest };
  }
  if (Array.isArray(schema.allOf) && schema.allOf.length === 1) {
    const { allOf, ...rest } = schema;
    const inner = describe(allOf[0], root, depth + 1);
    return { ...inner, schema: { ...inner.schema, ...rest } };
  }
  for (const key of ["anyOf", "oneOf"]) {
    if (!Array.isArray(schema[key])) continue;
    const branches = schema[key].filter((b) => !(b && b.type === "null"));
    nullable = branches.length < schema[key].length;
    if (branches.length !== 1) return { kind: "json", schema, nullable };
    const { [key]: _, ...rest } = schema;
    const inner = describe(branches[0], root, depth + 1);
    return { ...inner, schema: { ...inner.schema, ...rest }, nullable: nullable || inner.nullable };
  }
  let type = schema.type;
  if (Array.isArray(type)) {
    const types = type.filter((t) => t !== "null");
    nullable = types.length < type.length;
    type = types.length === 1 ? types[0] : undefined;
    if (types.length !== 1 && !schema.enum) return { kind: "json", schema, nullable };
  }
  if ("const" in schema) return { kind: "const", schema, nullable };
  if (Array.isArray(schema.enum)) {
    return { kind: "enum", schema, nullable: nullable || schema.enum.includes(null) };
  }
  if (type === undefined) type = schema.properties ? "object" : schema.items ? "array" : undefined;
  if (type === "object" && schema.properties && typeof schema.properties === "object") {
    return { kind: "object", schema, nullable };
  }
  if (type === "array" && schema.items && typeof schema.items === "object" && !Array.isArray(schema.items)) {
    return { kind: "array", schema, nullable };
  }
  if (["string", "number", "integer", "boolean"].includes(type)) return { kind: type, schema, nullable };
  return { kind: "json", schema, nullable };
}

function plural(count, noun) {
  return `${count} ${noun}${count === 1 ? "" : "s"}`;
}

function breaksPattern(value, pattern) {
  try {
    return !new RegExp(pattern, "u").test(value);
  } catch {
    return false; // a pattern this browser cannot compile: the server checks it
  }
}

/**
 * The constraints each kind of field checks: `[keyword, type of its value, help text, whether
 * a value breaks it, error]`; without an error of its own, the error is "must be " + the text.
 */
const LIMITS = {
  string: [
    ["minLength", "number", (n) => `at least ${plural(n, "character")}`, (v, n) => [...v].length < n],
    ["maxLength", "number", (n) => `at most ${plural(n, "character")}`, (v, n) => [...v].length > n],
    ["pattern", "string", (p) => `matching ${p}`, breaksPattern, (p) => `must match the pattern ${p}`],
    ["format", "string", (f) => `format ${f}`, () => false],
  ],
  number: [
    ["exclusiveMinimum", "number", (n) => `more than ${n}`, (v, n) => v <= n],
    ["minimum", "number", (n) => `at least ${n}`, (v, n) => v < n],
    ["exclusiveMaximum", "number", (n) => `less than ${n}`, (v, n) => v >= n],
    ["maximum", "number", (n) => `at most ${n}`, (v, n) => v > n],
    ["multipleOf", "number", (n) => `a multiple of ${n}`, (v, n) => n > 0 && Math.abs(v / n - Math.round(v / n)) > 1e-9],
  ],
  array: [
    ["minItems", "number", (n) => `at least ${plural(n, "item")}`, (v, n) => v.length < n, (n) => `needs at least ${plural(n, "item")}`],
    ["maxItems", "number", (n) => `at most ${plural(n, "item")}`, (v, n) => v.length > n, (n) => `must have at most ${plural(n, "item")}`],
    ["uniqueItems", "boolean", () => "no repeats", (v) => new Set(v.map((x) => JSON.stringify(x))).size < v.length, () => "must not repeat an item"],
  ],
};
LIMITS.integer = [[null, null, () => "a whole number", (v) => !Number.isInteger(v)], ...LIMITS.number];

/** The constraints a field of `kind` checks that `schema` declares: `{text, broken(value), error}`. */
function limitsOf(kind, schema) {
  const s = { ...schema };
  // Draft 4 writes an exclusive bound as `true` beside the inclusive one.
  if (s.exclusiveMinimum === true) s.exclusiveMinimum = s.minimum;
  if (s.exclusiveMaximum === true) s.exclusiveMaximum = s.maximum;
  return (LIMITS[kind] || [])
    .filter(([keyword, type]) => keyword === null || (typeof s[keyword] === type && s[keyword] !== false))
    .map(([keyword, , text, broken, error]) => ({
      text: text(s[keyword]),
      broken: (value) => broken(value, s[keyword]),
      error: error ? error(s[keyword]) : `must be ${text(s[keyword])}`,
    }));
}

function constraintsText(kind, schema) {
  const parts = limitsOf(kind, schema).map((limit) => limit.text);
  if ("default" in schema) parts.push(`default ${JSON.stringify(schema.default)}`);
  return parts.join(", ");
}

/** The form of one schema. `element` is its DOM; see the module comment. */
export class SchemaForm {
  constructor(schema, { idPrefix = "arg" } = {}) {
    this.root = schema && typeof schema === "object" ? schema : {};
    this.idPrefix = idPrefix;
    this.fields = new Map(); // path key -> node, for the errors
    this.errors = [];
    this.check = true;
    const described = describe(this.root, this.root);
    // A root the form cannot draw (`{"type": "object"}` alone) is a JSON box that may be empty.
    this.top = this.node(described, [], { required: described.kind !== "json", isRoot: true });
    this.element = h("div", { class: "schema-form" }, this.top.element);
  }

  node(described, path, options) {
    let Kind = KINDS[described.kind] || JsonField;
    // A checkbox cannot say "not given": an optional boolean without a default is a choice
    // of three, so leaving it alone leaves it out.
    if (Kind === BooleanField && !options.required && !("default" in described.schema)) Kind = EnumField;
    const node = new Kind(this, described, path, options);
    this.fields.set(pathKey(path), node);
    return node;
  }

  /** The arguments: `{value, errors}`; with `check`, every constraint is checked. */
  read({ check = true } = {}) {
    this.errors = [];
    this.check = check;
    const { present, value } = this.top.read();
    return { value: present ? value : {}, errors: this.errors };
  }

  fill(value) {
    this.top.fill(value);
  }

  clearErrors() {
    for (const node of this.fields.values()) node.showError([]);
  }

  /** Shows each error next to the field its path names (or the nearest field above it, if any). */
  showErrors(errors) {
    this.clearErrors();
    const byNode = new Map();
    for (const error of errors) {
      let node = null;
      for (let n = error.path.length; n > 0 && !node; n--) {
        node = this.fields.get(pathKey(error.path.slice(0, n))) || null;
      }
      if (!node || node === this.top) continue; // about the arguments as a whole
      const exact = pathKey(node.path) === pathKey(error.path);
      const text = exact ? error.message : `${formatPath(error.path)}: ${error.message}`;
      if (!byNode.has(node)) byNode.set(node, []);
      byNode.get(node).push(text);
    }
    for (const [node, messages] of byNode) node.showError(messages);
  }

  /** The first field showing an error, to move the focus to. */
  firstInvalid() {
    for (const node of this.fields.values()) if (node.invalid) return node;
    return null;
  }
}

class Field {
  constructor(form, described, path, { required = false, label = null, isRoot = false } = {}) {
    this.form = form;
    this.schema = described.schema;
    this.kind = described.kind;
    this.nullable = described.nullable;
    this.path = path;
    this.shownPath = formatPath(path);
    this.required = required;
    this.isRoot = isRoot;
    this.id = newId(form.idPrefix);
    this.describedBy = `${this.id}-help ${this.id}-error`;
    this.label = label ?? (path.length ? String(path[path.length - 1]) : "arguments");
    this.errorBox = h("p", { class: "field-error", id: `${this.id}-error`, hidden: true });
    this.invalid = false;
  }

  helpText() {
    const description = this.schema.description || "";
    const limits = constraintsText(this.kind, this.schema);
    return [description, limits].filter(Boolean).join(" — ");
  }

  labelContent() {
    return [
      h("span", { class: "name" }, this.label),
      this.schema.title && this.schema.title !== this.label ? h("span", { class: "title" }, ` ${this.schema.title}`) : null,
      this.required ? h("span", { class: "required", "aria-hidden": "true", title: "required" }, " *") : null,
    ];
  }

  /** The attributes of the field's input, with `extra` (a null drops one). */
  attributes(extra) {
    return {
      id: this.id,
      name: this.shownPath,
      "aria-describedby": this.describedBy,
      "aria-required": this.required ? "true" : null,
      ...extra,
    };
  }

  help() {
    const text = this.helpText();
    return h("p", { class: "help", id: `${this.id}-help`, hidden: !text }, text);
  }

  showError(messages) {
    this.invalid = messages.length > 0;
    this.errorBox.textContent = messages.join("; ");
    this.errorBox.hidden = !this.invalid;
    if (this.invalid) this.input?.setAttribute("aria-invalid", "true");
    else this.input?.removeAttribute("aria-invalid");
  }

  focus() {
    this.input?.focus();
  }

  /** Shows `value` in the field (undefined: its default). */
  fill(value) {
    this.show(value === undefined ? this.schema.default : value);
  }

  /** Whether `value` is what the field holds before anyone types (its default). */
  untouched(value) {
    const initial = "default" in this.schema ? this.schema.default : this.kind === "boolean" ? false : undefined;
    return JSON.stringify(value) === JSON.stringify(initial);
  }

  /** Records an error of this field's value. */
  fail(message) {
    this.form.errors.push({ path: this.path, message });
  }

  /** `value` as read, with an error for each constraint it breaks (when the form checks). */
  checked(value) {
    for (const limit of this.form.check ? limitsOf(this.kind, this.schema) : []) {
      if (limit.broken(value)) this.fail(limit.error);
    }
    return { present: true, value };
  }

  /** What is read when nothing was given: null for a required nullable field, else absent. */
  absent() {
    if (this.required && this.nullable) return { present: true, value: null };
    if (this.required && this.form.check) this.fail("Required: enter a value");
    return { present: false };
  }

  /** The common frame of a one-input field (`this.input`), which starts with its default. */
  frame(input, { inline = false } = {}) {
    this.fill(undefined);
    const label = h("label", { for: this.id }, this.labelContent());
    return h(
      "div",
      { class: inline ? "field inline" : "field", dataset: { path: this.shownPath, kind: this.kind } },
      inline ? [input, label] : [label, input],
      this.help(),
      this.errorBox,
    );
  }

  /** The frame of a field of fields (an object's, an array's). */
  fieldset(...children) {
    return h(
      "fieldset",
      { class: `field ${this.kind}`, dataset: { path: this.shownPath, kind: this.kind }, "aria-describedby": this.describedBy },
      h("legend", {}, this.labelContent()),
      this.help(),
      children,
      this.errorBox,
    );
  }
}

class StringField extends Field {
  constructor(...args) {
    super(...args);
    const long = (this.schema.maxLength ?? 0) > 200 || this.schema.format === "textarea";
    const extra = { type: long ? null : "text", maxlength: this.schema.maxLength, spellcheck: "false", autocomplete: "off" };
    this.input = h(long ? "textarea" : "input", this.attributes(extra));
    this.element = this.frame(this.input);
  }

  show(value) {
    this.input.value = typeof value === "string" ? value : value === undefined || value === null ? "" : String(value);
  }

  read() {
    const value = this.input.value;
    if (value === "") return this.absent();
    return this.checked(value);
  }
}

class NumberField extends Field {
  constructor(...args) {
    super(...args);
    const s = this.schema;
    const min = typeof s.minimum === "number" ? s.minimum : typeof s.exclusiveMinimum === "number" ? s.exclusiveMinimum : null;
    const max = typeof s.maximum === "number" ? s.maximum : typeof s.exclusiveMaximum === "number" ? s.exclusiveMaximum : null;
    const integer = this.kind === "integer";
    const step = s.multipleOf ?? (integer ? 1 : "any");
    const inputmode = integer ? "numeric" : "decimal";
    this.input = h("input", this.attributes({ type: "number", inputmode, step, min, max }));
    this.element = this.frame(this.input);
  }

  show(value) {
    this.input.value = typeof value === "number" ? String(value) : "";
  }

  read() {
    if (this.input.validity.badInput) {
      if (this.form.check) this.fail("Enter a number");
      return { present: false };
    }
    if (this.input.value === "") return this.absent();
    return this.checked(Number(this.input.value));
  }
}

class BooleanField extends Field {
  constructor(...args) {
    super(...args);
    this.input = h("input", this.attributes({ type: "checkbox", "aria-required": null }));
    this.element = this.frame(this.input, { inline: true });
  }

  show(value) {
    this.input.checked = value === true;
  }

  read() {
    return { present: true, value: this.input.checked };
  }
}

/** A choice among the schema's `enum`, or of true and false (an optional boolean's). */
class EnumField extends Field {
  constructor(...args) {
    super(...args);
    this.options = this.kind === "boolean" ? [true, false] : this.schema.enum;
    const unset = !this.required || !("default" in this.schema);
    this.input = h(
      "select",
      this.attributes(),
      unset ? h("option", { value: "" }, this.required ? "(choose one)" : "(not set)") : null,
      this.options.map((option, index) =>
        h("option", { value: String(index) }, typeof option === "string" ? option : JSON.stringify(option)),
      ),
    );
    this.element = this.frame(this.input);
  }

  helpText() {
    return this.schema.description || ("default" in this.schema ? `default ${JSON.stringify(this.schema.default)}` : "");
  }

  show(value) {
    const index = this.options.findIndex((option) => JSON.stringify(option) === JSON.stringify(value));
    this.input.value = index === -1 ? "" : String(index);
  }

  read() {
    if (this.input.value === "") return this.absent();
    return { present: true, value: this.options[Number(this.input.value)] };
  }
}

class ConstField extends Field {
  constructor(...args) {
    super(...args);
    const value = JSON.stringify(this.schema.const);
    const extra = { type: "text", readonly: true, value, name: null, "aria-required": null };
    this.input = h("input", this.attributes(extra));
    this.element = this.frame(this.input);
  }

  fill() {}

  read() {
    return { present: true, value: this.schema.const };
  }
}

class JsonField extends Field {
  constructor(...args) {
    super(...args);
    this.input = h("textarea", this.attributes({ class: "json-input", rows: 3, spellcheck: "false" }));
    this.element = this.frame(this.input);
  }

  helpText() {
    const { description, ...rest } = this.schema;
    const shape = Object.keys(rest).length ? `JSON matching ${JSON.stringify(rest)}` : "any JSON value";
    return [description, shape].filter(Boolean).join(" — ");
  }

  show(value) {
    this.input.value = value === undefined ? "" : JSON.stringify(value, null, 2);
  }

  read() {
    const text = this.input.value.trim();
    if (text === "") return this.absent();
    try {
      return { present: true, value: JSON.parse(text) };
    } catch (error) {
      this.fail(`not valid JSON: ${error.message}`);
      return { present: false };
    }
  }
}

class ObjectField extends Field {
  constructor(...args) {
    super(...args);
    const required = new Set(Array.isArray(this.schema.required) ? this.schema.required : []);
    this.children = Object.entries(this.schema.properties).map(([name, sub]) => {
      const described = describe(sub, this.form.root, this.path.length + 1);
      return [name, this.form.node(described, [...this.path, name], { required: required.has(name) })];
    });
    const body = this.children.map(([, child]) => child.element);
    this.element = this.isRoot ? h("div", { class: "fields" }, body) : this.fieldset(body);
  }

  focus() {
    this.children[0]?.[1].focus();
  }

  untouched(value) {
    if (value === null || value === undefined) return true;
    return this.children.every(([name, child]) => !(name in value) || child.untouched(value[name]));
  }

  fill(value) {
    const object = value && typeof value === "object" && !Array.isArray(value) ? value : {};
    for (const [name, child] of this.children) child.fill(value === undefined ? undefined : object[name]);
  }

  read() {
    const before = this.form.errors.length;
    const value = {};
    let given = false;
    for (const [name, child] of this.children) {
      const read = child.read();
      if (!read.present) continue;
      value[name] = read.value;
      given ||= !child.untouched(read.value);
    }
    if (!this.isRoot && !given && (!this.required || this.nullable)) {
      // Left out as a whole (or null): what its fields would need is not an error.
      this.form.errors.length = before;
      return this.required ? { present: true, value: null } : { present: false };
    }
    return { present: true, value };
  }
}

class ArrayField extends Field {
  constructor(...args) {
    super(...args);
    this.itemSchema = describe(this.schema.items, this.form.root, this.path.length + 1);
    this.items = [];
    this.list = h("ol", { class: "items" });
    this.addButton = h(
      "button",
      { type: "button", class: "add", "aria-label": `Add an item to ${this.shownPath}`, onclick: () => this.add(undefined, true) },
      "Add item",
    );
    this.element = this.fieldset(this.list, this.addButton);
    this.fill(undefined);
  }

  focus() {
    (this.items[0]?.node ?? this.addButton).focus();
  }

  untouched(value) {
    return super.untouched(value) || (Array.isArray(value) && !value.length);
  }

  add(value, focus = false) {
    const index = this.items.length;
    const path = [...this.path, index];
    const node = this.form.node(this.itemSchema, path, { required: true, label: formatPath(path) });
    node.fill(value);
    const label = `Remove ${formatPath(path)}`;
    const remove = h("button", { type: "button", class: "remove", "aria-label": label, onclick: () => this.remove(index) }, "Remove");
    const row = h("li", {}, node.element, remove);
    this.items.push({ node, row });
    this.list.append(row);
    if (focus) node.focus();
  }

  remove(index) {
    this.rebuild(this.items.filter((_, i) => i !== index).map(({ node }) => node.read().value));
    (this.items[Math.min(index, this.items.length - 1)]?.node ?? this.addButton).focus();
  }

  rebuild(values) {
    const depth = this.path.length; // the form forgets the fields of the old items
    for (const [key, field] of this.form.fields) {
      if (field.path.length > depth && pathKey(field.path.slice(0, depth)) === pathKey(this.path)) this.form.fields.delete(key);
    }
    this.items = [];
    this.list.replaceChildren();
    for (const value of values) this.add(value);
  }

  show(value) {
    if (value === undefined && this.required) {
      // A required list starts with the fewest items it may have, empty.
      value = Array(Math.min(this.schema.minItems ?? 0, 10)).fill(undefined);
    }
    this.rebuild(Array.isArray(value) ? value : []);
  }

  read() {
    const errorsBefore = this.form.errors.length;
    const values = [];
    for (const { node } of this.items) {
      const read = node.read();
      if (read.present) values.push(read.value);
      else if (this.form.check && this.form.errors.length === errorsBefore) {
        this.form.errors.push({ path: node.path, message: "Empty: enter a value or remove the item" });
      }
    }
    if (!values.length && !this.items.length && !this.required) return { present: false };
    return this.checked(values);
  }
}

const KINDS = {
  object: ObjectField,
  array: ArrayField,
  string: StringField,
  number: NumberField,
  integer: NumberField,
  boolean: BooleanField,
  enum: EnumField,
  const: ConstField,
  json: JsonField,
};
