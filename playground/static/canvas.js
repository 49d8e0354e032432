// A canvas the bot made (canvases.create), as the playground's fake Slack keeps it: its
// title and its markdown, drawn by the same renderer as a message's markdown block.
import { markdown } from "/static/render.js";

const id = decodeURIComponent(location.pathname.split("/").pop() || "");

async function load() {
  const title = document.getElementById("canvas-title");
  const body = document.getElementById("canvas-body");
  const resp = await fetch(`/canvases/${encodeURIComponent(id)}.json`);
  if (!resp.ok) {
    title.textContent = "Canvas not found";
    return;
  }
  const canvas = await resp.json();
  title.textContent = canvas.title;
  document.title = `${canvas.title} — Canvas`;
  body.innerHTML = markdown(canvas.markdown);
}

load();
