// The playground page: a Slack channel rendered from /ui/state, kept live by /ui/stream (SSE),
// and the app's Home tab. Message text is untrusted: render.js escapes it before any markup.
import { showModal } from "./modal.js";
import { el, escapeHtml, mrkdwn, renderBlock } from "./render.js";

const $ = (id) => document.getElementById(id);
const store = {
  seq: 0, me: null, users: {}, bot: { user_id: "", name: "RED Searcher" },
  channel: { id: "", name: "" }, messages: new Map(), ephemerals: new Map(),
  statuses: {}, delivery: { retrying: 0, reason: null }, notices: [], home: null,
  modal: null, // the modal the app opened for this person (views.open), until it closes
  feedback: new Map(), // message ts + action id -> the value this person chose
};
let source = null;
let buffered = null; // stream updates held while /ui/state loads

function userName(id) {
  if (id === store.bot.user_id) return store.bot.name;
  return store.users[id] || id;
}

const ctx = {
  userName,
  get channel() { return store.channel; },
  onAction: clickAction,
  chosen: (msg, actionId) => store.feedback.get(`${msg.ts}/${actionId}`),
};

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
  const row = el("div", "message" + (msg.ephemeral_for ? " ephemeral" : "")
    + (msg.streaming ? " streaming" : ""));
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
  if (!msg.ephemeral_for) meta.append(shortcutButton(msg));
  body.append(meta);
  if (msg.ephemeral_for) body.append(el("span", "only-you", "Only visible to you"));
  const content = el("div", "content");
  if (msg.blocks && msg.blocks.length) for (const b of msg.blocks) content.append(renderBlock(b, msg, ctx));
  else content.append(el("div", "mrkdwn", mrkdwn(msg.text, ctx)));
  if (msg.files && msg.files.length) content.append(fileLinks(msg.files));
  if (msg.streaming) content.append(el("span", "cursor", "▍"));
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

// Files shared with a message (an upload that is no image), each opening in a new tab.
function fileLinks(files) {
  const list = el("div", "message-files");
  for (const f of files) {
    const id = String(f.id || "");
    if (!/^F[0-9A-Z]{1,20}$/.test(id)) continue;
    const a = el("a", "message-file", `${escapeHtml(f.title || f.name || id)} `
      + `<span class="file-kind">${escapeHtml(f.filetype || "file")}</span>`);
    a.href = `/files/${id}`;
    a.target = "_blank";
    a.rel = "noopener";
    list.append(a);
  }
  return list;
}

// The "Research this" message shortcut, as Slack's message menu offers it.
function shortcutButton(msg) {
  const node = el("button", "shortcut");
  node.type = "button";
  node.textContent = "Research this";
  node.title = "Message shortcut: research this message's text in its thread";
  node.addEventListener("click", () => post("/ui/shortcut", { message_ts: msg.ts, callback_id: "research_this" }));
  return node;
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
function homeOpen() { return location.hash === "#home"; }

function renderHome() {
  const view = store.home;
  const blocks = view ? view.blocks || [] : [];
  $("home-content").replaceChildren(...(blocks.length ? blocks.map((b) => renderBlock(b, {}, ctx))
    : [el("p", "topic", "Loading…")]));
}

function render() {
  $("channel-name").textContent = "# " + store.channel.name;
  $("composer-text").placeholder = "Message #" + store.channel.name + " (or /research …)";
  const banner = $("banner");
  banner.hidden = !store.delivery.retrying;
  banner.textContent = store.delivery.retrying
    ? `${store.bot.name} is not answering (${store.delivery.reason}); Slack keeps retrying…` : "";
  const latest = store.notices[store.notices.length - 1];
  $("notice").hidden = !latest;
  $("notice").textContent = latest
    ? `${new Date(latest.at * 1000).toLocaleTimeString()} · ${latest.text}` : "";
  showModal($("modal"), store.modal, post);
  $("home").hidden = !homeOpen();
  $("channel").hidden = homeOpen();
  $("channel-link").classList.toggle("active", !homeOpen());
  $("app-link").classList.toggle("active", homeOpen());
  if (homeOpen()) renderHome();
  renderList($("messages"), all().filter((m) => !m.thread_ts || m.thread_ts === m.ts), true);
  const ts = threadTs();
  const root = ts && store.messages.get(ts);
  $("thread").hidden = !root || homeOpen();
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
function openHome() {
  location.hash = "home";
  post("/ui/home", {}); // Slack sends app_home_opened; the bot publishes the tab
  render();
}

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

function clickAction(node, msg, block, element, value) {
  node.classList.add("pending");
  setTimeout(() => node.classList.remove("pending"), 1500);
  if (element.type === "feedback_buttons") {
    store.feedback.set(`${msg.ts}/${element.action_id}`, value);
    render();
  }
  post("/ui/action", {
    message_ts: msg.ts, action_id: element.action_id, value, block_id: block.block_id || "",
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
    if (text.startsWith("/")) await post("/ui/command", { text: encodeMessage(text) });
    else await post("/ui/message", { text: encodeMessage(text), thread_ts: thread() || undefined });
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
    case "view": store.home = u.view; break;
    case "modal": store.modal = u.view.closed ? null : u.view; break;
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
    ephemerals: new Map(state.ephemerals.map((m) => [m.ts, m])), home: state.home,
    modal: state.modal || null,
  });
  const held = buffered || [];
  buffered = null;
  for (const u of held) if (u.seq > state.seq) apply(u);
  fillUsers();
  render();
  if (homeOpen() && !store.home) post("/ui/home", {});
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
    store.home = null;
    store.modal = null;
    store.feedback.clear();
    connect();
    if (homeOpen()) post("/ui/home", {});
  });
  $("thread-close").addEventListener("click", () => { location.hash = ""; render(); });
  $("channel-link").addEventListener("click", () => { location.hash = ""; render(); });
  $("app-link").addEventListener("click", openHome);
  window.addEventListener("hashchange", render);
  composer($("composer"), $("composer-text"), () => null);
  composer($("thread-composer"), $("thread-text"), threadTs);
  connect();
}

init();
