"""Run the annotation form's JavaScript under node against the DOM parts it reads, and return its CSV download."""

from __future__ import annotations

import html.parser
import json
import shutil
import subprocess
from pathlib import Path

NODE_HARNESS = r"""
const fs = require("fs");
const page = JSON.parse(fs.readFileSync(process.argv[2], "utf8"));
const inputs = page.inputs.map(i => ({...i}));
const elements = {};
for (const id of ["progress", "sheet", "download"]) {
  elements[id] = {listeners: {}, textContent: "", addEventListener(t, f) { this.listeners[t] = f; }};
}
const items = page.items.map(it => ({
  dataset: {item: it.id}, classList: {toggle() {}},
  querySelector(sel) {
    let m = sel.match(/^input\[name="(.+)"\]:checked$/);
    if (m) return inputs.find(i => i.name === m[1] && i.checked) || null;
    m = sel.match(/^\.answer\[data-side="(a|b)"\]$/);
    if (m) return {textContent: it[m[1]]};
    throw new Error("unexpected selector " + sel);
  },
}));
let blob = null, fileName = null;
global.document = {
  querySelectorAll(sel) { if (sel === "article.item") return items; throw new Error(sel); },
  querySelector(sel) {
    const m = sel.match(/^input\[name="(.+)"\]\[value="(.+)"\]$/);
    return inputs.find(i => i.name === m[1] && i.value === m[2]) || null;
  },
  getElementById(id) { return elements[id]; },
  createElement() { return {click() { fileName = this.download; }, remove() {}}; },
  body: {appendChild() {}},
};
global.localStorage = {getItem() { return null; }, setItem() {}};
global.confirm = () => true;
URL.createObjectURL = b => { blob = b; return "blob:sheet"; };
eval(page.script);
elements.download.listeners.click();
blob.text().then(text => process.stdout.write(
  JSON.stringify({fileName, progress: elements.progress.textContent, text})));
"""


class Page(html.parser.HTMLParser):
    """The parts of the DOM the form's script reads: items, answer texts, radio buttons, script."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.items, self.inputs, self.script, self.side, self.in_script = [], [], "", None, False

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if tag == "article":
            self.items.append({"id": a["data-item"], "a": "", "b": ""})
        elif tag == "div" and a.get("class") == "answer":
            self.side = a["data-side"]
        elif tag == "input":
            self.inputs.append({"name": a["name"], "value": a["value"], "checked": "checked" in a})
        self.in_script = tag == "script"

    def handle_endtag(self, tag):
        self.side = None if tag == "div" else self.side
        self.in_script = False

    def handle_data(self, data):
        if self.side:
            self.items[-1][self.side] += data
        if self.in_script:
            self.script += data


def parse(page_html: str) -> Page:
    """The form's items, radio buttons and script as a browser would read them.

    A browser turns CR LF and lone CR into LF before parsing (HTML's input stream preprocessing).
    """
    page = Page()
    page.feed(page_html.replace("\r\n", "\n").replace("\r", "\n"))
    page.close()
    return page


def node() -> str | None:
    """Path of node, or None."""
    return shutil.which("node")


def download(page_html: str, work: Path) -> dict[str, str]:
    """Press the form's download button under node: {"fileName", "progress", "text"} of the CSV it offers."""
    page = parse(page_html)
    (work / "page.json").write_text(json.dumps({"items": page.items, "inputs": page.inputs,
                                                 "script": page.script}), "utf-8")
    (work / "harness.js").write_text(NODE_HARNESS, "utf-8")
    result = subprocess.run([node(), str(work / "harness.js"), str(work / "page.json")],
                            capture_output=True, text=True, timeout=30, check=True)
    return json.loads(result.stdout)
