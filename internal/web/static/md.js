// A small Markdown renderer for lab tasks and exam questions, whose API
// fields are Markdown without rendered HTML. It builds DOM nodes (text is
// always text), and knows what those fields use: paragraphs, headings, lists,
// fenced code, `code`, **strong**, *emphasis* and [links](https://...).
import { h } from "./dom.js";

/** markdown renders src into a fragment. */
export function markdown(src) {
  const frag = document.createDocumentFragment();
  const lines = String(src || "").replace(/\r\n?/g, "\n").split("\n");
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (/^\s*$/.test(line)) { i++; continue; }
    const fence = line.match(/^\s*(```|~~~)(\S*)/);
    if (fence) {
      const body = [];
      for (i++; i < lines.length && !lines[i].trim().startsWith(fence[1]); i++) body.push(lines[i]);
      i++;
      frag.append(h("pre", null, h("code", { class: fence[2] ? "language-" + fence[2] : null }, body.join("\n"))));
      continue;
    }
    const head = line.match(/^(#{1,6})\s+(.*)$/);
    if (head) {
      frag.append(h("h" + Math.min(6, head[1].length + 2), null, inline(head[2])));
      i++;
      continue;
    }
    const item = /^\s*([-*+]|\d+[.)])\s+/;
    if (item.test(line)) {
      const ordered = /^\s*\d/.test(line);
      const list = h(ordered ? "ol" : "ul");
      while (i < lines.length && item.test(lines[i])) {
        let text = lines[i].replace(item, "");
        for (i++; i < lines.length && /^\s{2,}\S/.test(lines[i]) && !item.test(lines[i]); i++) text += " " + lines[i].trim();
        list.append(h("li", null, inline(text)));
      }
      frag.append(list);
      continue;
    }
    const para = [];
    while (i < lines.length && !/^\s*$/.test(lines[i]) && !item.test(lines[i]) && !/^\s*(```|~~~)/.test(lines[i]) && !/^#{1,6}\s/.test(lines[i])) {
      para.push(lines[i].trim());
      i++;
    }
    frag.append(h("p", null, inline(para.join(" "))));
  }
  return frag;
}

/** inline renders code spans, strong, emphasis and links in one line. */
export function inline(text) {
  const out = [];
  const re = /`([^`]+)`|\*\*([^*]+)\*\*|\*([^*\s][^*]*)\*|\b_([^_]+)_\b|\[([^\]]+)\]\(([^)\s]+)\)/g;
  let last = 0, m;
  while ((m = re.exec(text))) {
    if (m.index > last) out.push(text.slice(last, m.index));
    if (m[1] !== undefined) out.push(h("code", null, m[1]));
    else if (m[2] !== undefined) out.push(h("strong", null, inline(m[2])));
    else if (m[3] !== undefined) out.push(h("em", null, inline(m[3])));
    else if (m[4] !== undefined) out.push(h("em", null, m[4]));
    else {
      const safe = /^(https?:\/\/|\/|#)/.test(m[6]);
      out.push(safe ? h("a", { href: m[6], rel: "noopener noreferrer" }, m[5]) : m[5]);
    }
    last = re.lastIndex;
  }
  if (last < text.length) out.push(text.slice(last));
  return out;
}
