import assert from "node:assert/strict";
import { createRequire } from "node:module";
import { join } from "node:path";
import { test } from "node:test";

const require = createRequire(__filename);
// out/test/x.js → ../../media/markdown.js
const md = require(join(__dirname, "..", "..", "media", "markdown.js")) as {
  render(text: string): string;
  escapeHtml(text: string): string;
};

test("HTML in the text is escaped, never passed through", () => {
  const html = md.render('<img src=x onerror="alert(1)"> <script>alert(2)</script>');
  assert.ok(!html.includes("<img"));
  assert.ok(!html.includes("<script"));
  assert.ok(html.includes("&lt;img src=x onerror=&quot;alert(1)&quot;&gt;"));
});

test("javascript: links lose their link; http links keep it, escaped", () => {
  assert.equal(md.render("[x](javascript:alert(1))"), "<p>x</p>");
  const html = md.render('[docs](https://example.com/?a=1&b="2")');
  assert.ok(html.includes('<a href="https://example.com/?a=1&amp;b=&quot;2&quot;"'));
});

test("code fences keep their text verbatim (escaped), even unclosed while streaming", () => {
  const html = md.render("before\n```python\nif a < b: print('**x**')\n```\nafter");
  assert.ok(html.includes('<pre data-lang="python"><code>if a &lt; b: print(&#39;**x**&#39;)</code></pre>'));
  assert.ok(html.startsWith("<p>before</p>") && html.endsWith("<p>after</p>"));
  assert.ok(md.render("```\npartial <b>").includes("<code>partial &lt;b&gt;</code>"));
});

test("inline markup, lists, headings, quotes", () => {
  assert.equal(md.render("**bold** and *it* and `a<b`"), "<p><strong>bold</strong> and <em>it</em> and <code>a&lt;b</code></p>");
  assert.equal(md.render("- one\n- two\n\n1. first"), "<ul><li>one</li><li>two</li></ul><ol><li>first</li></ol>");
  assert.equal(md.render("# Title"), "<h3>Title</h3>");
  assert.equal(md.render("> quoted"), "<blockquote><p>quoted</p></blockquote>");
  assert.equal(md.render("`**not bold**`"), "<p><code>**not bold**</code></p>");
});
