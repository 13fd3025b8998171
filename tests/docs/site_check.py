"""Reads the built documentation site in a real browser engine (Chromium's, as Qt WebEngine
ships it in the PySide6-Addons wheel: the test extra), headless, at a 1,400-pixel window, and
prints what a reader would see wrong, one JSON object per page:

- `wide`: a table, code block or inline code wider than the content column (clipped, or
  scrolled sideways), with the first words of its first row or line;
- `broken`: a word of inline code (a flag, a name) broken across two lines;
- `markdown`: Markdown that leaked into the text: a paragraph that starts with a list marker
  (`- `, `* `, `1. `), a literal backtick, or `**bold**` left as asterisks, outside code;
- `admonition_code`: an admonition titled with code (a docstring line such as
  `Args: those of \\`X\\`` read as a Google-style admonition).

Run as `python tests/docs/site_check.py SITE_DIR [PAGE ...]` in a process of its own
(QT_QPA_PLATFORM=offscreen), away from TensorFlow; tests/docs/test_site.py does.
"""

import json
import sys
from pathlib import Path

WIDTH, HEIGHT = 1400, 900

# Runs in the page: every finding as {kind: [descriptions]}.
FINDINGS = r"""
(() => {
  const article = document.querySelector("article.md-content__inner");
  if (!article) return JSON.stringify({});
  const column = article.getBoundingClientRect();
  const first = (el) => (el.innerText || "").trim().split("\n")[0].slice(0, 60);
  const out = {wide: [], broken: [], markdown: [], admonition_code: []};
  for (const table of article.querySelectorAll("table")) {
    const box = table.getBoundingClientRect();
    const wrap = table.closest(".md-typeset__scrollwrap") || table.parentElement;
    if (box.right > column.right + 1 || wrap.scrollWidth > wrap.clientWidth + 1)
      out.wide.push(`table ${Math.round(box.width)}px in ${Math.round(column.width)}px: ` +
                    first(table.querySelector("tr")));
  }
  for (const code of article.querySelectorAll("pre > code")) {
    if (code.scrollWidth > code.clientWidth + 1)
      out.wide.push(`code ${code.scrollWidth}px in ${code.clientWidth}px: ` + first(code));
  }
  for (const code of article.querySelectorAll("code")) {
    if (code.closest("pre")) continue;
    // A word of it (javascripts/code-words.js spans) or a span without spaces on two lines.
    const words = code.querySelectorAll(".nowrap");
    for (const word of words.length ? words : [code]) {
      if (word.getClientRects().length > 1 && !/\s/.test(word.textContent))
        out.broken.push(word.textContent);
    }
    const right = Math.max(...Array.from(words.length ? words : [code])
      .flatMap((word) => Array.from(word.getClientRects(), (box) => box.right)));
    if (!code.closest("table") && right > column.right + 1)
      out.wide.push("inline code past the column: " + code.textContent.slice(0, 60));
  }
  const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
  for (let node = walker.nextNode(); node; node = walker.nextNode()) {
    if (node.parentElement.closest("code, pre, script, style, .headerlink")) continue;
    const text = node.textContent;
    const leaked = text.match(/`|\*\*[^*\s][^*]*\*\*|__\w[^_]*__/);
    if (leaked)
      out.markdown.push(`literal ${leaked[0].slice(0, 2)} in: ` + text.trim().slice(0, 80));
    // A source line that starts with a list marker, inside a paragraph's text.
    const marker = text.match(/\n\s*[-*+](\s+\S.{0,60}|\s*$)/);
    if (marker) {
      const after = text.slice(marker.index) + (node.nextSibling?.textContent || "");
      out.markdown.push("list marker in a paragraph: " + after.trim().slice(0, 70));
    }
  }
  for (const p of article.querySelectorAll("p")) {
    if (/^\s*([-*+]|\d+\.)\s/.test(p.textContent))
      out.markdown.push("list marker in a paragraph: " + p.textContent.trim().slice(0, 80));
  }
  for (const title of article.querySelectorAll(".admonition-title")) {
    if (title.querySelector("code")) out.admonition_code.push(title.textContent.slice(0, 80));
  }
  for (const kind of Object.keys(out)) if (!out[kind].length) delete out[kind];
  return JSON.stringify(out);
})()
"""


def main(site, pages):
    from PySide6.QtCore import QEventLoop, QUrl
    from PySide6.QtWebEngineWidgets import QWebEngineView
    from PySide6.QtWidgets import QApplication

    app = QApplication([])  # noqa: F841 (Qt needs it alive)
    view = QWebEngineView()
    view.resize(WIDTH, HEIGHT)
    view.show()

    def load(path):
        loop = QEventLoop()
        view.loadFinished.connect(lambda ok: loop.exit(0 if ok else 1))
        view.load(QUrl.fromLocalFile(str(path)))
        failed = loop.exec()
        view.loadFinished.disconnect()
        return not failed

    def run(code):
        out, done = [], QEventLoop()
        view.page().runJavaScript(code, 0, lambda result: (out.append(result), done.quit()))
        done.exec()
        return out[0]

    site = Path(site)
    pages = pages or sorted(p.relative_to(site).as_posix() for p in site.rglob("index.html")
                            if "search" not in p.parts)
    for page in pages:
        if not load(site / page):
            print(json.dumps({"page": page, "error": "did not load"}), flush=True)
            continue
        print(json.dumps({"page": page, **json.loads(run(FINDINGS))}), flush=True)


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2:])
