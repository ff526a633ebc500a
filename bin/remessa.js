#!/usr/bin/env -S node --max-semi-space-size=1
// Thin launcher: the compiled CLI lives in dist/ (built by `npm ci` through the prepare script).
// The flag keeps V8's young generation small so the short-lived buffers of a transfer are
// collected sooner and the server's memory stays flat while files stream (docs/benchmarks.md);
// `npm start` passes the same flag.
import '../dist/src/cli.js';
