// Building DOM nodes. Text is always set as text (never parsed as HTML): what tools return
// cannot inject anything into the page.

const PROPERTIES = new Set(["value", "checked", "disabled", "selected", "hidden", "open"]);

/** `h("p", {class: "x"}, "text", child)`: an element with attributes and children. */
export function h(tag, attributes = {}, ...children) {
  const element = document.createElement(tag);
  for (const [key, value] of Object.entries(attributes)) {
    if (value === undefined || value === null || value === false) continue;
    if (key === "class") element.className = value;
    else if (key === "dataset") Object.assign(element.dataset, value);
    else if (key.startsWith("on") && typeof value === "function") {
      element.addEventListener(key.slice(2), value);
    } else if (PROPERTIES.has(key)) element[key] = value;
    else element.setAttribute(key, value === true ? "" : String(value));
  }
  append(element, children);
  return element;
}

function append(element, children) {
  for (const child of children.flat(Infinity)) {
    if (child !== null && child !== undefined && child !== false) element.append(child instanceof Node ? child : String(child));
  }
}

/** Replaces the children of `element`. */
export function fill(element, ...children) {
  element.replaceChildren();
  append(element, children);
  return element;
}

/** A table: its caption and a header cell per column (each when given), then the rows. */
export function table(attributes, caption, columns, rows) {
  const head = columns.map((column) => h("th", { scope: "col" }, String(column)));
  return h(
    "table",
    attributes,
    caption ? h("caption", {}, caption) : null,
    head.length ? h("thead", {}, h("tr", {}, head)) : null,
    h("tbody", {}, rows),
  );
}

/** Formatted JSON in a <pre>. */
export function jsonBlock(value, attributes = {}) {
  return h("pre", { class: "json", ...attributes }, JSON.stringify(value, null, 2));
}

let counter = 0;

/** A fresh id for an element, with a readable prefix. */
export function newId(prefix) {
  counter += 1;
  return `${prefix}-${counter}`;
}
