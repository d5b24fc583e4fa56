"""The labelling page served by :mod:`llm_council.calibration.label_ui` (one static HTML document).

Kept as a Python string rather than package data so it ships with the code whatever the
packaging configuration. Candidate text is inserted with ``textContent`` only, never as
HTML, because answers are untrusted.
"""

from __future__ import annotations

LABEL_PAGE_HTML = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="label-token" content="__LABEL_TOKEN__">
<title>llm-council: label pairs</title>
<style>
  body { font-family: system-ui, sans-serif; margin: 1.5rem; color: #222; }
  #progress { font-weight: 600; margin-bottom: 0.5rem; }
  #prompt { background: #f4f4f4; padding: 0.75rem; border-radius: 6px; white-space: pre-wrap; }
  .answers { display: grid; grid-template-columns: 1fr 1fr; gap: 1rem; margin: 1rem 0; }
  .answer { border: 1px solid #ccc; border-radius: 6px; padding: 0.75rem; white-space: pre-wrap;
            max-height: 55vh; overflow: auto; }
  .answer h2 { margin-top: 0; font-size: 1rem; }
  button { font-size: 1rem; padding: 0.4rem 1rem; margin-right: 0.5rem; }
  textarea { width: 100%; height: 3rem; }
  kbd { border: 1px solid #aaa; border-radius: 3px; padding: 0 0.3rem; font-size: 0.85rem; }
  #status { color: #2a6; margin-left: 0.5rem; }
</style>
</head>
<body>
<div id="progress">loading...</div>
<div id="work">
  <div id="prompt"></div>
  <div class="answers">
    <div class="answer"><h2>Answer A</h2><div id="left"></div></div>
    <div class="answer"><h2>Answer B</h2><div id="right"></div></div>
  </div>
  <label for="reason">Reason (optional)</label>
  <textarea id="reason"></textarea>
  <p>
    <button id="choose-left">A is better <kbd>a</kbd></button>
    <button id="choose-tie">Tie <kbd>t</kbd></button>
    <button id="choose-right">B is better <kbd>b</kbd></button>
    <span id="status"></span>
  </p>
  <p>Judge substance (correctness, completeness, usefulness); length and formatting are not merits.
     Keys work when the reason box is not focused; <kbd>Esc</kbd> leaves it.</p>
</div>
<div id="done" hidden>All pairs are labelled. You can close this page.</div>
<script>
const TOKEN = document.querySelector('meta[name="label-token"]').content;
let current = null;
let busy = false;
function show(state) {
  const p = state.progress;
  document.getElementById("progress").textContent = p.labelled + " / " + p.total + " labelled";
  current = state.pair;
  if (!current) {
    document.getElementById("work").hidden = true;
    document.getElementById("done").hidden = false;
    return;
  }
  document.getElementById("prompt").textContent = current.prompt;
  document.getElementById("left").textContent = current.left;
  document.getElementById("right").textContent = current.right;
  document.getElementById("reason").value = "";
}
async function refresh() {
  const response = await fetch("/api/state", {headers: {"X-Label-Token": TOKEN}});
  show(await response.json());
}
async function choose(choice) {
  if (!current || busy) return;
  busy = true;
  try {
    const response = await fetch("/api/label", {
      method: "POST",
      headers: {"Content-Type": "application/json", "X-Label-Token": TOKEN},
      body: JSON.stringify({
        id: current.id, choice: choice, reason: document.getElementById("reason").value,
      }),
    });
    const body = await response.json();
    if (!response.ok) {
      document.getElementById("status").textContent = "error: " + body.error;
      return;
    }
    document.getElementById("status").textContent = "saved";
    show(body);
  } finally {
    busy = false;
  }
}
document.getElementById("choose-left").addEventListener("click", () => choose("left"));
document.getElementById("choose-right").addEventListener("click", () => choose("right"));
document.getElementById("choose-tie").addEventListener("click", () => choose("tie"));
document.addEventListener("keydown", (event) => {
  if (event.target.tagName === "TEXTAREA") {
    if (event.key === "Escape") event.target.blur();
    return;
  }
  const keys = {
    a: "left", ArrowLeft: "left", b: "right", ArrowRight: "right", t: "tie", ArrowDown: "tie",
  };
  if (keys[event.key]) { event.preventDefault(); choose(keys[event.key]); }
});
refresh();
</script>
</body>
</html>
"""
