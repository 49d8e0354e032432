// The playground page: a Slack channel rendered from /ui/state, kept live by /ui/stream (SSE).
// Message text is untrusted: everything is HTML-escaped before any markup is added.
"use strict";

const $ = (id) => document.getElementById(id);
const store = {
  seq: 0, me: null, users: {}, bot: { user_id: "", name: "RED Searcher" },
  channel: { id: "", name: "" }, messages: new Map(), ephemerals: new Map(),
  statuses: {}, delivery: { retrying: 0, reason: null }, notices: [],
};
let source = null;
let buffered = null; // stream updates held while /ui/state loads

// -- text ---------------------------------------------------------------------------------

const HTML_ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };
function escapeHtml(s) { return String(s).replace(/[&<>"']/g, (c) => HTML_ESCAPES[c]); }
function unescapeSlack(s) {
  return String(s).replace(/&lt;/g, "<").replace(/&gt;/g, ">").replace(/&amp;/g, "&");
}
function userName(id) {
  if (id === store.bot.user_id) return store.bot.name;
  return store.users[id] || id;
}
function safeUrl(url) { return /^(https?:|mailto:)/i.test(url) ? url : null; }
function link(url, label) {
  const safe = safeUrl(url);
  if (!safe) return escapeHtml(label);
  return `<a href="${escapeHtml(safe)}" target="_blank" rel="noopener noreferrer">` +
    `${escapeHtml(label)}</a>`;
}
function mention(text) { return `<span class="mention">${escapeHtml(text)}</span>`; }

// A control sequence <…>: links, user and channel mentions, special mentions, dates.
function controlSequence(inner) {
  const bar = inner.indexOf("|");
  const target = bar < 0 ? inner : inner.slice(0, bar);
  const label = bar < 0 ? "" : unescapeSlack(inner.slice(bar + 1));
  if (target.startsWith("@")) return mention("@" + (label || userName(target.slice(1))));
  if (target.startsWith("#")) {
    const id = target.slice(1);
    return mention("#" + (label || (id === store.channel.id ? store.channel.name : id)));
  }
  if (target.startsWith("!")) {
    const cmd = target.slice(1);
    if (cmd.startsWith("date^")) return escapeHtml(label || cmd);
    if (cmd.startsWith("subteam^")) return mention(label || "@group");
    return mention("@" + cmd);
  }
  const url = unescapeSlack(target);
  if (safeUrl(url)) return link(url, label || url);
  return escapeHtml("<" + unescapeSlack(inner) + ">");
}

function inline(s) {
  return s
    .replace(/(^|[^\w*])\*(?!\s)([^*\n]*?[^\s*])\*(?!\w)/g, "$1<b>$2</b>")
    .replace(/(^|[^\w_])_(?!\s)([^_\n]*?[^\s_])_(?!\w)/g, "$1<i>$2</i>")
    .replace(/(^|[^\w~])~(?!\s)([^~\n]*?[^\s~])~(?!\w)/g, "$1<s>$2</s>");
}

// Quote and list lines become <blockquote> / <ul> / <ol>; other lines are joined with <br>.
function blockLines(s) {
  const out = [];
  let group = null;
  const close = () => {
    if (!group) return;
    const tag = group.tag;
    const items = group.items;
    out.push(tag === "blockquote" ? `<blockquote>${items.join("<br>")}</blockquote>`
      : `<${tag}>${items.map((i) => `<li>${i}</li>`).join("")}</${tag}>`);
    group = null;
  };
  const add = (tag, item) => {
    if (!group || group.tag !== tag) { close(); group = { tag, items: [] }; }
    group.items.push(item);
  };
  let plain = [];
  const flushPlain = () => { if (plain.length) out.push(plain.join("<br>")); plain = []; };
  for (const line of s.split("\n")) {
    let m;
    if ((m = line.match(/^&gt;\s?(.*)$/))) { flushPlain(); add("blockquote", inline(m[1])); }
    else if ((m = line.match(/^\s*(?:•|◦|▪|-|\*)\s+(.*)$/))) { flushPlain(); add("ul", inline(m[1])); }
    else if ((m = line.match(/^\s*\d+[.)]\s+(.*)$/))) { flushPlain(); add("ol", inline(m[1])); }
    else { close(); plain.push(inline(line)); }
  }
  close();
  flushPlain();
  return out.join("");
}

function mrkdwn(text) {
  const holes = [];
  const hold = (html) => { holes.push(html); return `\u0000${holes.length - 1}\u0000`; };
  let s = String(text || "").replace(/\u0000/g, "");
  s = s.replace(/```([\s\S]*?)```\n?/g,
    (_, code) => hold(`<pre>${escapeHtml(unescapeSlack(code.replace(/^\n/, "")))}</pre>`));
  s = s.replace(/`([^`\n]+)`/g, (_, code) => hold(`<code>${escapeHtml(unescapeSlack(code))}</code>`));
  s = s.replace(/<([^<>\n]+)>/g, (_, inner) => hold(controlSequence(inner)));
  s = blockLines(escapeHtml(unescapeSlack(s)));
  return s.replace(/\u0000(\d+)\u0000/g, (_, i) => holes[Number(i)]);
}

function plainText(text) { return escapeHtml(text || "").replace(/\n/g, "<br>"); }
function textObject(obj) {
  if (!obj) return "";
  return obj.type === "mrkdwn" ? mrkdwn(obj.text) : plainText(obj.text);
}

// -- Block Kit ----------------------------------------------------------------------------

function el(tag, cls, html) {
  const node = document.createElement(tag);
  if (cls) node.className = cls;
  if (html !== undefined) node.innerHTML = html;
  return node;
}

function button(element, block, msg) {
  const node = el("button", "btn" + (element.style ? " " + element.style : ""));
  node.type = "button";
  node.textContent = (element.text && element.text.text) || element.action_id;
  node.dataset.actionId = element.action_id || "";
  node.addEventListener("click", () => clickAction(node, msg, block, element));
  return node;
}

function interactive(element, block, msg) {
  if (element.type === "button") return button(element, block, msg);
  return el("span", "unsupported", escapeHtml(`[${element.type}]`));
}

function richInline(e) {
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
    case "link": return link(e.url || "", e.text || e.url || "");
    case "user": return mention("@" + userName(e.user_id));
    case "channel": return mention("#" + (e.channel_id === store.channel.id ? store.channel.name : e.channel_id));
    case "broadcast": return mention("@" + (e.range || "here"));
    case "emoji": return e.unicode ? escapeHtml(String.fromCodePoint(
      ...e.unicode.split("-").map((h) => parseInt(h, 16)))) : escapeHtml(`:${e.name}:`);
    default: return "";
  }
}

function richSection(section) {
  const inner = (section.elements || []).map(richInline).join("");
  switch (section.type) {
    case "rich_text_section": return inner;
    case "rich_text_preformatted": return `<pre>${inner}</pre>`;
    case "rich_text_quote": return `<blockquote>${inner}</blockquote>`;
    case "rich_text_list": {
      const tag = section.style === "ordered" ? "ol" : "ul";
      const items = (section.elements || []).map((s) => `<li>${richSection(s)}</li>`).join("");
      return `<${tag}>${items}</${tag}>`;
    }
    default: return "";
  }
}

function renderBlock(block, msg) {
  switch (block.type) {
    case "header": return el("div", "block block-header", plainText(block.text && block.text.text));
    case "divider": return el("hr", "block block-divider");
    case "context": {
      const node = el("div", "block block-context");
      for (const e of block.elements || []) {
        node.append(el("span", "mrkdwn", e.type === "image"
          ? escapeHtml(`[${e.alt_text || "image"}]`) : textObject(e)));
      }
      return node;
    }
    case "actions": {
      const node = el("div", "block block-actions");
      for (const e of block.elements || []) node.append(interactive(e, block, msg));
      return node;
    }
    case "section": {
      const node = el("div", "block block-section" + (block.accessory ? " with-accessory" : ""));
      const main = el("div", "");
      if (block.text) main.append(el("div", "mrkdwn", textObject(block.text)));
      if (block.fields) {
        const fields = el("div", "fields");
        for (const f of block.fields) fields.append(el("div", "mrkdwn", textObject(f)));
        main.append(fields);
      }
      node.append(main);
      if (block.accessory) node.append(interactive(block.accessory, block, msg));
      return node;
    }
    case "rich_text":
      return el("div", "block mrkdwn", (block.elements || []).map(richSection).join(""));
    case "image": return el("div", "block unsupported", escapeHtml(`[image: ${block.alt_text || ""}]`));
    default: return el("div", "block unsupported", escapeHtml(`[${block.type} block]`));
  }
}

// -- messages -----------------------------------------------------------------------------

function clock(ts) {
  return new Date(parseFloat(ts) * 1000).toLocaleTimeString([], { hour: "2-digit", minute: "2-digit" });
}

function replyCount(ts) {
  let n = 0;
  for (const m of store.messages.values()) if (m.thread_ts === ts && m.ts !== ts) n += 1;
  return n;
}

function renderMessage(msg, inChannel) {
  const isBot = Boolean(msg.bot_id) || msg.user === store.bot.user_id;
  const name = isBot ? store.bot.name : userName(msg.user);
  const row = el("div", "message" + (msg.ephemeral_for ? " ephemeral" : ""));
  row.dataset.ts = msg.ts;
  const avatar = el("div", "avatar" + (isBot ? " bot" : ""));
  avatar.textContent = name.slice(0, 1).toUpperCase();
  if (!isBot) avatar.style.background = `hsl(${[...msg.user].reduce((a, c) => a + c.charCodeAt(0), 0) * 47 % 360} 45% 45%)`;
  const body = el("div", "body");
  const meta = el("div", "meta");
  meta.append(el("span", "name", escapeHtml(name)));
  if (isBot) meta.append(el("span", "app-tag", "APP"));
  meta.append(el("span", "time", escapeHtml(clock(msg.ts))));
  if (msg.edited) meta.append(el("span", "edited", "(edited)"));
  body.append(meta);
  if (msg.ephemeral_for) body.append(el("span", "only-you", "Only visible to you"));
  const content = el("div", "content");
  if (msg.blocks && msg.blocks.length) for (const b of msg.blocks) content.append(renderBlock(b, msg));
  else content.append(el("div", "mrkdwn", mrkdwn(msg.text)));
  body.append(content);
  const replies = inChannel ? replyCount(msg.ts) : 0;
  if (replies) {
    const open = el("button", "replies-link");
    open.type = "button";
    open.textContent = replies === 1 ? "1 reply" : `${replies} replies`;
    open.addEventListener("click", () => openThread(msg.ts));
    body.append(open);
  }
  row.append(avatar, body);
  return row;
}

function byTs(a, b) { return parseFloat(a.ts) - parseFloat(b.ts); }
function all() { return [...store.messages.values(), ...store.ephemerals.values()]; }

function renderList(container, messages, inChannel) {
  const nearBottom = container.scrollHeight - container.scrollTop - container.clientHeight < 80;
  container.replaceChildren(...messages.sort(byTs).map((m) => renderMessage(m, inChannel)));
  if (nearBottom) container.scrollTop = container.scrollHeight;
}

function threadTs() {
  const m = location.hash.match(/thread=([\d.]+)/);
  return m ? m[1] : null;
}

function render() {
  $("channel-name").textContent = "# " + store.channel.name;
  $("composer-text").placeholder = "Message #" + store.channel.name;
  const banner = $("banner");
  banner.hidden = !store.delivery.retrying;
  banner.textContent = store.delivery.retrying
    ? `${store.bot.name} is not answering (${store.delivery.reason}); Slack keeps retrying…` : "";
  const latest = store.notices[store.notices.length - 1];
  $("notice").hidden = !latest;
  $("notice").textContent = latest
    ? `${new Date(latest.at * 1000).toLocaleTimeString()} · ${latest.text}` : "";
  renderList($("messages"), all().filter((m) => !m.thread_ts || m.thread_ts === m.ts), true);
  const ts = threadTs();
  const root = ts && store.messages.get(ts);
  $("thread").hidden = !root;
  if (!root) return;
  $("thread-channel").textContent = "# " + store.channel.name;
  renderList($("thread-messages"), all().filter((m) => m.ts === ts || m.thread_ts === ts), false);
  const status = store.statuses[ts];
  $("thread-status").hidden = !status;
  $("thread-status").textContent = status ? `${store.bot.name} is ${lowerFirst(status)}` : "";
}

// "Writing the report" reads "RED Searcher is writing the report"; "SMM data" stays as it is.
function lowerFirst(s) { return /^[A-Z][a-z]/.test(s) ? s[0].toLowerCase() + s.slice(1) : s; }

function openThread(ts) { location.hash = "thread=" + ts; render(); }

// -- talking to the server ----------------------------------------------------------------

async function post(path, body) {
  const resp = await fetch(path, {
    method: "POST", headers: { "Content-Type": "application/json" },
    body: JSON.stringify({ ...body, channel: store.channel.id, user: store.me }),
  });
  const data = await resp.json();
  if (!data.ok) {
    $("banner").hidden = false;
    $("banner").textContent = `Error: ${data.error}`;
  }
  return data;
}

function clickAction(node, msg, block, element) {
  node.classList.add("pending");
  setTimeout(() => node.classList.remove("pending"), 1500);
  post("/ui/action", {
    message_ts: msg.ts, action_id: element.action_id, value: element.value || "",
    block_id: block.block_id || "",
  });
}

// What Slack's client does before sending: escape &, <, >; turn @Name into a mention.
function encodeMessage(text) {
  let s = text.replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;");
  const names = [[store.bot.name, store.bot.user_id], ["RED", store.bot.user_id],
    ...Object.entries(store.users).map(([id, n]) => [n, id])];
  names.sort((a, b) => b[0].length - a[0].length);
  for (const [name, id] of names) {
    const pattern = name.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");
    s = s.replace(new RegExp(`(^|\\s)@${pattern}(?![\\w])`, "gi"), `$1<@${id}>`);
  }
  return s;
}

function composer(form, textarea, thread) {
  const send = async () => {
    const text = textarea.value.trim();
    if (!text) return;
    textarea.value = "";
    await post("/ui/message", { text: encodeMessage(text), thread_ts: thread() || undefined });
  };
  form.addEventListener("submit", (e) => { e.preventDefault(); send(); });
  textarea.addEventListener("keydown", (e) => {
    if (e.key === "Enter" && !e.shiftKey) { e.preventDefault(); send(); }
  });
}

function apply(u) {
  switch (u.kind) {
    case "posted": case "updated": store.messages.set(u.ts, u.message); break;
    case "ephemeral": store.ephemerals.set(u.ts, u.message); break;
    case "deleted": store.messages.delete(u.ts); break;
    case "status":
      if (u.status) store.statuses[u.thread_ts] = u.status; else delete store.statuses[u.thread_ts];
      break;
    case "delivery": store.delivery = { retrying: u.retrying, reason: u.reason }; break;
    case "notice": store.notices = [...store.notices, { at: u.at, text: u.text }]; break;
    default: break;
  }
}

async function loadState() {
  const resp = await fetch(`/ui/state?user=${encodeURIComponent(store.me || "")}`);
  const state = await resp.json();
  Object.assign(store, {
    seq: state.seq, users: state.users, bot: state.bot, channel: state.channel,
    statuses: { ...state.statuses }, delivery: state.delivery, notices: state.notices || [],
    messages: new Map(state.messages.map((m) => [m.ts, m])),
    ephemerals: new Map(state.ephemerals.map((m) => [m.ts, m])),
  });
  const held = buffered || [];
  buffered = null;
  for (const u of held) if (u.seq > state.seq) apply(u);
  fillUsers();
  render();
  document.body.dataset.ready = "1";
}

function connect() {
  if (source) source.close();
  source = new EventSource(`/ui/stream?user=${encodeURIComponent(store.me)}`);
  source.onopen = () => { buffered = []; loadState(); };
  source.onmessage = (e) => {
    const u = JSON.parse(e.data);
    if (buffered) { buffered.push(u); return; }
    apply(u);
    render();
  };
}

function fillUsers() {
  const select = $("user-select");
  if (!store.users[store.me]) store.me = Object.keys(store.users)[0];
  select.replaceChildren(...Object.entries(store.users).map(([id, name]) => {
    const option = el("option", "");
    option.value = id;
    option.textContent = name;
    option.selected = id === store.me;
    return option;
  }));
}

function init() {
  store.me = localStorage.getItem("playground.me") || "U0ALICE";
  $("user-select").addEventListener("change", (e) => {
    store.me = e.target.value;
    localStorage.setItem("playground.me", store.me);
    document.body.dataset.ready = "";
    connect();
  });
  $("thread-close").addEventListener("click", () => { location.hash = ""; render(); });
  window.addEventListener("hashchange", render);
  composer($("composer"), $("composer-text"), () => null);
  composer($("thread-composer"), $("thread-text"), threadTs);
  connect();
}

init();
