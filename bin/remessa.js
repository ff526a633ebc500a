#!/usr/bin/env -S node --max-semi-space-size=4
// Thin launcher: the compiled CLI lives in dist/ (built by `npm ci` through the prepare script).
// A 4 MiB semi-space instead of V8's 16 keeps `remessa serve` lean; smaller would promote upload
// chunks to the old generation and cost full collections (docs/decisions.md, "Memory").
import '../dist/src/app/cli/main.js';
