// Bundles the extension (dist/extension.js) and, with --tests, the unit tests
// (out/test/*.test.js, run by `node --test out/test/`), with esbuild.
import { build } from "esbuild";
import { readdirSync, rmSync } from "node:fs";
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
