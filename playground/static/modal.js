// A modal the app opened (views.open) for the person using the page: its title, its input
// blocks (a plain text input, multiline or not; a static select) and its other blocks as
// Block Kit; Save posts the values to /ui/view (Slack's view_submission), whose `errors` are
// shown under their inputs; Cancel closes it. Texts are untrusted: render.js escapes them.
import { el, escapeHtml, renderBlock } from "./render.js";

function plain(obj) { return escapeHtml((obj && obj.text) || ""); }

function inputBlock(block) {
  const element = block.element || {};
  const node = el("label", "modal-input");
  node.dataset.blockId = block.block_id || "";
  node.append(el("span", "modal-label", plain(block.label)));
  let field;
  if (element.type === "static_select") {
    field = el("select", "");
    for (const option of element.options || []) {
      const o = el("option", "", plain(option.text));
      o.value = option.value;
      o.selected = !!element.initial_option && element.initial_option.value === option.value;
      field.append(o);
    }
  } else {
    field = el(element.multiline ? "textarea" : "input", "");
    if (element.multiline) field.rows = 6;
    field.value = element.initial_value || "";
  }
  field.dataset.actionId = element.action_id || "";
  field.setAttribute("aria-label", (block.label && block.label.text) || "input");
  node.append(field, el("span", "modal-error"));
  return node;
}

// Draws `view` into `root` (once per view id: typing is never redrawn away).
export function showModal(root, view, post) {
  if (!view) { root.hidden = true; root.replaceChildren(); delete root.dataset.viewId; return; }
  if (root.dataset.viewId === view.id) return;
  root.dataset.viewId = view.id;
  const box = el("form", "modal-box");
  box.setAttribute("role", "dialog");
  box.setAttribute("aria-label", (view.title && view.title.text) || "modal");
  box.append(el("h2", "modal-title", plain(view.title)));
  for (const block of view.blocks || []) {
    box.append(block.type === "input" ? inputBlock(block) : renderBlock(block, {}, {}));
  }
  const buttons = el("div", "modal-buttons");
  const cancel = el("button", "btn", plain(view.close || { text: "Cancel" }));
  cancel.type = "button";
  const save = el("button", "btn primary", plain(view.submit || { text: "Submit" }));
  save.type = "submit";
  buttons.append(cancel, save);
  box.append(buttons);
  cancel.addEventListener("click", () => post("/ui/view/close", { view_id: view.id }));
  box.addEventListener("submit", async (e) => {
    e.preventDefault();
    const values = {};
    for (const field of box.querySelectorAll("[data-action-id]")) {
      values[field.dataset.actionId] = field.value;
    }
    for (const error of box.querySelectorAll(".modal-error")) error.textContent = "";
    const answer = await post("/ui/view", { view_id: view.id, values });
    for (const [blockId, text] of Object.entries((answer && answer.errors) || {})) {
      const input = [...box.querySelectorAll(".modal-input")].find((n) => n.dataset.blockId === blockId);
      if (input) input.querySelector(".modal-error").textContent = text;
    }
  });
  root.replaceChildren(box);
  root.hidden = false;
}
