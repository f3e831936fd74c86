#!/usr/bin/env node
import './runtime-check.js';
import { enableCompileCache } from 'node:module';

// Each command is a process of its own that loads the same code: compiled once and cached on disk
// (in the system's temporary folder), it loads faster from the second command on.
enableCompileCache();
await import('./cli-run.js');
