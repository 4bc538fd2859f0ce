// A minimal DOM for running the graph page's script under node: enough for createElementNS,
// attributes, children, classList and listeners. Prints the drawn SVG as JSON.
const fs = require("fs");
const page = fs.readFileSync(process.argv[2], "utf8");
const data = page.match(/<script id="stack-data" type="application\/json">([\s\S]*?)<\/script>/)[1];
const code = page.match(/<script>([\s\S]*?)<\/script>/)[1];
class El {
  constructor(tag) { this.tag = tag; this.attrs = {}; this.children = []; this.textContent = "";
    this.listeners = {}; const cls = new Set(); this.classList = {
      toggle: (c, on) => { on ? cls.add(c) : cls.delete(c); }, contains: c => cls.has(c) }; }
  setAttribute(k, v) { this.attrs[k] = String(v); }
  appendChild(c) { this.children.push(c); return c; }
  addEventListener(type, fn) { this.listeners[type] = fn; }
}
const svg = new El("svg"), byId = {svg, "stack-data": {textContent: data},
  details: new El("div"), filter: new El("input")};
global.document = {getElementById: id => byId[id], createElementNS: (ns, tag) => new El(tag)};
global.window = {addEventListener: () => {}};
eval(code);
const texts = g => g.children.filter(c => c.tag === "text").map(c => c.textContent);
const nodes = svg.children.filter(c => c.attrs.class && c.attrs.class.startsWith("node"));
// click the first node: its relations are listed
nodes[0].listeners.mousedown({clientX: 0, clientY: 0});
console.log(JSON.stringify({
  nodes: nodes.map(g => ({id: g.attrs["data-id"], text: texts(g), transform: g.attrs.transform})),
  edges: svg.children.filter(c => c.attrs.class === "edge").map(g => texts(g)[0]),
  details: byId.details.innerHTML, width: svg.attrs.width,
}));
