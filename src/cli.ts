#!/usr/bin/env node
import './runtime-check.js';
// Not a named import: Node 20 lacks enableCompileCache, and a missing named export fails the
// whole entry before runtime-check could say which Node to use.
import nodeModule from 'node:module';

// Each command is a process of its own that loads the same code: compiled once and cached on disk
// (in the system's temporary folder), it loads faster from the second command on.
nodeModule.enableCompileCache();
await import('./cli-run.js');
