// Bundles the extension (dist/extension.js), minifies the chat page's scripts and CSS
// (dist/media/, inlined into the page by chatView.ts: half the bytes to the webview) and,
// with --tests, the unit tests (out/test/*.test.js, run by `node --test out/test/`), with esbuild.
import { build, transform } from "esbuild";
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const production = process.argv.includes("--production");
const tests = process.argv.includes("--tests");

const common = {
  bundle: true,
  platform: "node",
  format: "cjs",
  target: "node20",
  sourcemap: production ? false : "linked",
  logLevel: "warning",
};

await build({
  ...common,
  entryPoints: [join(root, "src", "extension.ts")],
  outfile: join(root, "dist", "extension.js"),
  external: ["vscode"],
  minify: production,
});

mkdirSync(join(root, "dist", "media"), { recursive: true });
for (const name of readdirSync(join(root, "media")).filter((n) => /\.(js|css)$/.test(n))) {
  const source = readFileSync(join(root, "media", name), "utf8");
  const loader = name.endsWith(".css") ? "css" : "js";
  const { code } = await transform(source, { loader, minify: true, target: loader === "js" ? "es2020" : undefined });
  writeFileSync(join(root, "dist", "media", name), code);
}

if (tests) {
  rmSync(join(root, "out"), { recursive: true, force: true });
  const entries = readdirSync(join(root, "test"))
    .filter((name) => name.endsWith(".test.ts"))
    .map((name) => join(root, "test", name));
  await build({
    ...common,
    entryPoints: entries,
    outdir: join(root, "out", "test"),
    // The tested modules never import "vscode": their editor side is injected.
    external: ["vscode"],
  });
}
