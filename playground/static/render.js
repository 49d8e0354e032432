// Block Kit as Slack draws it, for the playground page. Every text is untrusted: it is
// HTML-escaped before any markup is added, and only http(s)/mailto URLs become links.
// `ctx` says who is who and what a click does: { userName(id), channel: {id, name},
// onAction(msg, block, element, value), chosen(msg, actionId) }.

const HTML_ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
export function escapeHtml(s) { return String(s).replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]); }
function unescapeSlack(s) {
  return String(s).replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
}
function safeUrl(url) { return /^(https?:|mailto:)/i.test(url) ? url : null; }
// The target shows on hover, as in Slack: a label never hides where a link goes.
function link(url, labelHtml) {
  const safe = safeUrl(url);
  if (!safe) return labelHtml;
  const href = escapeHtml(safe);
  return `<a href="${href}" title="${href}" target="_blank" rel="noopener noreferrer">${labelHtml}</a>`;
}
function mention(text) { return `<span class="mention">${escapeHtml(text)}</span>`; }
export function el(tag, cls, html) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (html !== undefined) node.innerHTML = html;
  return node;
}
function holes() {
  const held = [];
  const hold = (html) => { held.push(html); return `\u0000${held.length - 1}\u0000`; };
  const fill = (s) => s.replace(/\u0000(\d+)\u0000/g, (_, i) => held[Number(i)]);
  return { hold, fill };
}

// -- Slack mrkdwn -------------------------------------------------------------------------

function controlSequence(inner, ctx) {
  const bar = inner.indexOf("|");
  const target = bar < 0 ? inner : inner.slice(0, bar);
  const label = bar < 0 ? "" : unescapeSlack(inner.slice(bar + 1));
  if (target.startsWith("@")) return mention("@" + (label || ctx.userName(target.slice(1))));
  if (target.startsWith("#")) {
    const id = target.slice(1);
    return mention("#" + (label || (id === ctx.channel.id ? ctx.channel.name : id)));
  }
  if (target.startsWith("!")) {
    const cmd = target.slice(1);
    if (cmd.startsWith("date^")) return escapeHtml(label || cmd);
    if (cmd.startsWith("subteam^")) return mention(label || "@group");
    return mention("@" + cmd);
  }
  const url = unescapeSlack(target);
  if (safeUrl(url)) return link(url, escapeHtml(label || url));
  return escapeHtml("<" + unescapeSlack(inner) + ">");
}

function inline(s) {
  return s
    .replace(/(^|[^\w*])\*(?!\s)([^*\n]*?[^\s*])\*(?!\w)/g, "$1<b>$2</b>")
    .replace(/(^|[^\w_])_(?!\s)([^_\n]*?[^\s_])_(?!\w)/g, "$1<i>$2</i>")
    .replace(/(^|[^\w~])~(?!\s)([^~\n]*?[^\s~])~(?!\w)/g, "$1<s>$2</s>");
}

// Quote and list lines become <blockquote> / <ul> / <ol>; other lines are joined with <br>.
function blockLines(s, format) {
  const out = [];
  let group = null;
  let plain = [];
  const close = () => {
    if (!group) return;
    const { tag, items } = group;
    out.push(tag === "blockquote" ? `<blockquote>${items.join("<br>")}</blockquote>`
      : `<${tag}>${items.map((i) => `<li>${i}</li>`).join("")}</${tag}>`);
    group = null;
  };
  const add = (tag, item) => {
    if (!group || group.tag !== tag) { close(); group = { tag, items: [] }; }
    group.items.push(item);
  };
  const flushPlain = () => { if (plain.length) out.push(plain.join("<br>")); plain = []; };
  for (const line of s.split("\n")) {
    let m;
    if ((m = line.match(/^&gt;\s?(.*)$/))) { flushPlain(); add("blockquote", format(m[1])); }
    else if ((m = line.match(/^\s*(?:•|◦|▪|-|\*)\s+(.*)$/))) { flushPlain(); add("ul", format(m[1])); }
    else if ((m = line.match(/^\s*\d+[.)]\s+(.*)$/))) { flushPlain(); add("ol", format(m[1])); }
    else { close(); plain.push(format(line)); }
  }
  close();
  flushPlain();
  return out.join("");
}

export function mrkdwn(text, ctx) {
  const { hold, fill } = holes();
  let s = String(text || "").replace(/\u0000/g, "");
  s = s.replace(/```([\s\S]*?)```\n?/g,
    (_, code) => hold(`<pre>${escapeHtml(unescapeSlack(code.replace(/^\n/, "")))}</pre>`));
  s = s.replace(/`([^`\n]+)`/g, (_, code) => hold(`<code>${escapeHtml(unescapeSlack(code))}</code>`));
  s = s.replace(/<([^<>\n]+)>/g, (_, inner) => hold(controlSequence(inner, ctx)));
  return fill(blockLines(escapeHtml(unescapeSlack(s)), inline));
}

// -- standard Markdown (the `markdown` block, streamed text) ---------------------------------

function markdownInline(src) {
  const { hold, fill } = holes();
  let s = String(src).replace(/\u0000/g, "");
  s = s.replace(/\\([!-/:-@[-`{-~])/g, (_, c) => hold(escapeHtml(c)));
  s = s.replace(/(`+)([^`]|[^`][\s\S]*?[^`])\1(?!`)/g, (_, __, code) => hold(`<code>${escapeHtml(code.trim())}</code>`));
  s = s.replace(/!?\[([^\]\n]*)\]\(([^()\s]+)\)/g,
    (_, label, url) => hold(link(url, fill(emphasis(escapeHtml(label))))));
  s = s.replace(/<((?:https?|mailto):[^<>\s]+)>/g, (_, url) => hold(link(url, escapeHtml(url))));
  return fill(emphasis(escapeHtml(s)));
}

function emphasis(s) {
  return s
    .replace(/(\*\*|__)(?!\s)([\s\S]*?[^\s])\1/g, "<b>$2</b>")
    .replace(/(^|[^\w*])\*(?!\s)([^*\n]*?[^\s*])\*(?!\w)/g, "$1<i>$2</i>")
    .replace(/(^|[^\w_])_(?!\s)([^_\n]*?[^\s_])_(?!\w)/g, "$1<i>$2</i>")
    .replace(/~~(?!\s)([\s\S]*?[^\s])~~/g, "<s>$1</s>");
}

export function markdown(text) {
  const out = [];
  let para = [];
  let list = null;
  let code = null;
  const flush = () => {
    if (para.length) out.push(`<p>${markdownInline(para.join("\n")).replace(/\n/g, "<br>")}</p>`);
    para = [];
    if (list) out.push(`<${list.tag}>${list.items.map((i) => `<li>${i}</li>`).join("")}</${list.tag}>`);
    list = null;
  };
  const item = (tag, textHtml) => {
    if (para.length || (list && list.tag !== tag)) flush();
    list = list || { tag, items: [] };
    list.items.push(textHtml);
  };
  for (const line of String(text || "").split("\n")) {
    let m;
    if (code !== null) {
      if (/^\s*```/.test(line)) { out.push(`<pre>${escapeHtml(code.join("\n"))}</pre>`); code = null; }
      else code.push(line);
    } else if (/^\s*```/.test(line)) { flush(); code = []; }
    else if ((m = line.match(/^\s{0,3}(#{1,6})\s+(.*)$/))) { flush(); out.push(`<div class="md-heading md-h${m[1].length}">${markdownInline(m[2])}</div>`); }
    else if (/^\s{0,3}([-*_])(\s*\1){2,}\s*$/.test(line)) { flush(); out.push("<hr>"); }
    else if ((m = line.match(/^\s*[-*+]\s+(.*)$/))) item("ul", markdownInline(m[1]));
    else if ((m = line.match(/^\s*\d+[.)]\s+(.*)$/))) item("ol", markdownInline(m[1]));
    else if ((m = line.match(/^\s{0,3}>\s?(.*)$/))) { flush(); out.push(`<blockquote>${markdownInline(m[1])}</blockquote>`); }
    else if (!line.trim()) flush();
    else { if (list) flush(); para.push(line); }
  }
  if (code !== null) out.push(`<pre>${escapeHtml(code.join("\n"))}</pre>`);
  flush();
  return out.join("");
}

// -- rich text and text objects ---------------------------------------------------------------

function plainText(text) { return escapeHtml(text || "").replace(/\n/g, "<br>"); }
function textObject(obj, ctx) {
  if (!obj) return "";
  return obj.type === "mrkdwn" ? mrkdwn(obj.text, ctx) : plainText(obj.text);
}

function richInline(e, ctx) {
  const styled = (html) => {
    const st = e.style || {};
    if (st.code) html = `<code>${html}</code>`;
    if (st.bold) html = `<b>${html}</b>`;
    if (st.italic) html = `<i>${html}</i>`;
    if (st.strike) html = `<s>${html}</s>`;
    return html;
  };
  switch (e.type) {
    case "text": return styled(plainText(e.text));
    case "link": return link(e.url || "", escapeHtml(e.text || e.url || ""));
    case "user": return mention("@" + ctx.userName(e.user_id));
    case "channel": return mention("#" + (e.channel_id === ctx.channel.id ? ctx.channel.name : e.channel_id));
    case "broadcast": return mention("@" + (e.range || "here"));
    case "emoji": return e.unicode ? escapeHtml(String.fromCodePoint(
      ...e.unicode.split("-").map((h) => parseInt(h, 16)))) : escapeHtml(`:${e.name}:`);
    default: return "";
  }
}

function richSection(section, ctx) {
  const inner = (section.elements || []).map((e) => richInline(e, ctx)).join("");
  switch (section.type) {
    case "rich_text_section": return inner;
    case "rich_text_preformatted": return `<pre>${inner}</pre>`;
    case "rich_text_quote": return `<blockquote>${inner}</blockquote>`;
    case "rich_text_list": {
      const tag = section.style === "ordered" ? "ol" : "ul";
      const items = (section.elements || []).map((s) => `<li>${richSection(s, ctx)}</li>`).join("");
      return `<${tag}>${items}</${tag}>`;
    }
    default: return "";
  }
}
function richText(block, ctx) {
  return ((block && block.elements) || []).map((s) => richSection(s, ctx)).join("");
}

// -- Block Kit ------------------------------------------------------------------------------

function button(element, block, msg, ctx) {
  const node = el("button", "btn" + (element.style ? " " + element.style : ""));
  node.type = "button";
  node.textContent = (element.text && element.text.text) || element.action_id;
  node.dataset.actionId = element.action_id || "";
  node.addEventListener("click", () => ctx.onAction(node, msg, block, element, element.value || ""));
  return node;
}

function feedbackButtons(element, block, msg, ctx) {
  const node = el("span", "feedback");
  const chosen = ctx.chosen(msg, element.action_id);
  for (const [side, icon] of [["positive_button", "▲"], ["negative_button", "▼"]]) {
    const spec = element[side] || {};
    const b = el("button", "icon-btn" + (chosen === spec.value ? " selected" : ""));
    b.type = "button";
    b.title = (spec.text && spec.text.text) || side;
    b.textContent = `${icon} ${b.title}`;
    b.setAttribute("aria-label", spec.accessibility_label || b.title);
    b.setAttribute("aria-pressed", chosen === spec.value ? "true" : "false");
    b.addEventListener("click", () => ctx.onAction(b, msg, block, element, spec.value || ""));
    node.append(b);
  }
  return node;
}

function menu(element, block, msg, ctx) {
  const node = el("select", "menu");
  node.dataset.actionId = element.action_id || "";
  const label = (element.placeholder && element.placeholder.text) || element.action_id;
  node.append(new Option(label, "", true, true));
  node.options[0].disabled = true;
  for (const option of element.options || []) {
    node.append(new Option((option.text && option.text.text) || option.value, option.value));
  }
  node.addEventListener("change", () => ctx.onAction(node, msg, block, element, node.value));
  return node;
}

function interactive(element, block, msg, ctx) {
  if (element.type === "button") return button(element, block, msg, ctx);
  if (element.type === "static_select") return menu(element, block, msg, ctx);
  if (element.type === "feedback_buttons") return feedbackButtons(element, block, msg, ctx);
  if (element.type === "icon_button") return button({ ...element, text: element.text }, block, msg, ctx);
  return el("span", "unsupported", escapeHtml(`[${element.type}]`));
}

const TASK_ICONS = { pending: "○", in_progress: "◐", complete: "✓", error: "✕" };

function taskCard(task, ctx) {
  const status = TASK_ICONS[task.status] ? task.status : "pending";
  const node = el("li", `task task-${status}`);
  node.dataset.taskId = task.task_id || "";
  node.dataset.status = status;
  const icon = el("span", "task-icon", TASK_ICONS[status]);
  icon.setAttribute("aria-label", status.replace("_", " "));
  const body = el("div", "task-body");
  body.append(el("div", "task-title", plainText(task.title)));
  if (task.output) body.append(el("div", "task-output", richText(task.output, ctx)));
  if (task.details) body.append(el("div", "task-details", richText(task.details, ctx)));
  if (task.sources && task.sources.length) {
    const sources = el("div", "task-sources");
    for (const s of task.sources) sources.append(el("span", "source", link(s.url || "", escapeHtml(s.text || s.url || ""))));
    body.append(sources);
  }
  node.append(icon, body);
  return node;
}

function plan(block, ctx) {
  const node = el("div", "block block-plan");
  node.append(el("div", "plan-title", plainText(block.title)));
  const list = el("ol", "plan-tasks");
  for (const task of block.tasks || []) list.append(taskCard(task, ctx));
  node.append(list);
  return node;
}

// An image block: a file the app uploaded to the fake (`slack_file`), served by it at
// /files/<id>; an image_url elsewhere is not fetched (the playground is offline), its alt text
// is shown instead. The alt text and title are plain text.
function image(block) {
  const id = block.slack_file && String(block.slack_file.id || "");
  if (!/^F[0-9A-Z]{1,20}$/.test(id || "")) {
    return el("div", "block unsupported", escapeHtml(`[image: ${block.alt_text || ""}]`));
  }
  const figure = el("figure", "block block-image");
  const img = document.createElement("img");
  img.src = `/files/${id}`;
  img.alt = String(block.alt_text || "");
  img.title = img.alt;
  figure.append(img);
  if (block.title && block.title.text) figure.append(el("figcaption", "", plainText(block.title.text)));
  return figure;
}

export function renderBlock(block, msg, ctx) {
  switch (block.type) {
    case "header": return el("div", "block block-header", plainText(block.text && block.text.text));
    case "divider": return el("hr", "block block-divider");
    case "markdown": return el("div", "block block-markdown", markdown(block.text));
    case "plan": return plan(block, ctx);
    case "task_card": { const list = el("ol", "block plan-tasks"); list.append(taskCard(block, ctx)); return list; }
    case "alert": return el("div", `block block-alert alert-${escapeHtml(block.level || "default")}`, textObject(block.text, ctx));
    case "context": {
      const node = el("div", "block block-context");
      for (const e of block.elements || []) {
        node.append(el("span", "mrkdwn", e.type === "image"
          ? escapeHtml(`[${e.alt_text || "image"}]`) : textObject(e, ctx)));
      }
      return node;
    }
    case "actions": case "context_actions": {
      const node = el("div", `block block-${block.type.replace("_", "-")}`);
      for (const e of block.elements || []) node.append(interactive(e, block, msg, ctx));
      return node;
    }
    case "section": {
      const node = el("div", "block block-section" + (block.accessory ? " with-accessory" : ""));
      const main = el("div", "");
      if (block.text) main.append(el("div", "mrkdwn", textObject(block.text, ctx)));
      if (block.fields) {
        const fields = el("div", "fields");
        for (const f of block.fields) fields.append(el("div", "mrkdwn", textObject(f, ctx)));
        main.append(fields);
      }
      node.append(main);
      if (block.accessory) node.append(interactive(block.accessory, block, msg, ctx));
      return node;
    }
    case "rich_text": return el("div", "block mrkdwn", richText(block, ctx));
    case "image": return image(block);
    default: return el("div", "block unsupported", escapeHtml(`[${block.type} block]`));
  }
}
