// The copy buttons of the API settings page: each button[data-copy] copies the value of the
// field it names. Without JavaScript the buttons stay hidden and the fields can be selected.
"use strict";
document.addEventListener("DOMContentLoaded", () => {
  const status = document.getElementById("copy-status");
  for (const button of document.querySelectorAll("button[data-copy]")) {
    const field = document.getElementById(button.dataset.copy);
    if (!field || !navigator.clipboard) continue;
    button.hidden = false;
    button.addEventListener("click", async () => {
      try {
        await navigator.clipboard.writeText(field.value);
        status.textContent = status.dataset.copied;
      } catch {
        field.select();
        status.textContent = status.dataset.failed;
      }
    });
  }
});
