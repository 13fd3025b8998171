// Each word of an inline code span in a span.nowrap (docs/stylesheets/extra.css), so that a
// line breaks only between words: `--sequence_length` stays whole, `pip install x` may wrap,
// and a long path, URL or list of values may also break after a "/" or a "," (a <wbr>
// there). The text is unchanged: copying a flag copies it as written.
function nowrap(text) {
  const span = document.createElement("span");
  span.className = "nowrap";
  span.textContent = text;
  return span;
}

document.addEventListener("DOMContentLoaded", () => {
  for (const code of document.querySelectorAll(".md-typeset code")) {
    if (code.closest("pre") || code.children.length) continue;
    const words = code.textContent.split(/(\s+)/);
    if (words.length < 2 && !/[-/.]/.test(code.textContent)) continue;
    code.replaceChildren(...words.flatMap((word) => {
      if (/^\s*$/.test(word)) return [document.createTextNode(word)];
      if (word.length <= 30 || !/[/,]/.test(word)) return [nowrap(word)];
      const parts = word.split(/(?<=[/,])/);
      return parts.flatMap((part, i) => (i ? [document.createElement("wbr"), nowrap(part)]
                                           : [nowrap(part)]));
    }));
  }
});
