// Builds ../academy/static/editor.bundle.js (committed). OUTFILE=... writes elsewhere, which is how
// tests/web/test_frontend_bundle.py checks that the committed bundle matches a fresh build.
import { build } from "esbuild";
import { fileURLToPath } from "node:url";
import path from "node:path";

const here = path.dirname(fileURLToPath(import.meta.url));
const outfile = process.env.OUTFILE || path.join(here, "..", "academy", "static", "editor.bundle.js");

await build({
  entryPoints: [path.join(here, "src", "editor.js")],
  bundle: true,
  minify: true,
  format: "iife",
  target: ["es2020"],
  legalComments: "eof",
  outfile,
  logLevel: "warning",
});
console.log(`built ${path.relative(process.cwd(), outfile)}`);
