// The recipe editor's gutter (reviews/templates/reviews/editor.html).
(function () {
  // The gutter numbers the textarea's lines and marks the ones the last check complained about.
  const text = document.getElementById("recipe-text");
  const gutter = document.getElementById("gutter");
  function marked(attribute) {
    const found = {};
    document.querySelectorAll("#validation [" + attribute + "]").forEach(function (a) {
      const n = a.getAttribute(attribute);
      found[n] = (found[n] ? found[n] + "\n" : "") + a.dataset.message;
    });
    return found;
  }
  function paint() {
    const bad = marked("data-line"), warned = marked("data-warn-line"), count = text.value.split("\n").length;
    gutter.replaceChildren();
    for (let n = 1; n <= count; n++) {
      const line = document.createElement("span");
      line.textContent = n;
      if (bad[n]) { line.className = "bad"; line.title = bad[n]; }
      else if (warned[n]) { line.className = "warned"; line.title = warned[n]; }
      gutter.appendChild(line);
    }
    gutter.scrollTop = text.scrollTop;
  }
  function jump(n) {
    const lines = text.value.split("\n");
    let start = 0;
    for (let i = 0; i < n - 1 && i < lines.length; i++) start += lines[i].length + 1;
    text.focus();
    text.setSelectionRange(start, start + (lines[n - 1] || "").length);
    text.scrollTop = Math.max(0, (n - 4) * (text.scrollHeight / Math.max(lines.length, 1)));
  }
  text.addEventListener("input", paint);
  text.addEventListener("scroll", function () { gutter.scrollTop = text.scrollTop; });
  document.body.addEventListener("htmx:afterSwap", paint);
  document.addEventListener("click", function (event) {
    const link = event.target.closest("#validation [data-line], #validation [data-warn-line]");
    if (link) { event.preventDefault(); jump(+(link.dataset.line || link.dataset.warnLine)); }
  });
  paint();
})();
