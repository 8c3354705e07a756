// Builds the console's page into ../static (shipped in the wheel as package data).
import { defineConfig } from "vite";

export default defineConfig({
  esbuild: { jsx: "automatic", jsxImportSource: "preact" },
  build: {
    outDir: "../static",
    emptyOutDir: true,
    assetsDir: "assets",
    // stable names: the built files are committed, so a rebuild of the same source is no diff
    rollupOptions: { output: { entryFileNames: "assets/console.js", assetFileNames: "assets/[name][extname]" } },
  },
});
